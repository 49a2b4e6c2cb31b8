"""Issue #48, blocking and ``skrisk match`` outputs: identical records, blocks too large to pair,
crafted blocking and LearnRisk entries of a model file, and one run's outputs together or not at all."""

from __future__ import annotations

import errno
import io
import itertools
import json
import os
import time
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from skrisk.cli import main
from skrisk.data import block
from skrisk.exceptions import DataError
from skrisk.matching import load_model, match
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk._fileio import FolderLock

from _match_fixtures import dedup_model, febrl_split  # noqa: F401 - fixtures


@pytest.fixture(scope="module")
def token_model(dedup_model):  # noqa: F811
    """The dedup model with the default blocking (one tokens rule over every attribute)."""
    return replace(dedup_model, blocking=None)


def _csv(path: Path, frame: pd.DataFrame) -> Path:
    frame.rename_axis("id").reset_index().to_csv(path, index=False)
    return path


def _run(capsys, *args: object) -> tuple[int, str, str]:
    code = main(["match", "--no-progress", *map(str, args)])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _mix(new: pd.DataFrame, n_same: int, n_normal: int = 120) -> pd.DataFrame:
    same = pd.DataFrame([new.iloc[0].to_dict()] * n_same, index=[f"same{i}" for i in range(n_same)])
    return pd.concat([new.iloc[1:n_normal + 1], same])


# ---------------------------------------------------------------------------- item 2: identical records
def test_identical_records_form_one_entity(token_model, febrl_split, tmp_path, capsys):  # noqa: F811
    """120 records and 3,000 identical ones: the 3,000 are one entity, from 2,999 scored pairs (each
    with the first of them), not 3,000 one-record entities."""
    _, new, _ = febrl_split
    model = token_model.save(tmp_path / "model.skrisk")
    left = _csv(tmp_path / "mix.csv", _mix(new, 3000))
    code, out, err = _run(capsys, "--model", model, "--left", left, "--out", tmp_path / "out")
    assert code == 0, err
    ent = pd.read_csv(tmp_path / "out" / "entities.csv", dtype=str)
    same = ent[ent["record_id"].str.startswith("same")]
    assert len(same) == 3000 and same["entity_id"].nunique() == 1
    m = pd.read_csv(tmp_path / "out" / "matches.csv", dtype=str)
    pairs = m[m["left_id"].str.startswith("same") & m["right_id"].str.startswith("same")]
    assert len(pairs) == 2999  # linear in the group: each member with the group's first record
    assert "identical records" in out


def test_identical_records_across_two_tables_are_candidates():
    """Linkage: identical records of the two tables (after normalisation) are all paired across,
    linearly in the groups' sizes (a rule alone keeps each record's top 10 only)."""
    rng = np.random.default_rng(0)
    names = [f"{a} {b}" for a, b in zip(rng.choice(["ann", "bob", "cy", "di"], 100), rng.integers(0, 10**6, 100))]
    left = pd.DataFrame({"name": names[:60] + ["john smith"] * 400}, index=[f"a{i}" for i in range(460)])
    right = pd.DataFrame({"name": names[40:] + ["John Smith "] * 300}, index=[f"b{i}" for i in range(360)])
    res = block(left, right, ("tokens", "name"), identical=True)
    p = res.pairs
    js_l, js_r = set(left.index[60:]), set(right.index[60:])
    both = p[p["left_id"].isin(js_l) & p["right_id"].isin(js_r)]
    assert set(both["left_id"]) == js_l and set(both["right_id"]) == js_r  # everyone paired across
    assert len(both) == 400 + 300 - 1  # the heads, and each member with the other side's head
    assert res.rule_sizes["identical records"] == 699 + 20  # and the 20 names both tables hold


