"""Incremental matching: ``skrisk match --entities PREVIOUS`` and ``match(model, new, entities=...)``
on a generated person table, with a model trained on part of it."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from skrisk import LearnRisk
from skrisk.cli import main
from skrisk.data import PairDataset, SimilarityFeatures, block
from skrisk.datasets import make_person_table
from skrisk.exceptions import DataError
from skrisk.matchers import FeatureMatcher
from skrisk.matching import MatchModel, load_model, match

# internal on purpose: the index file's reader and its checks
from skrisk.matching._index_file import read_records

RULES = [("standard", "postcode"), ("standard", "date_of_birth"), ("standard", ["given_name", "surname"])]
N_KNOWN, N_A = 1000, 250


def read_csv_export(path) -> pd.DataFrame:
    """A CSV file skrisk wrote, every cell a str (ids and numbers here: no spreadsheet mark)."""
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _train(table: pd.DataFrame, links: pd.DataFrame, rules: list, task: str = "dedup",
           types: dict | None = None) -> MatchModel:
    pairs = block(table, None, rules).pairs
    true = set(map(tuple, links.to_numpy()))
    pairs["label"] = [int((a, b) in true or (b, a) in true) for a, b in zip(pairs["left_id"], pairs["right_id"])]
    ds = PairDataset.from_table(table, pairs, split="train", name="persons")
    sf = SimilarityFeatures(types=types).fit(ds.to_frame())
    F = sf.transform(ds.to_frame())
    m = FeatureMatcher(random_state=0).fit(F, ds.y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        risk = LearnRisk(m, cv=3, epochs=10, random_state=0)
        risk.fit_around(F, ds.y)
    return MatchModel(list(table.columns), sf, m, risk_model=risk, task=task, blocking=rules)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A model file and CSV files: the known records, two new batches A and B, all records."""
    d = tmp_path_factory.mktemp("incremental")
    table, links = make_person_table(1500, random_state=0)
    model = _train(table.iloc[:600], links, RULES)
    model.save(d / "model.skrisk")
    other = _train(table.iloc[600:1200], links, RULES)
    other.save(d / "other.skrisk")
    table.iloc[:N_KNOWN].to_csv(d / "known.csv", index_label="id")
    table.iloc[N_KNOWN:N_KNOWN + N_A].to_csv(d / "a.csv", index_label="id")
    table.iloc[N_KNOWN + N_A:].to_csv(d / "b.csv", index_label="id")
    table.to_csv(d / "all.csv", index_label="id")
    table.iloc[:0].to_csv(d / "empty.csv", index_label="id")
    run(d, "--left", "known.csv", "--out", "known")
    return d, table, links


def run(d, *args: str, model: str = "model.skrisk") -> None:
    argv = ["match", "--model", str(d / model), "--no-progress", "--n-jobs", "1"]
    argv += [str(d / a) if a.endswith((".csv", "known")) or a.startswith("o_") else a for a in args]
    assert main(argv) == 0


def entities(folder) -> pd.Series:
    """record id -> entity id (int) of a run's entities.csv."""
    e = read_csv_export(folder / "entities.csv")
    return pd.Series(e["entity_id"].astype(int).to_numpy(), index=e["record_id"].to_numpy()).sort_index()


def partition(folder) -> set[frozenset]:
    e = entities(folder)
    return {frozenset(g.index) for _, g in e.groupby(e)}


def changes(folder) -> pd.DataFrame:
    return read_csv_export(folder / "changes.csv")


def test_a_full_run_writes_a_checked_index(world):
    d, table, _ = world
    man = json.loads((d / "known" / "index.json").read_text())
    ent = entities(d / "known")
    assert man["n_records"] == N_KNOWN == len(ent)
    assert man["next_entity_id"] == ent.max() + 1
    attrs = ["given_name", "surname", "date_of_birth", "address", "city", "postcode"]
    assert man["attributes"] == attrs
    rec = read_records(d / "known" / "index_records.npz", attrs, "run again")
    table = table.iloc[:N_KNOWN]
    assert sorted(rec.index) == sorted(table.index)
    assert rec.reindex(table.index).fillna("").equals(table[attrs].fillna("").astype(object))


def test_new_records_join_known_entities_whose_ids_stay(world):
    d, _, links = world
    run(d, "--left", "a.csv", "--entities", "known", "--out", "o_a")
    before, after = entities(d / "known"), entities(d / "o_a")
    assert (after.reindex(before.index) == before).all()  # no known record renumbered
    new = after.drop(before.index)
    assert len(new) == N_A
    joined = new[new.isin(before.values)]
    started = new[~new.isin(before.values)]
    assert len(joined) and len(started)
    assert started.min() >= before.max() + 1  # new ids never reuse an old one
    true = set(map(tuple, links.to_numpy()))
    # a new record that joined a known entity mostly shares it with a true duplicate
    ok = [any((min(r, k), max(r, k)) in true for k in before.index[before == e]) for r, e in joined.items()]
    assert sum(ok) / len(ok) > 0.9
    assert len(changes(d / "o_a")) == 0


