"""skrisk.matching.match on a Dask LocalCluster: the same matches and entities as one machine."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from skrisk import LearnRisk  # noqa: E402
from skrisk.data import PairDataset, SimilarityFeatures, block  # noqa: E402
from skrisk.datasets import make_person_table  # noqa: E402
from skrisk.exceptions import DataError  # noqa: E402
from skrisk.matchers import FeatureMatcher  # noqa: E402
from skrisk.matching import MatchModel, match  # noqa: E402

N_RECORDS = 20_000


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module", params=["tokens", "typed"])
def person_model(request):
    """A dedup model of person records, trained on 400 labelled pairs of another generated table:
    its features generic (blocking by ``tokens``, on the client) or typed (the ``typed`` rule,
    keys shuffled on the cluster)."""
    table, links = make_person_table(3_000, random_state=1)
    cand = block(table, None, true_links=links).pairs
    rng = np.random.default_rng(1)
    pos, neg = np.flatnonzero(cand["label"] == 1), np.flatnonzero(cand["label"] == 0)
    take = np.sort(np.concatenate([rng.choice(pos, 200, replace=False), rng.choice(neg, 200, replace=False)]))
    ds = PairDataset.from_table(table, cand.iloc[take], split="train", name="persons-train")
    sf = SimilarityFeatures(types="auto" if request.param == "typed" else None).fit(ds.to_frame())
    F = sf.transform(ds.to_frame())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        risk = LearnRisk(FeatureMatcher(random_state=0), cv=3, epochs=10, random_state=0).fit(F, ds.y)
    return MatchModel(list(table.columns), sf, risk.estimator_, risk_model=risk, task="dedup")


@pytest.fixture(scope="module")
def persons():
    """Generated persons with exact copies (a group of 120 among them), in no id order."""
    table = make_person_table(N_RECORDS, random_state=0)[0]
    copies = [table.iloc[:150].set_axis([f"c{i:03d}" for i in range(150)]),
              pd.concat([table.iloc[[9]]] * 120).set_axis([f"m{i:03d}" for i in range(120)])]
    return pd.concat([table] + copies).sample(frac=1, random_state=0)


@pytest.fixture(scope="module")
def single(person_model, persons):
    return match(person_model, persons, progress=False)


def _same_result(a, b) -> None:
    ma, mb = a.matches, b.matches
    assert len(ma) > 0 and a.n_candidates == b.n_candidates
    pd.testing.assert_frame_equal(ma[["left_id", "right_id"]], mb[["left_id", "right_id"]])
    np.testing.assert_allclose(ma["probability"], mb["probability"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(ma["risk"], mb["risk"], rtol=0, atol=1e-9)
    pd.testing.assert_frame_equal(a.entities.to_frame(), b.entities.to_frame())


def test_a_parquet_folder_with_an_empty_partition_gives_the_result_of_one_machine(
        client, person_model, persons, single, tmp_path):
    cut = len(persons) // 2
    parts = [persons.iloc[:cut], persons.iloc[:0], persons.iloc[cut:]]
    ddf = dd.from_delayed([dask_delayed(p) for p in parts], meta=persons.iloc[:0], verify_meta=False)
    ddf.to_parquet(tmp_path / "persons")
    back = dd.read_parquet(tmp_path / "persons")
    assert [len(p) for p in back.partitions] == [cut, 0, len(persons) - cut]
    res = match(person_model, str(tmp_path / "persons"), client=client, progress=False)
    _same_result(res, single)
    assert res.blocking.report() == single.blocking.report()
    assert res.blocking.rule_sizes == single.blocking.rule_sizes and "identical records" in res.blocking.rule_sizes
    assert set(res.timings) >= {"blocking", "encoding", "scoring", "entities", "total"}


def test_a_dask_frame_scored_in_small_pieces_is_the_same(client, person_model, persons, tmp_path):
    small = persons.iloc[:4_000]
    one = match(person_model, small, progress=False)
    res = match(person_model, dd.from_pandas(small, npartitions=5, sort=False), client=client, chunk_size=700,
                progress=False)
    _same_result(res, one)
    # a Parquet folder written by pandas, its ids in the model's id column
    (tmp_path / "t").mkdir()
    small.rename_axis(person_model.id_column).reset_index().to_parquet(tmp_path / "t" / "part.0.parquet")
    _same_result(match(person_model, str(tmp_path / "t"), client=client, progress=False), one)
    with pytest.raises(TypeError, match="needs client="):
        match(person_model, dd.from_pandas(small, npartitions=2, sort=False), progress=False)


def dask_delayed(obj):
    import dask

    return dask.delayed(obj, pure=True)


def test_an_id_repeated_across_partitions_is_refused_as_on_one_machine(client, person_model, persons):
    small = persons.iloc[:300]
    twin = small.iloc[[5]].copy()
    twin.iloc[0, 0] = "someone else"
    both = pd.concat([small, twin])
    with pytest.raises(DataError) as one:
        match(person_model, both, progress=False)
    ddf = dd.from_delayed([dask_delayed(small), dask_delayed(twin)], meta=small.iloc[:0], verify_meta=False)
    with pytest.raises(DataError) as dist:
        match(person_model, ddf, client=client, progress=False)
    assert str(dist.value) == str(one.value) and repr(small.index[5]) in str(dist.value)


def test_partitions_of_different_schemas_are_refused_naming_the_column(client, person_model, persons):
    a, b = persons.iloc[:200], persons.iloc[200:400].rename(columns={"city": "town"})
    ddf = dd.from_delayed([dask_delayed(a), dask_delayed(b)], meta=a.iloc[:0], verify_meta=False)
    with pytest.raises(DataError, match=r"'city' is in partition 0 but not in partition 1"):
        match(person_model, ddf, client=client, progress=False)
    c = persons.iloc[200:400].assign(postcode=np.arange(200))
    ddf = dd.from_delayed([dask_delayed(a), dask_delayed(c)], meta=a.iloc[:0], verify_meta=False)
    with pytest.raises(DataError, match=r"column 'postcode' holds text values .* but number values"):
        match(person_model, ddf, client=client, progress=False)


def test_a_linkage_one_to_one_with_reasons_is_the_same(client, person_model, persons):
    left, right = persons.iloc[:800], persons.iloc[800:1600]
    model = MatchModel(person_model.attributes, person_model.features, person_model.matcher,
                       risk_model=person_model.risk_model, task="link")
    one = match(model, left, right, progress=False, one_to_one=True, reasons=True)
    dist = match(model, dd.from_pandas(left, npartitions=2, sort=False), right, client=client, progress=False,
                 one_to_one=True, reasons=True, chunk_size=500)
    _same_result(dist, one)
    assert dist.matches["reasons"].tolist() == one.matches["reasons"].tolist()


def test_the_command_with_two_workers_writes_the_files_of_one_machine(client, person_model, persons, tmp_path,
                                                                     capsys):
    from skrisk.cli import main

    model = person_model.save(tmp_path / "m.skrisk")
    persons.iloc[:1_000].rename_axis(person_model.id_column).to_csv(tmp_path / "t.csv")
    base = ["match", "--model", str(model), "--left", str(tmp_path / "t.csv"), "--no-progress"]
    assert main(base + ["--out", str(tmp_path / "one")]) == 0
    assert main(base + ["--out", str(tmp_path / "two"), "--workers", "2"]) == 0
    assert main(base + ["--out", str(tmp_path / "three"), "--scheduler", client.scheduler.address]) == 0
    for name in ("matches.csv", "entities.csv"):
        one = (tmp_path / "one" / name).read_bytes()
        assert one.count(b"\n") > 10
        assert (tmp_path / "two" / name).read_bytes() == one == (tmp_path / "three" / name).read_bytes()
    with pytest.raises(SystemExit):
        main(base + ["--out", str(tmp_path / "x"), "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_worker_killed_while_scoring_is_recomputed(person_model, persons, single):
    """kill -9 of a worker mid-run: its partitions are computed again on the other worker (and on
    the one the nanny starts), and the result is that of one machine, no pair lost or repeated."""
    import os
    import signal
    import threading
    import time

    done: dict = {}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=50) as cluster, distributed.Client(cluster) as c:
        ddf = dd.from_pandas(persons, npartitions=6, sort=False)

        def run() -> None:
            try:
                done["result"] = match(person_model, ddf, client=c, chunk_size=500, progress=False)
            except BaseException as exc:  # reported by the assertion below
                done["error"] = exc

        worker = threading.Thread(target=run)
        worker.start()
        pids = c.run(os.getpid)
        victim = None
        deadline = time.monotonic() + 120
        while victim is None and worker.is_alive() and time.monotonic() < deadline:
            for addr, keys in c.processing().items():
                if any("score" in str(k) for k in keys):
                    victim = addr
                    break
            time.sleep(0.02)
        assert victim is not None and worker.is_alive(), "the run ended before a worker could be killed"
        os.kill(pids[victim], signal.SIGKILL)
        worker.join(300)
        assert "error" not in done, done.get("error")
    _same_result(done["result"], single)


def test_the_command_reads_a_parquet_folder_on_the_cluster_and_writes_parquet(client, person_model, persons,
                                                                               tmp_path, capsys):
    from skrisk.cli import main

    model = person_model.save(tmp_path / "m.skrisk")
    small = persons.iloc[:1_000].rename_axis(person_model.id_column)
    small.to_csv(tmp_path / "t.csv")
    (tmp_path / "folder").mkdir()
    for k, lo in enumerate(range(0, len(small), 400)):  # three files, the ids in the model's id column
        small.iloc[lo:lo + 400].reset_index().to_parquet(tmp_path / "folder" / f"part.{k}.parquet", index=False)
    base = ["match", "--model", str(model), "--no-progress"]
    assert main(base + ["--left", str(tmp_path / "t.csv"), "--out", str(tmp_path / "one")]) == 0
    assert main(base + ["--left", str(tmp_path / "folder"), "--out", str(tmp_path / "two"), "--scheduler",
                        client.scheduler.address, "--output-format", "parquet"]) == 0
    out = capsys.readouterr().out
    assert "matches.parquet" in out and "No blocking index written" in out
    one = pd.read_csv(tmp_path / "one" / "matches.csv", dtype={"left_id": str, "right_id": str})
    two = pd.read_parquet(tmp_path / "two" / "matches.parquet")
    assert len(one) > 10
    pd.testing.assert_frame_equal(one[["left_id", "right_id"]], two[["left_id", "right_id"]])
    np.testing.assert_allclose(one["probability"], two["probability"], atol=1e-6, rtol=0)
    ents_one = pd.read_csv(tmp_path / "one" / "entities.csv", dtype={"record_id": str})
    ents_two = pd.read_parquet(tmp_path / "two" / "entities.parquet")
    assert ents_one["record_id"].tolist() == ents_two["record_id"].astype(str).tolist()
    assert ents_one["entity_id"].tolist() == ents_two["entity_id"].tolist()
    # without a cluster a Parquet folder is refused, with the fix
    assert main(base + ["--left", str(tmp_path / "folder"), "--out", str(tmp_path / "three")]) == 2
    err = capsys.readouterr().err
    assert "Parquet folder" in err and "--workers N" in err
    assert not (tmp_path / "three").exists()


def test_a_number_identifier_column_is_decided_over_every_partition(client):
    """The typed rule's ``:id`` pass (a number column of mostly distinct values) is decided over
    all the records, not per partition: the partitions below hold few distinct values each, the
    whole table many."""
    table, links = make_person_table(3_000, random_state=5)
    table["member_no"] = [str(500_000 + i // 2) for i in range(len(table))]  # pairs of records share one
    cand = block(table, None, true_links=links).pairs
    train = PairDataset.from_table(table, cand.iloc[::10], split="train", name="members").to_frame()
    sf = SimilarityFeatures(types="auto").fit(train)
    assert sf.column_types_["member_no"]["type"] == "number"
    matcher = FeatureMatcher(random_state=0).fit(sf.transform(train), cand["label"].iloc[::10])
    model = MatchModel(list(table.columns), sf, matcher, task="dedup")
    one = match(model, table, progress=False)
    assert one.blocking.rule_sizes
    dist = match(model, dd.from_pandas(table, npartitions=7, sort=False), client=client, progress=False)
    _same_result(dist, one)
    assert dist.blocking.rule_sizes == one.blocking.rule_sizes