# ---------------------------------------------------------------------------- item 12: a million identical rows
def test_many_identical_rows_are_matched_not_refused(token_model, febrl_split):  # noqa: F811
    """Identical rows share only too-frequent tokens: they are still candidates (before: "no candidate
    pair: loosen the blocking", a fix that cannot help)."""
    _, new, _ = febrl_split
    rows = pd.DataFrame([new.iloc[0].to_dict()] * 20_000, index=[f"r{i}" for i in range(20_000)])
    res = match(token_model, rows, progress=False, chunk_size=20_000)
    assert res.n_candidates == 19_999
    assert res.entities.n_entities == 1


def test_a_no_candidate_message_names_a_fix_that_helps(token_model, febrl_split, tmp_path, capsys):  # noqa: F811
    """Records that share no postcode: the message says so and points to another rule, and that rule works."""
    _, new, _ = febrl_split
    table = new.iloc[:200].copy()
    table["postcode"] = [f"{i:05d}" for i in range(200)]
    left = _csv(tmp_path / "t.csv", table)
    model = token_model.save(tmp_path / "model.skrisk")
    code, _, err = _run(capsys, "--model", model, "--left", left, "--out", tmp_path / "o",
                        "--blocking", "standard", "--block-on", "postcode")
    assert code == 2 and "no two records have the same values" in err and "--blocking tokens" in err
    assert "loosen the blocking" not in err and not (tmp_path / "o").exists()
    code, _, err = _run(capsys, "--model", model, "--left", left, "--out", tmp_path / "o", "--blocking", "tokens")
    assert code == 0, err


# ---------------------------------------------------------------------------- item 11: blocks too large
def test_a_standard_block_too_large_is_refused_naming_it_before_any_pair():
    """One million rows with one name: refused at once, naming the block, its size and how to split it
    (before: a numpy "7.28 TiB" allocation traceback)."""
    n = 1_000_000
    big = pd.DataFrame({"name": ["john"] * n, "city": np.arange(n).astype(str)}, index=np.arange(n).astype(str))
    t0 = time.perf_counter()
    with pytest.raises(DataError) as e:
        block(big, None, ("standard", "name"))
    msg = str(e.value)
    assert "499,999,500,000 candidate pairs" in msg and "name = 'john'" in msg and f"{n} records" in msg
    assert "--block-on name,OTHER" in msg and "max_pairs" in msg
    with pytest.raises(DataError, match="sort on a more varied column"):
        block(big, None, ("sorted_neighbourhood", "name"))
    assert time.perf_counter() - t0 < 60


def test_standard_block_counts_equal_the_pairs_made():
    """The count behind the bound is exact: a rule allowed exactly its number of pairs makes them."""
    rng = np.random.default_rng(1)
    t = pd.DataFrame({"k": rng.choice(list("abcde"), 300), "j": rng.choice(list("xy"), 300)},
                     index=[f"r{i}" for i in range(300)])
    u = t.sample(200, random_state=0).rename(lambda i: "u" + i)
    for rule in (("standard", "k"), ("standard", ["k", "j"]), ("sorted_neighbourhood", "k", {"window": 3})):
        for right in (None, u):
            n = len(block(t, right, rule).pairs)
            params = {**(rule[2] if len(rule) == 3 else {}), "max_pairs": n}
            assert len(block(t, right, (rule[0], rule[1], params)).pairs) == n
            with pytest.raises(DataError, match="a rule may make"):
                block(t, right, (rule[0], rule[1], {**params, "max_pairs": n - 1}))


def test_skrisk_match_refuses_a_block_too_large_and_takes_the_split(token_model, febrl_split, tmp_path, capsys):  # noqa: F811
    _, new, _ = febrl_split
    table = pd.concat([new.iloc[:1]] * 2000)
    table.index = [f"r{i}" for i in range(2000)]
    table["given_name"] = [f"name{i % 40}" for i in range(2000)]  # one surname, 2,000 different records
    table["date_of_birth"] = [f"{19000101 + i}" for i in range(2000)]
    left = _csv(tmp_path / "t.csv", table)
    model = token_model.save(tmp_path / "model.skrisk")
    code, _, err = _run(capsys, "--model", model, "--left", left, "--out", tmp_path / "o", "--blocking", "standard",
                        "--block-on", "surname", "--block-max-pairs", "100000")
    assert code == 2 and "1,999,000 candidate pairs" in err and f"surname = {table['surname'].iloc[0]!r}" in err
    assert "2000 records" in err and not (tmp_path / "o").exists()
    code, _, err = _run(capsys, "--model", model, "--left", left, "--out", tmp_path / "o", "--blocking", "standard",
                        "--block-on", "surname,given_name", "--block-max-pairs", "100000")
    assert code == 0, err