def test_the_same_new_file_twice_changes_nothing(world):
    d, _, _ = world
    run(d, "--left", "a.csv", "--entities", "known", "--out", "o_a1")
    run(d, "--left", "a.csv", "--entities", "o_a1", "--out", "o_a2")
    for name in ("entities.csv", "index_records.npz", "index.json"):
        assert (d / "o_a1" / name).read_bytes() == (d / "o_a2" / name).read_bytes(), name
    assert len(read_csv_export(d / "o_a2" / "matches.csv")) == 0


def test_an_empty_new_file_changes_nothing(world):
    d, _, _ = world
    run(d, "--left", "empty.csv", "--entities", "known", "--out", "o_empty")
    for name in ("entities.csv", "index_records.npz", "index.json"):
        assert (d / "known" / name).read_bytes() == (d / "o_empty" / name).read_bytes(), name


def test_two_batches_in_either_order_give_the_same_entities(world):
    d, _, _ = world
    run(d, "--left", "a.csv", "--entities", "known", "--out", "o_ab1", "--merge", "apply")
    run(d, "--left", "b.csv", "--entities", "o_ab1", "--out", "o_ab", "--merge", "apply")
    run(d, "--left", "b.csv", "--entities", "known", "--out", "o_ba1", "--merge", "apply")
    run(d, "--left", "a.csv", "--entities", "o_ba1", "--out", "o_ba", "--merge", "apply")
    assert partition(d / "o_ab") == partition(d / "o_ba")


def test_incremental_runs_agree_with_a_full_rerun(world):
    d, _, _ = world
    run(d, "--left", "all.csv", "--out", "o_full")
    run(d, "--left", "a.csv", "--entities", "known", "--out", "o_i1")
    run(d, "--left", "b.csv", "--entities", "o_i1", "--out", "o_i2")

    def pairs(folder):
        e = entities(folder)
        return [(a, b) for _, g in e.groupby(e) for i, a in enumerate(sorted(g.index)) for b in sorted(g.index)[i + 1:]]

    got, full = set(pairs(d / "o_i2")), set(pairs(d / "o_full"))
    f1 = 2 * len(got & full) / (len(got) + len(full))
    assert f1 >= 0.998, (f1, len(got), len(full))


def _scenario(d, table):
    """x and y: two known records of different people that the model does not match; z, new: x's
    name and y's address; it matches both."""
    x, o = table.iloc[0].copy(), table.iloc[500]
    y, z = x.copy(), x.copy()
    for c in ("given_name", "surname", "address", "city"):
        y[c] = o[c]
    for c in ("given_name", "address", "city"):
        z[c] = o[c]
    model = load_model(d / "model.skrisk")
    three = pd.DataFrame([x, y, z], index=["x", "y", "z"])
    p = model.scorer(three).score(pd.DataFrame([("x", "y"), ("x", "z"), ("y", "z")],
                                               columns=["left_id", "right_id"])).proba
    assert p[0] <= model.threshold < min(p[1], p[2]), p  # the scenario's premise
    known = pd.concat([table.iloc[:N_KNOWN], pd.DataFrame([y], index=["y_known"])])
    known.to_csv(d / "known_xy.csv", index_label="id")
    pd.DataFrame([z], index=["z_new"]).to_csv(d / "z.csv", index_label="id")
    run(d, "--left", "known_xy.csv", "--out", "o_known_xy")
    ent = entities(d / "o_known_xy")
    assert ent[table.index[0]] != ent["y_known"]
    return ent[table.index[0]], ent["y_known"]


def test_a_merge_is_reported_then_applied(world):
    d, table, _ = world
    ex, ey = _scenario(d, table)
    run(d, "--left", "z.csv", "--entities", "o_known_xy", "--out", "o_rep")
    ch = changes(d / "o_rep")
    assert ch["change"].tolist() == ["merge"] and ch["applied"].tolist() == ["no"]
    assert ch["record_id"].tolist() == ["z_new"] and ch["entities"].tolist() == [f"{min(ex, ey)};{max(ex, ey)}"]
    assert 0 < float(ch["probability"][0]) <= 1 and 0 <= float(ch["risk"][0]) <= 1
    assert ch["reasons"][0]  # LearnRisk's reasons of the weakest link (or why there are none)
    ent = entities(d / "o_rep")
    assert ent[table.index[0]] == ex and ent["y_known"] == ey  # report: the known entities stay apart
    assert ent["z_new"] in (ex, ey)
    run(d, "--left", "z.csv", "--entities", "o_known_xy", "--out", "o_app", "--merge", "apply")
    ch = changes(d / "o_app")
    assert ch["applied"].tolist() == ["yes"] and ch["into"].tolist() == [str(min(ex, ey))]
    ent = entities(d / "o_app")
    assert ent[table.index[0]] == ent["y_known"] == ent["z_new"] == min(ex, ey)


