"""``skrisk label --table``: deduplicating one table end to end, with the blocking options."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from skrisk.cli import main
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.data._febrl import febrl_entity
from skrisk.datasets import load_febrl
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.labelling._journal import read_events, replay

from .conftest import current_pair


@pytest.fixture(scope="module")
def people_csv(tmp_path_factory):
    """80 FEBRL1 person records (40 people, each twice) as one CSV table with an id column."""
    table = load_febrl(dataset="febrl1").left
    ent = table.index.map(febrl_entity)
    keep = sorted(set(ent))[:40]
    sub = table[ent.isin(keep)].reset_index()
    path = tmp_path_factory.mktemp("people") / "people.csv"
    sub.to_csv(path, index=False)
    return path


def _oracle_run(monkeypatch, capsys, argv, n_answers):
    """Run ``skrisk label`` answering ``n_answers`` questions from the FEBRL truth, then quit."""
    seen = []
    out_parts, err_parts = [], []

    def fake_input(prompt):
        cap = capsys.readouterr()
        text = cap.out
        out_parts.append(text)
        err_parts.append(cap.err)
        if len(seen) >= n_answers:
            return "q"
        a, b = current_pair(text)
        seen.append((a, b))
        return "y" if febrl_entity(a) == febrl_entity(b) else "n"

    monkeypatch.setattr("builtins.input", fake_input)
    rc = main(argv)
    cap = capsys.readouterr()
    return rc, "".join(out_parts) + cap.out, "".join(err_parts) + cap.err, seen


def test_label_table_end_to_end(people_csv, tmp_path, monkeypatch, capsys):
    session = tmp_path / "s"
    argv = ["label", "--table", str(people_csv), "--session", str(session), "--block-on", "given_name,surname",
            "--block-top-k", "3", "--batch", "4", "--initial", "4"]
    rc, out, err, seen = _oracle_run(monkeypatch, capsys, argv, 12)
    assert rc == 0, err
    # the blocking report: how many candidates, and that completeness needs labels
    assert "Blocking (tokens:given_name+surname) within one table:" in out
    assert "pair completeness (the share of true matches kept) cannot be known without labels" in out
    assert "among the 80 records of one table (each pair once)" in out
    manifest = json.loads((session / "session.json").read_text())
    assert manifest["task"] == "dedup" and set(manifest["inputs"]) == {"table", "pairs"}
    assert manifest["blocking"] == [{"method": "tokens", "columns": ["given_name", "surname"], "params": {"top_k": 3}}]
    cand = pd.read_csv(session / "candidates.csv", dtype=str)
    keys = list(zip(cand["left_id"], cand["right_id"]))
    assert all(a < b for a, b in keys) and len(set(keys)) == len(keys)
    n_cand = len(keys)
    assert f"{n_cand} candidate pairs" in out
    # every question once, in canonical order, never a record with itself
    assert len(seen) == 12 and len(set(seen)) == 12 and all(a < b for a, b in seen)
    # resume: new questions only, never a mirrored repeat
    rc, out2, err, seen2 = _oracle_run(monkeypatch, capsys, ["label", "--session", str(session)], 6)
    assert rc == 0, err
    both = seen + seen2
    assert len({frozenset(k) for k in both}) == len(both) == 18
    state = replay(read_events(session / "journal.jsonl"))
    assert len(state.answers) == 18
    labels = pd.read_csv(session / "labels.csv", dtype=str, keep_default_na=False)
    lk = list(zip(labels["left_id"], labels["right_id"]))
    assert len(lk) == 18 and len({frozenset(k) for k in lk}) == 18 and all(a < b for a, b in lk)
    assert {"left_given_name", "right_given_name"} <= set(labels.columns)
    pred = pd.read_csv(session / "predicted_matches.csv", dtype=str)
    pk = list(zip(pred["left_id"], pred["right_id"]))
    assert len({frozenset(k) for k in pk}) == len(pk) and all(a < b for a, b in pk) and set(pk) <= set(keys)
    # the predicted matches of this easy task are mostly true
    true = sum(febrl_entity(a) == febrl_entity(b) for a, b in pk)
    assert len(pk) >= 10 and true / len(pk) > 0.8


def test_label_table_standard_blocking_and_stored_options(people_csv, tmp_path, monkeypatch, capsys):
    session = tmp_path / "s"
    argv = ["label", "--table", str(people_csv), "--session", str(session), "--blocking", "standard",
            "--block-on", "postcode"]
    rc, out, err, seen = _oracle_run(monkeypatch, capsys, argv, 2)
    assert rc == 0, err
    table = pd.read_csv(people_csv, dtype=str).set_index("id")
    groups = table.groupby("postcode").size()
    assert f"{int((groups * (groups - 1) // 2).sum())} candidate pairs" in out
    # options fixed at the start are noted, not silently applied, on resume
    rc, out, err, _ = _oracle_run(monkeypatch, capsys, ["label", "--session", str(session), "--block-top-k", "5"], 0)
    assert rc == 0 and "--block-top-k is fixed when a session starts" in err


def _catalogue(path):
    """A product catalogue to deduplicate whose most similar pairs on average are not matches.

    Twelve product lines of five variants each share one long templated description and differ only
    in the model number (different products); eight products are listed twice, under the same name
    with another shop's short description (the duplicates). By the mean of the similarity features
    the variants come first; the duplicates lead on the name's own features.
    """
    rows, truth = [], set()
    for line in range(12):
        desc = (f"brand{line} flagship series {line} with advanced panel, dual speakers, remote control, "
                f"wall mount kit and two year warranty for the living room")
        for v in range(5):
            rows.append({"id": f"p{line:02d}{v}", "name": f"brand{line} series{line} model {100 * v + 7 * line}",
                         "description": desc})
    for d in range(8):
        name = f"gadget{d} pro {d * 13 + 5}x"
        rows.append({"id": f"g{d}a", "name": name, "description": f"compact gadget number {d} in black"})
        rows.append({"id": f"g{d}b", "name": name, "description": f"ships in {d + 2} days, boxed, retail {d} edition"})
        truth.add((f"g{d}a", f"g{d}b"))
    pd.DataFrame(rows).to_csv(path, index=False)
    return path, truth


def test_starting_pairs_find_a_match_when_the_most_similar_pairs_are_not_matches(tmp_path):
    import io

    from skrisk.labelling import LabellingSession, SessionConfig

    table, truth = _catalogue(tmp_path / "catalogue.csv")
    session = LabellingSession.open(tmp_path / "s", table=table, config=SessionConfig(seed=0, n_initial=6),
                                    out=io.StringIO())
    try:
        asked = []
        while not any(k in truth for k in asked) and len(asked) < 60:
            q = session.next_question()
            key = (q.left_id, q.right_id)
            asked.append(key)
            session.answer(key, "yes" if key in truth else "no")
        # the 120 variant pairs are the most similar on average; after the first 6 starting pairs found
        # no match the session asks the pairs most similar on one feature each, and finds one at once
        assert any(k in truth for k in asked) and len(asked) <= 10, asked
        first_yes = next(i for i, k in enumerate(asked) if k in truth)
        item = session.state.items[asked[first_yes]]
        assert "the most similar on" in item["explanation"] and "name" in item["explanation"]
        # the first round's starting pairs are still the most (and least) similar on average
        assert asked[0][0][0] == asked[0][1][0] == "p" and asked[2][0][0] == asked[2][1][0] == "p"
    finally:
        session.close()