# ---------------------------------------------------------------------------- item 15: crafted model entries
def _rewrite(src: Path, dst: Path, *, meta=None, schema=None) -> Path:
    """A copy of a model file with ``meta(model_json)`` and ``schema(skops_schema)`` applied."""
    with zipfile.ZipFile(src) as z:
        entries = {n: z.read(n) for n in z.namelist()}
    if meta is not None:
        data = json.loads(entries["model.json"])
        meta(data)
        entries["model.json"] = json.dumps(data).encode()
    if schema is not None:
        with zipfile.ZipFile(io.BytesIO(entries["estimators.skops"])) as z:
            inner = {n: z.read(n) for n in z.namelist()}
        data = json.loads(inner["schema.json"])
        schema(data)
        inner["schema.json"] = json.dumps(data).encode()
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            for n, b in inner.items():
                z.writestr(n, b)
        entries["estimators.skops"] = buf.getvalue()
    with zipfile.ZipFile(dst, "w") as z:
        for n, b in entries.items():
            z.writestr(n, b)
    return dst


def _fresh_ids(node, ids=itertools.count(10**12)):
    """Give every node under ``node`` a new skops id, so that the edited copy is loaded as written
    (skops shares the objects of equal ids)."""
    if isinstance(node, dict):
        if "__id__" in node:
            node["__id__"] = next(ids)
        for v in node.values():
            _fresh_ids(v, ids)
    elif isinstance(node, list):
        for v in node:
            _fresh_ids(v, ids)


def _learnrisk(schema):
    return schema["content"]["risk_model"]["content"]["content"]


def _edit_rule_feature(which: str, value: int):
    def edit(schema):
        lr = _learnrisk(schema)
        rules = lr["rules_"] if which == "reported" else lr["risk_model_"]["content"]["content"]["rules_"]
        _fresh_ids(rules)
        cond = rules["content"][0]["content"]["content"]["conditions"]["content"][0]
        cond["content"]["content"]["feature"]["content"] = json.dumps(value)
    return edit


def _edit_estimator(key: str, value):
    def edit(schema):
        node = _learnrisk(schema)["risk_model_"]["content"]["content"][key]
        node["content"] = json.dumps(value)
        node["__id__"] = 10**13 + len(key)
    return edit


@pytest.fixture(scope="module")
def saved_model(token_model, tmp_path_factory):
    assert token_model.risk_model.rules_, "the fixture's LearnRisk must hold rules"
    return token_model.save(tmp_path_factory.mktemp("m") / "model.skrisk")