def test_an_id_seen_again_with_other_values_is_an_update(world):
    d, table, _ = world
    known = entities(d / "known")
    sizes = known.value_counts()
    rid = next(r for r in known.index if sizes[known[r]] >= 2)  # a record with links
    mates = sorted(set(known.index[known == known[rid]]) - {rid})
    # the record now holds the values of a record of another entity: it moves there
    target = next(r for r in table.index[:N_KNOWN] if known[r] != known[rid])
    upd = table.loc[[target]].copy()
    upd.index = [rid]
    upd.to_csv(d / "upd.csv", index_label="id")
    same = table.loc[[rid]]
    same.to_csv(d / "same.csv", index_label="id")
    run(d, "--left", "same.csv", "--entities", "known", "--out", "o_same")  # same values: a no-op
    assert (d / "o_same" / "entities.csv").read_bytes() == (d / "known" / "entities.csv").read_bytes()
    run(d, "--left", "upd.csv", "--entities", "known", "--out", "o_upd")
    ch = changes(d / "o_upd")
    row = ch[ch["change"] == "update"].iloc[0]
    assert row["record_id"] == rid and row["entities"] == str(known[rid])
    assert row["detail"].endswith("old links: " + ";".join(mates))
    after = entities(d / "o_upd")
    assert after[rid] == after[target] == known[target]
    assert (after[mates] == known[rid]).all()  # the old entity keeps its id
    rec = read_records(d / "o_upd" / "index_records.npz", list(load_model(d / "model.skrisk").attributes), "x")
    assert (rec.loc[rid, "surname"] or "") == (table.loc[target, "surname"] or "")


def test_the_python_api_matches_against_a_folder(world):
    d, table, _ = world
    model = load_model(d / "model.skrisk")
    res = match(model, table.iloc[N_KNOWN:N_KNOWN + N_A], entities=d / "known", progress=False)
    assert res.summary["new_records"] == N_A
    assert res.summary["joined"] + res.summary["started"] + res.summary["merged"] == N_A
    assert len(res.entities.clusters) == N_KNOWN + N_A
    assert (res.matches["probability"] > model.threshold).all()
    empty = match(model, table.iloc[:0], entities=d / "known", progress=False)
    assert empty.summary["new_records"] == 0 and len(empty.entities.clusters) == N_KNOWN
    with pytest.raises(ValueError, match="merge"):
        match(model, table.iloc[:5], entities=d / "known", merge="always")


def _copy(d, name):
    import shutil

    shutil.copytree(d / "known", d / name)
    return d / name


def test_an_index_of_another_model_is_refused(world):
    d, table, _ = world
    with pytest.raises(DataError, match=r"index\.json.*another model"):
        match(load_model(d / "other.skrisk"), table.iloc[N_KNOWN:], entities=d / "known", progress=False)