@pytest.mark.parametrize("which, value, fragment", [
    ("reported", 1_000_000, "differs from rule 0 of its risk model"),
    ("reported", -3, "differs from rule 0 of its risk model"),
    ("scored", 1_000_000, "reads feature 1000000, not an index in [0, 42)"),
    ("scored", -3, "reads feature -3"),
])
def test_learnrisk_rule_features_out_of_range_are_refused(saved_model, febrl_split, tmp_path, capsys,  # noqa: F811
                                                          which, value, fragment):
    _, new, _ = febrl_split
    bad = _rewrite(saved_model, tmp_path / "bad.skrisk", schema=_edit_rule_feature(which, value))
    left = _csv(tmp_path / "t.csv", new.iloc[:100])
    code, _, err = _run(capsys, "--model", bad, "--left", left, "--out", tmp_path / "o", "--reasons")
    assert code == 2 and "bad.skrisk" in err and "rules_[0]" in err and fragment in err, err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("key, value, fragment", [
    ("n_bins", 10**15, "n_bins is 1000000000000000, not an int in [1, 1000000]"),
    ("theta", 7.5, "theta is 7.5, not a number in (0.5, 1)"),
    ("proba_index_", 99, "proba_index_ is 99, not a column index in [0, 43)"),
    ("n_features_in_", 5, "n_features_in_ is 5"),
])
def test_learnrisk_numbers_out_of_range_are_refused(saved_model, tmp_path, key, value, fragment):
    bad = _rewrite(saved_model, tmp_path / "bad.skrisk", schema=_edit_estimator(key, value))
    with pytest.raises(DataError) as e:
        load_model(bad)
    assert "bad.skrisk" in str(e.value) and fragment in str(e.value)


@pytest.mark.parametrize("rule, fragment", [
    ({"method": "tokens", "columns": None, "params": {"top_k": 10**15}}, "top_k must be a positive int at most 1000"),
    ({"method": "tokens", "columns": None, "params": {"top_k": 1e15}}, "top_k must be a positive int"),
    ({"method": "tokens", "columns": None, "params": {"min_similarity": "abc"}}, "min_similarity must be a number"),
    ({"method": "tokens", "columns": None, "params": {"budget": -1}}, "budget must be a positive number"),
    ({"method": "standard", "columns": ["surname"], "params": {"max_pairs": 0}}, "max_pairs must be None or a positive"),
    ({"method": "sorted_neighbourhood", "columns": ["surname"], "params": {"window": 10**9 + 1}}, "window must be"),
    ({"method": "sorted_neighbourhood", "columns": ["surname", "suburb"], "params": {}}, "sorts on one column"),
    ({"method": "fuzzy", "columns": None, "params": {}}, "Unknown blocking method 'fuzzy'"),
    ({"method": "standard", "columns": ["phone"], "params": {}}, "names the columns ['phone']"),
    ({"method": "standard", "columns": [], "params": {}}, "bad columns"),
])
def test_blocking_entries_of_a_model_file_are_checked_at_load(saved_model, tmp_path, rule, fragment):
    bad = _rewrite(saved_model, tmp_path / "bad.skrisk", meta=lambda m: m.__setitem__("blocking", [rule]))
    with pytest.raises(DataError) as e:
        load_model(bad)
    assert "bad.skrisk" in str(e.value) and "model.json" in str(e.value) and fragment in str(e.value)


# ---------------------------------------------------------------------------- item 3: outputs together
@pytest.fixture
def first_run(saved_model, febrl_split, tmp_path, capsys):  # noqa: F811
    _, new, _ = febrl_split
    left = _csv(tmp_path / "t.csv", new.iloc[:150])
    other = _csv(tmp_path / "u.csv", new.iloc[150:300])
    out = tmp_path / "out"
    code, _, err = _run(capsys, "--model", saved_model, "--left", left, "--out", out)
    assert code == 0, err
    return out, other, {n: (out / n).read_bytes() for n in ("matches.csv", "entities.csv")}


def _files(out: Path) -> dict[str, bytes]:
    return {n: (out / n).read_bytes() for n in ("matches.csv", "entities.csv")}


def test_a_second_run_into_a_used_out_folder_is_refused(saved_model, first_run, capsys):
    out, other, before = first_run
    with FolderLock(out, what="test"):  # another run holds the folder
        code, _, err = _run(capsys, "--model", saved_model, "--left", other, "--out", out)
    assert code == 2 and "in use by pid" in err and "another --out" in err
    assert _files(out) == before


@pytest.mark.skipif(not (os.path.isdir("/proc/self/fd") and os.path.exists("/dev/full")),
                    reason="needs /proc to tell the files apart and /dev/full")