def test_a_tampered_index_is_refused(world):
    d, table, _ = world
    folder = _copy(d, "tampered")
    data = bytearray((folder / "index_records.npz").read_bytes())
    at = data.rindex(b"smith") if b"smith" in data else len(data) // 2
    data[at] ^= 1  # one byte of one value changed
    (folder / "index_records.npz").write_bytes(bytes(data))
    model = load_model(d / "model.skrisk")
    with pytest.raises(DataError, match=r"index_records\.npz.*checksum.*tampered"):
        match(model, table.iloc[N_KNOWN:], entities=folder, progress=False)
    (folder / "index.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError, match=r"index\.json.*not a readable manifest"):
        match(model, table.iloc[N_KNOWN:], entities=folder, progress=False)
    (folder / "index.json").unlink()
    with pytest.raises(DataError, match=r"index\.json is missing.*full run"):
        match(model, table.iloc[N_KNOWN:], entities=folder, progress=False)


@pytest.mark.parametrize("task,blocking", [("dedup", "standard"), ("link", "standard"), ("dedup", "typed"),
                                           ("link", "typed")])
def test_frequency_features_weigh_by_all_the_records(tmp_path, task, blocking):
    """A typed model's ``exact_tf`` features weigh agreement by the whole table's frequencies:
    the index keeps the known records' value counts, so an incremental run scores its pairs as a
    full run of all the records does (and keeps the counts up to date for the next run). With the
    typed blocking a typed person model gets, the index keeps every record's pass keys, and the
    new records find their known candidates from them."""
    table, links = make_person_table(1500, random_state=2)
    types = {"given_name": "given_name", "surname": "family_name", "city": "categorical"}
    if blocking == "typed":
        types = PERSON_TYPES
    _train(table.iloc[:600], links, RULES if blocking == "standard" else None, task=task,
           types=types).save(tmp_path / "model.skrisk")
    model = load_model(tmp_path / "model.skrisk")
    assert json.dumps(model.features.value_counts(table.iloc[:3]), default=str)  # it has exact_tf features
    d = tmp_path
    if task == "dedup":
        files = {"known": table.iloc[:1000], "new": table.iloc[1000:], "all": table}
        args = {name: ["--left", f"{name}.csv"] for name in files}
    else:
        side = np.random.default_rng(0).random(len(table)) < 0.5
        files = {}
        for name, part in (("known", table.iloc[:1000]), ("new", table.iloc[1000:]), ("all", table)):
            on_left = side[table.index.get_indexer(part.index)]
            files[f"{name}_l"], files[f"{name}_r"] = part[on_left], part[~on_left]
        args = {name: ["--left", f"{name}_l.csv", "--right", f"{name}_r.csv"] for name in ("known", "new", "all")}
    for name, part in files.items():
        part.to_csv(d / f"{name}.csv", index_label="id")
    run(d, *args["known"], "--out", "o_known")
    man = json.loads((d / "o_known" / "index.json").read_text())
    assert set(man["value_counts"]) == ({"t"} if task == "dedup" else {"l", "r"})
    assert set(next(iter(man["value_counts"].values()))) <= set(types)
    assert (man["typed_passes"] is not None) == (blocking == "typed")
    run(d, *args["new"], "--entities", "o_known", "--out", "o_incr")
    run(d, *args["all"], "--out", "o_all")
    got = read_csv_export(d / "o_incr" / "matches.csv").set_index(["left_id", "right_id"])["probability"]
    full = read_csv_export(d / "o_all" / "matches.csv").set_index(["left_id", "right_id"])["probability"]
    both = got.index.intersection(full.index)
    assert len(both) > 0.9 * len(got) > 0
    np.testing.assert_allclose(got[both].astype(float), full[both].astype(float), atol=2e-6)
    run(d, *args["new"], "--entities", "o_incr", "--out", "o_again")  # a no-op, the counts included
    assert (d / "o_again" / "index_records.npz").read_bytes() == (d / "o_incr" / "index_records.npz").read_bytes()


def test_an_index_hashed_otherwise_is_refused(world):
    """Identical keys made by another hash function (another pandas) would miss twins: refused."""
    d, table, _ = world
    folder = _copy(d, "other_hash")
    man = json.loads((folder / "index.json").read_text())
    man["hash_probe"] = "1,2,3"
    (folder / "index.json").write_text(json.dumps(man))
    with pytest.raises(DataError, match=r"index\.json.*another hash function.*full run"):
        match(load_model(d / "model.skrisk"), table.iloc[N_KNOWN:], entities=folder, progress=False)


def test_edited_entity_ids_are_refused(world):
    d, table, _ = world
    folder = _copy(d, "edited")
    e = read_csv_export(folder / "entities.csv")
    lines = (folder / "entities.csv").read_bytes().split(b"\r\n")
    lines[1] = b"77777" + lines[1][len(str(e["entity_id"][0])):]  # one record moved to another entity
    (folder / "entities.csv").write_bytes(b"\r\n".join(lines))
    with pytest.raises(DataError, match=r"entities\.csv.*entity ids.*edited"):
        match(load_model(d / "model.skrisk"), table.iloc[N_KNOWN:], entities=folder, progress=False)


@pytest.fixture(scope="module")
def link_world(tmp_path_factory):
    """A linkage model and two tables of persons (a person's records on either side), each split
    into known records and a new batch; a full run of the known records."""
    d = tmp_path_factory.mktemp("incremental_link")
    table, links = make_person_table(1500, random_state=1)
    _train(table.iloc[:600], links, RULES, task="link").save(d / "model.skrisk")
    side = np.random.default_rng(0).random(len(table)) < 0.5
    left, right = table[side], table[~side]
    n_l, n_r = int(len(left) * 0.8), int(len(right) * 0.8)
    parts = {"lk": left.iloc[:n_l], "rk": right.iloc[:n_r], "ln": left.iloc[n_l:], "rn": right.iloc[n_r:],
             "l_all": left, "r_all": right, "l_empty": left.iloc[:0]}
    for name, part in parts.items():
        part.to_csv(d / f"{name}.csv", index_label="id")
    run(d, "--left", "lk.csv", "--right", "rk.csv", "--out", "o_link_known")
    return d, parts


def _link_entities(folder) -> pd.Series:
    """(side, record id) -> entity id of a linkage run's entities.csv."""
    e = read_csv_export(folder / "entities.csv")
    return pd.Series(e["entity_id"].astype(int).to_numpy(),
                     index=pd.MultiIndex.from_arrays([e["side"], e["record_id"]])).sort_index()


def test_linkage_new_records_join_known_entities_and_agree_with_a_full_rerun(link_world):
    d, parts = link_world
    run(d, "--left", "ln.csv", "--right", "rn.csv", "--entities", "o_link_known", "--out", "o_link_i",
        "--merge", "apply")
    run(d, "--left", "l_all.csv", "--right", "r_all.csv", "--out", "o_link_full")
    before, after = _link_entities(d / "o_link_known"), _link_entities(d / "o_link_i")
    moved = after.reindex(before.index) != before
    merged = {int(e) for text in changes(d / "o_link_i")["entities"] for e in text.split(";")}
    assert moved.any() and set(before[moved]) <= merged  # only the entities of a merge are renumbered
    new = after.drop(before.index)
    assert len(new) == len(parts["ln"]) + len(parts["rn"])
    assert set(new.index.get_level_values(0)) == {"left", "right"}
    joined = new[new.isin(before.values)]
    assert len(joined) and new[~new.isin(before.values)].min() > before.max()
    m = read_csv_export(d / "o_link_i" / "matches.csv")  # the tables' own ids, a left one and a right one
    assert len(m) and set(m["left_id"]) <= set(parts["l_all"].index) and set(m["right_id"]) <= set(parts["r_all"].index)
    assert (m["left_id"].isin(parts["ln"].index) | m["right_id"].isin(parts["rn"].index)).all()

    def pairs(series):
        return {(a, b) for _, g in series.groupby(series) for i, a in enumerate(sorted(g.index)) for b in sorted(g.index)[i + 1:]}

    got, full = pairs(after), pairs(_link_entities(d / "o_link_full"))
    f1 = 2 * len(got & full) / (len(got) + len(full))
    assert f1 >= 0.998, (f1, len(got), len(full))
    # the previous file's lines copied where the entities stayed: the bytes of the file written whole
    assert (d / "o_link_i" / "entities.csv").read_bytes() == _whole(d, "ln.csv", "o_link_known", "apply", "rn.csv")


def test_linkage_new_records_of_one_table_and_the_same_batch_again(link_world):
    d, parts = link_world
    run(d, "--left", "l_empty.csv", "--right", "rn.csv", "--entities", "o_link_known", "--out", "o_link_r")
    after = _link_entities(d / "o_link_r")
    assert len(after) == len(parts["lk"]) + len(parts["rk"]) + len(parts["rn"])
    run(d, "--left", "l_empty.csv", "--right", "rn.csv", "--entities", "o_link_r", "--out", "o_link_r2")
    for name in ("entities.csv", "index_records.npz", "index.json"):
        assert (d / "o_link_r" / name).read_bytes() == (d / "o_link_r2" / name).read_bytes(), name
    model = load_model(d / "model.skrisk")
    res = match(model, parts["ln"], None, entities=d / "o_link_r", progress=False)  # the left batch, from Python
    assert res.summary["new_records"] == len(parts["ln"]) and res.entities.task == "link"
    with pytest.raises(ValueError, match="one to one"):
        match(model, parts["ln"], parts["rn"], entities=d / "o_link_known", one_to_one=True, progress=False)
    with pytest.raises(DataError, match=r"index\.json.*another model"):  # a dedup model's index
        match(model, parts["ln"], None, entities=_first_world_known(d), progress=False)


def test_linkage_ids_shared_by_both_tables_or_holding_a_colon(link_world, tmp_path):
    """Ids are per table: the same id on both sides is two records, and an id with a colon (or
    one that looks like a side prefix) is read back as it was."""
    d, parts = link_world
    left = parts["lk"].iloc[:300].copy()
    right = parts["rk"].iloc[:300].copy()
    left.index = [f"{i}" for i in range(len(left))]
    right.index = [f"{i}" for i in range(len(right))]  # the same ids as the left table's
    left.index = list(left.index[:-2]) + ["a:b", "right:7"]
    left.to_csv(tmp_path / "l.csv", index_label="id")
    right.to_csv(tmp_path / "r.csv", index_label="id")
    new_l = parts["ln"].iloc[:20].copy()
    new_l.index = [f"n:{i}" for i in range(len(new_l))]
    new_l.to_csv(tmp_path / "nl.csv", index_label="id")
    right.iloc[:0].to_csv(tmp_path / "nr.csv", index_label="id")
    base = ["match", "--model", str(d / "model.skrisk"), "--no-progress", "--n-jobs", "1"]
    assert main(base + ["--left", str(tmp_path / "l.csv"), "--right", str(tmp_path / "r.csv"),
                        "--out", str(tmp_path / "known")]) == 0
    assert main(base + ["--left", str(tmp_path / "nl.csv"), "--right", str(tmp_path / "nr.csv"),
                        "--entities", str(tmp_path / "known"), "--out", str(tmp_path / "incr")]) == 0
    before, after = _link_entities(tmp_path / "known"), _link_entities(tmp_path / "incr")
    assert len(before) == 600 and (after.reindex(before.index) == before).all()
    assert ("left", "a:b") in after.index and ("left", "right:7") in after.index and ("right", "0") in after.index
    assert set(after.drop(before.index).index) == {("left", i) for i in new_l.index}


def _first_world_known(d):
    """A dedup run's folder: the linkage index of ``d`` re-run with a dedup model."""
    model = load_model(d / "model.skrisk")
    model.task = "dedup"
    model.save(d / "dedup.skrisk")
    run(d, "--left", "lk.csv", "--out", "o_link_as_dedup", model="dedup.skrisk")
    return d / "o_link_as_dedup"


def test_a_run_may_write_into_its_entities_folder(world):
    d, _, _ = world
    run(d, "--left", "a.csv", "--entities", "known", "--out", "o_chain")
    expected = (d / "o_chain" / "entities.csv").read_bytes()
    run(d, "--left", "b.csv", "--entities", "o_chain", "--out", "o_chain")
    after = entities(d / "o_chain")
    assert len(after) == len(entities(d / "known")) + 500 and (d / "o_chain" / "entities.csv").read_bytes() != expected
    run(d, "--left", "b.csv", "--entities", "o_chain", "--out", "o_chain")  # the index was updated: a no-op
    assert entities(d / "o_chain").equals(after)


def test_one_way_token_blocking_pairs_each_left_record_with_its_nearest_right_ones(world):
    _, table, _ = world
    new, known = table.iloc[:50], table.iloc[50:]
    rule = ("tokens", ["given_name", "surname"], {"top_k": 3})
    one = block(new, known, rule, one_way=True).pairs
    both = block(new, known, rule).pairs
    assert one["left_id"].value_counts().max() <= 3 and set(one["left_id"]) <= set(new.index)
    assert set(map(tuple, one.to_numpy())) <= set(map(tuple, both[["left_id", "right_id"]].to_numpy()))
    assert len(both) > len(one) > 0


def test_incremental_matching_is_not_combined_with_a_cluster(world, tmp_path, capsys):
    from skrisk.cli import main

    d, table, links = world
    with pytest.raises(ValueError, match="incremental matching runs on one machine"):
        match(load_model(d / "model.skrisk"), table.iloc[:10], entities=d / "known", client=object(),
              progress=False)
    new = tmp_path / "new.csv"
    table.iloc[:10].to_csv(new, index_label="id")
    rc = main(["match", "--model", str(d / "model.skrisk"), "--left", str(new), "--entities", str(d / "known"),
               "--workers", "2", "--out", str(tmp_path / "out")])
    assert rc == 2 and "--entities runs on one machine" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_hostile_index_file_is_refused_naming_it(tmp_path):
    """The records' archive is read only after its structure is checked: a pickled (object) array,
    a compressed member, a missing or extra member, a wrong dtype, codes outside the values, and
    lengths that do not add up are each a DataError naming the file; nothing is unpickled."""
    import io
    import zipfile



    # internal on purpose: the writer of the index file, to build hostile variants of it
    from skrisk.matching._index_file import records_bytes

    rec = pd.DataFrame({"a": ["x", None, "ü", ""], "b": ["1", "2", "2", "'=3"]}, index=["NA", "007", "b", "c"])
    good = records_bytes(rec, ["a", "b"])
    path = tmp_path / "index_records.npz"
    path.write_bytes(good)
    back = read_records(path, ["a", "b"], "run again")
    assert back.index.tolist() == ["NA", "007", "b", "c"]
    assert back["a"].tolist() == ["x", None, "ü", None] and back["b"].tolist() == ["1", "2", "2", "'=3"]
    assert records_bytes(rec, ["a", "b"]) == good  # the same records, the same bytes

    def members(data):
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            return {i.filename: zf.read(i.filename) for i in zf.infolist()}

    def archive(arrays, compression=zipfile.ZIP_STORED, raw=None):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=compression) as zf:
            for name, payload in (raw or {}).items():
                zf.writestr(name, payload)
            for name, arr in arrays.items():
                b = io.BytesIO()
                np.save(b, arr, allow_pickle=True)
                zf.writestr(name + ".npy", b.getvalue())
        return buf.getvalue()

    with np.load(io.BytesIO(good)) as z:
        arrays = {n: z[n] for n in z.files}
    hostile = {
        "object array (a pickle)": archive({**arrays, "a0_text": np.array(["x"], dtype=object)}),
        "compressed": archive(arrays, zipfile.ZIP_DEFLATED),
        "missing member": archive({k: v for k, v in arrays.items() if k != "a1_codes"}),
        "extra member": archive(arrays, raw={"evil.py": b"print(1)"}),
        "wrong dtype": archive({**arrays, "a0_codes": arrays["a0_codes"].astype(np.float64)}),
        "codes outside": archive({**arrays, "a1_codes": arrays["a1_codes"] + 5}),
        "lengths": archive({**arrays, "ids_len": arrays["ids_len"] + 1}),
        "not a zip": b"PK\x03\x04 truncated",
    }
    assert set(members(good)) == {n + ".npy" for n in arrays}
    for why, data in hostile.items():
        path.write_bytes(data)
        with pytest.raises(DataError, match=r"index_records\.npz is not a readable index.*run again"):
            read_records(path, ["a", "b"], "run again")
        assert why


# ---------------------------------------------------------------------------- the word counts
TOKEN_RULES = [("tokens", ["given_name", "surname", "address"], {"top_k": 5})]


@pytest.fixture(scope="module")
def token_world(tmp_path_factory):
    """A model that blocks with the tokens rule, and a full run of the known records."""
    d = tmp_path_factory.mktemp("incremental_tokens")
    table, links = make_person_table(1500, random_state=0)
    _train(table.iloc[:600], links, TOKEN_RULES).save(d / "model.skrisk")
    table.iloc[:N_KNOWN].to_csv(d / "known.csv", index_label="id")
    table.iloc[N_KNOWN:].to_csv(d / "a.csv", index_label="id")
    run(d, "--left", "known.csv", "--out", "known")
    return d, table


def _counts_equal(a, b) -> bool:
    return (list(a.ids) == list(b.ids) and list(a.vocab) == list(b.vocab) and a.counts.shape == b.counts.shape
            and (a.counts != b.counts).nnz == 0)


def test_the_index_keeps_the_word_counts_of_the_tokens_rule(token_world, tmp_path):
    """A full run's index and an incremental run's index hold the word counts of their records,
    equal to counting them afresh."""
    # internal on purpose: the word counts the index keeps, against counting them again
    from skrisk.data._token_counts import token_counts
    from skrisk.matching._index_file import read_tokens

    d, table = token_world
    cols = ["given_name", "surname", "address"]
    attrs = list(load_model(d / "model.skrisk").attributes)
    run(d, "--left", "a.csv", "--out", "o_tokens", "--entities", "known")
    for folder in (d / "known", d / "o_tokens"):
        assert json.loads((folder / "index.json").read_text())["tokens_columns"] == cols
        rec = read_records(folder / "index_records.npz", attrs, "run again")
        kept = read_tokens(folder / "index_records.npz", cols, rec.index, "run again")
        assert _counts_equal(kept, token_counts(rec, cols))