def test_a_full_disk_between_the_two_files_keeps_the_previous_run(saved_model, first_run, capsys, monkeypatch):
    out, other, before = first_run
    real_fdopen, calls = os.fdopen, []

    def fdopen(fd, mode="r", *a, **k):
        path = os.readlink(f"/proc/self/fd/{fd}")
        calls.append(path)
        if ".entities.csv." not in path:
            return real_fdopen(fd, mode, *a, **k)
        os.close(fd)
        return open("/dev/full", "wb", buffering=0)  # the disk fills up at the second file: a real ENOSPC

    monkeypatch.setattr(os, "fdopen", fdopen)
    code, _, err = _run(capsys, "--model", saved_model, "--left", other, "--out", out)
    monkeypatch.undo()
    assert code == 2 and "No space left" in err and str(out / "entities.csv") in err and "as they were" in err
    assert _files(out) == before
    assert any(".matches.csv." in c for c in calls)  # matches.csv was written first, then held back
    assert sorted(p.name for p in out.iterdir()) == [".skrisk.lock", "entities.csv", "index.json", "index_records.npz",
                                                   "matches.csv"]  # a dedup run writes its index too


def test_a_run_killed_while_moving_its_outputs_is_completed_by_the_next(saved_model, first_run, capsys, monkeypatch):
    out, other, before = first_run
    real_replace, calls = os.replace, []

    def replace_(src, dst):
        calls.append(dst)
        if Path(dst).name == "entities.csv" and Path(dst).parent == out:
            raise KeyboardInterrupt  # killed after matches.csv was moved into place
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace_)
    assert _run(capsys, "--model", saved_model, "--left", other, "--out", out)[0] == 130
    monkeypatch.undo()
    half = _files(out)
    assert half["matches.csv"] != before["matches.csv"] and half["entities.csv"] == before["entities.csv"]
    # the next command into the folder (even one refused for its input) completes the killed run's set
    code, _, _ = _run(capsys, "--model", saved_model, "--left", out / "nope.csv", "--out", out)
    assert code == 2
    after = _files(out)
    assert after["matches.csv"] == half["matches.csv"] and after["entities.csv"] != before["entities.csv"]
    ids = set(pd.read_csv(other, dtype=str)["id"])
    assert set(pd.read_csv(out / "entities.csv", dtype=str)["record_id"]) == ids  # both of the second run
    assert sorted(p.name for p in out.iterdir()) == [".skrisk.lock", "entities.csv", "index.json", "index_records.npz",
                                                   "matches.csv"]  # a dedup run writes its index too


# ---------------------------------------------------------------------------- item 13: --out a symlink
def test_out_as_a_link_to_a_folder_is_followed_and_a_dangling_link_refused(saved_model, febrl_split, tmp_path,  # noqa: F811
                                                                            capsys):
    _, new, _ = febrl_split
    left = _csv(tmp_path / "t.csv", new.iloc[:100])
    real = tmp_path / "elsewhere"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    code, out, err = _run(capsys, "--model", saved_model, "--left", left, "--out", tmp_path / "link")
    assert code == 0, err
    assert (real / "matches.csv").is_file() and (real / "entities.csv").is_file()
    assert (tmp_path / "link").is_symlink()  # the link itself is kept
    (tmp_path / "dangling").symlink_to(tmp_path / "missing")
    code, _, err = _run(capsys, "--model", saved_model, "--left", left, "--out", tmp_path / "dangling")
    assert code == 2 and "is a symbolic link to" in err and "missing" in err and "create that folder" in err
    assert not (tmp_path / "missing").exists()
    (real / "matches.csv").unlink()
    (real / "matches.csv").symlink_to(tmp_path / "t.csv")  # a link inside the folder is still refused
    before = (tmp_path / "t.csv").read_bytes()
    code, _, err = _run(capsys, "--model", saved_model, "--left", left, "--out", tmp_path / "link")
    assert code == 2 and "symbolic link" in err and (tmp_path / "t.csv").read_bytes() == before