def test_the_kept_word_counts_give_the_same_candidates(token_world):
    """Blocking new records against known ones whose counts are lent gives the pairs of counting
    them again, also when identical records leave only some of the known ones to block."""
    # internal on purpose: the counts lent to blocking
    from skrisk.data._token_counts import known_token_counts, token_counts

    d, table = token_world
    known, new = table.iloc[:N_KNOWN].copy(), table.iloc[N_KNOWN:]
    known = pd.concat([known, known.iloc[:40].set_axis([f"copy{i}" for i in range(40)])])  # twins
    for identical in (False, True):
        plain = block(new, known, TOKEN_RULES, identical=identical, one_way=True).pairs
        with known_token_counts(token_counts(known, ["given_name", "surname", "address"])):
            lent = block(new, known, TOKEN_RULES, identical=identical, one_way=True).pairs
        assert len(plain) > 0 and plain.equals(lent)


PERSON_TYPES = {"given_name": "given_name", "surname": "family_name", "date_of_birth": "date",
                "address": "address", "city": "categorical", "postcode": "postcode"}


@pytest.mark.parametrize("rules", [RULES, TOKEN_RULES, None, "typed"], ids=["standard", "tokens", "default", "typed"])
def test_blocking_against_the_kept_keys_gives_the_pairs_of_block(token_world, rules):
    """New records blocked against what an index keeps of the known ones (identical keys, word
    counts, values of other rules' columns on request) get the pairs of ``block(new, known,
    identical=True, one_way=True)``, twins on both sides and records without values included."""


    # internal on purpose: the blocking of an incremental run, against the public block()
    from skrisk.data._known_blocking import block_new_against_known, identical_keys, kept_typed_passes, typed_keys
    from skrisk.data._token_counts import token_counts

    _, table = token_world
    if rules == "typed":
        types = SimilarityFeatures(types=PERSON_TYPES).fit(
            PairDataset.from_table(table, block(table.iloc[:200], None, RULES).pairs, name="p").to_frame()).column_types_
        rules = [("typed", None, {"types": types})]
    attrs = list(table.columns)
    known, new = table.iloc[:N_KNOWN].copy(), table.iloc[N_KNOWN:N_KNOWN + 200].copy()
    known = pd.concat([known, known.iloc[:40].set_axis([f"copy{i}" for i in range(40)])])  # twins among the known
    new = pd.concat([new, known.iloc[40:60].set_axis([f"new{i}" for i in range(20)]),  # twins of known records
                     pd.DataFrame({a: [None, ""] for a in attrs}, index=["blank1", "blank2"])])
    new.iloc[5, 0] = "  " + str(new.iloc[5, 0]).upper()  # equal once normalised
    known = known.sort_index()
    expected = block(new, known, rules, identical=True, one_way=True).pairs
    cols = TOKEN_RULES[0][1] if rules is TOKEN_RULES else attrs
    ids = known.index.to_numpy(dtype=object)
    typed = None
    if rules is not None and rules[0][0] == "typed":
        passes = kept_typed_passes(attrs, rules[0][2]["types"])
        typed = (passes, rules[0][2]["types"], typed_keys(known, passes, rules[0][2]["types"]),
                 np.arange(len(known)))

        def known_columns(c, rows):
            raise AssertionError("the typed rule read the known records' values")
    else:
        def known_columns(c, rows):
            return known.iloc[rows][c]
    li, ri = block_new_against_known(new, ids, identical_keys(known, attrs), rules, attributes=attrs,
                                     known_tokens=token_counts(known, cols), known_columns=known_columns,
                                     known_typed=typed)
    got = pd.DataFrame({"left_id": new.index.to_numpy(dtype=object)[li], "right_id": ids[ri]})
    assert len(expected) > 0 and set(map(tuple, got.to_numpy())) == set(map(tuple, expected.to_numpy()))
    assert len(got) == len(expected)
    if typed is not None:  # the new records' keys given, as an incremental run does
        again = block_new_against_known(new, ids, identical_keys(known, attrs), rules, attributes=attrs,
                                        known_tokens=None, known_columns=known_columns, known_typed=typed,
                                        new_typed=typed_keys(new, passes, rules[0][2]["types"]))
        assert all(np.array_equal(a, b) for a, b in zip(again, (li, ri)))
    keys = identical_keys(new, attrs)
    assert keys[-1] == keys[-2] == 0 and keys[5] == identical_keys(table.iloc[N_KNOWN + 5:N_KNOWN + 6], attrs)[0]
    assert len(np.unique(keys[:-2])) > 150


def test_word_counts_that_do_not_hold_together_are_refused(token_world):
    """An index whose word counts were changed and its checksum updated is still refused,
    naming the file (a word outside the vocabulary)."""
    import hashlib
    import io
    import zipfile



    d, table = token_world
    folder = _copy(d, "bad_tokens")
    path = folder / "index_records.npz"
    with np.load(path, allow_pickle=False) as z:
        arrays = {n: z[n] for n in z.files}
    arrays["t_indices"] = arrays["t_indices"].copy()
    arrays["t_indices"][0] = len(arrays["t_vocab_len"]) + 5
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            with zf.open(name + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, arr, allow_pickle=False)
    path.write_bytes(buf.getvalue())
    man = json.loads((folder / "index.json").read_text())
    man["records"] = hashlib.sha256(buf.getvalue()).hexdigest()
    (folder / "index.json").write_text(json.dumps(man))
    with pytest.raises(DataError, match=r"index_records\.npz holds word counts that cannot be read.*vocabulary"):
        match(load_model(d / "model.skrisk"), table.iloc[N_KNOWN:], entities=folder, progress=False)



def _whole(d, new: str, previous: str, merge: str = "report", right: str | None = None, model=None) -> bytes:
    """The bytes of ``entities.csv`` with every row written by the CSV writer (the entities of
    ``match(..., entities=previous)``)."""
    # internal on purpose: the one CSV writer, which a full write of entities.csv goes through
    from skrisk._safetext import csv_text
    from skrisk.data import read_table as read_new

    model = load_model(model or d / "model.skrisk")
    tables = [read_new(d / new)] + ([read_new(d / right)] if right else [])
    if right is None and model.task == "link":
        tables.append(None)
    res = match(model, *tables, entities=d / previous, merge=merge, progress=False)
    return csv_text(res.entities.to_frame()).encode("utf-8")


def test_entities_csv_copies_the_lines_of_the_entities_left_alone(world):
    """An incremental run copies the previous file's lines of the entities it did not change and
    writes the others: the file is byte for byte the one written whole, for joins, new entities,
    a merge reported or applied, and an update."""
    d, table, _ = world
    run(d, "--left", "a.csv", "--entities", "known", "--out", "o_lines_a")
    assert (d / "o_lines_a" / "entities.csv").read_bytes() == _whole(d, "a.csv", "known")
    ex, _ = _scenario(d, table)
    for merge in ("report", "apply"):
        run(d, "--left", "z.csv", "--entities", "o_known_xy", "--out", f"o_lines_{merge}", "--merge", merge)
        assert (d / f"o_lines_{merge}" / "entities.csv").read_bytes() == _whole(d, "z.csv", "o_known_xy", merge)
    known = entities(d / "known")
    rid = next(r for r in known.index if (known == known[r]).sum() >= 2)
    upd = table.loc[[next(r for r in table.index[:N_KNOWN] if known[r] != known[rid])]].copy()
    upd.index = [rid]
    upd.to_csv(d / "upd_lines.csv", index_label="id")
    run(d, "--left", "upd_lines.csv", "--entities", "known", "--out", "o_lines_upd")
    assert (d / "o_lines_upd" / "entities.csv").read_bytes() == _whole(d, "upd_lines.csv", "known")


def test_entities_csv_with_line_breaks_and_formulas_in_ids(world, tmp_path):
    """Hostile ids in the known records (a line break, a quote, a comma, a formula, ``NA``,
    ``007``): the previous file's lines are not rows, so the whole file is written, and it reads
    back to the exact ids."""
    d, table, _ = world
    known = table.iloc[:300].copy()
    hostile = ["a\r\nb", 'q"uote', "c,d", "=1+1", "NA", "007"]
    known.index = hostile + [str(i) for i in known.index[len(hostile):]]
    known.to_csv(tmp_path / "known.csv", index_label="id")
    new = table.iloc[:6].copy()  # twins of the hostile records: they join their entities
    new.index = [f"new{i}" for i in range(6)]
    new.to_csv(tmp_path / "new.csv", index_label="id")
    base = ["match", "--model", str(d / "model.skrisk"), "--no-progress", "--n-jobs", "1"]
    assert main(base + ["--left", str(tmp_path / "known.csv"), "--out", str(tmp_path / "known")]) == 0
    assert main(base + ["--left", str(tmp_path / "new.csv"), "--entities", str(tmp_path / "known"),
                        "--out", str(tmp_path / "incr")]) == 0
    from skrisk.utils import read_csv_export as read_back

    got = read_back(tmp_path / "incr" / "entities.csv")
    ent = pd.Series(got["entity_id"].to_numpy(), index=got["record_id"].to_numpy())
    assert set(hostile) <= set(ent.index) and len(ent) == 306
    assert all(ent[f"new{i}"] == ent[h] for i, h in enumerate(hostile))
    assert (tmp_path / "incr" / "entities.csv").read_bytes() == _whole(tmp_path, "new.csv", "known",
                                                                      model=d / "model.skrisk")


def test_a_previous_entities_file_that_changed_is_written_whole(world, tmp_path):
    """The copy is refused when the previous file is not the one the index checked (its SHA-256),
    or holds more lines than rows."""
    # internal on purpose: the copy of the previous file's lines and its refusals
    from skrisk.matching._entities_file import EntitiesReuse, entities_parts

    d, _, _ = world
    res = match(load_model(d / "model.skrisk"), read_csv_export(d / "a.csv").set_index("id"),
                entities=d / "known", progress=False)
    plan = res.entities_reuse
    assert plan is not None and (plan.old_row >= 0).sum() > 0.5 * N_KNOWN
    whole = b"".join(entities_parts(plan, res.entities))
    assert whole == _whole(d, "a.csv", "known")
    other = tmp_path / "entities.csv"
    other.write_bytes((d / "known" / "entities.csv").read_bytes() + b"x\r\n")
    assert entities_parts(EntitiesReuse(other, plan.digest, plan.n_old, plan.old_row), res.entities) is None
    import hashlib

    digest = hashlib.sha256(other.read_bytes()).hexdigest()
    assert entities_parts(EntitiesReuse(other, digest, plan.n_old, plan.old_row), res.entities) is None
