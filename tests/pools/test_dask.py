"""dask_query and dask_block on a LocalCluster of two worker processes (skipped without Dask)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask", reason="needs the optional extra skrisk[dask]")
distributed = pytest.importorskip("distributed", reason="needs the optional extra skrisk[dask]")
dd = pytest.importorskip("dask.dataframe", reason="needs the optional extra skrisk[dask]")

from skrisk.data import block  # noqa: E402
from skrisk.exceptions import DataError, EmptyPoolError  # noqa: E402
from skrisk.pools import ChunkScorer, dask_block, dask_query, stream_query
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.pools._dask import WorkerLostError


@pytest.fixture(scope="module")
def client():
    # a worker that dies fails its task at once (the default retries it on another worker 3 times)
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None)
        c = distributed.Client(cluster)
        try:
            yield c
        finally:
            c.close()
            cluster.close()


@pytest.fixture(scope="module")
def scorer(febrl):
    return ChunkScorer(febrl.ds.left, febrl.ds.right, features=febrl.sf, matcher=febrl.matcher,
                       risk_model=febrl.risk)


def _kw(febrl, **kw):
    return {"labelled": febrl.labelled, "n_instances": 20, "random_state": 0, "progress": False, **kw}


def _same(a, b):
    np.testing.assert_array_equal(a.positions, b.positions)
    pd.testing.assert_frame_equal(a.pairs, b.pairs)
    np.testing.assert_array_equal(a.risk, b.risk)


def test_dask_batch_equals_the_streamed_batch(client, scorer, febrl):
    pool = pd.concat([febrl.labelled.iloc[:50], febrl.pool], ignore_index=True)
    ref = stream_query(scorer, pool, chunk_size=1_000, **_kw(febrl))
    q = dask_query(scorer, dd.from_pandas(pool, npartitions=4), client=client, chunk_size=500,
                   **_kw(febrl))
    _same(q, ref)
    assert q.n_pairs == ref.n_pairs and q.n_filtered == ref.n_filtered == {"labelled": 50, "self_pairs": 0}
    assert (pool.iloc[q.positions].to_numpy() == q.pairs.to_numpy()).all()
    assert q.timings["partition_seconds"] > 0
    # other partitioning, same batch
    _same(dask_query(scorer, dd.from_pandas(pool, npartitions=7), client=client, **_kw(febrl)), ref)


def test_bad_dask_frames(client, scorer, febrl):
    ddf = dd.from_pandas(febrl.pool.rename(columns={"right_id": "rid"}), npartitions=2)
    with pytest.raises(DataError, match=r"lacks the column\(s\) \['right_id'\] \(its columns: "
                                        r"\['left_id', 'rid'\]\)"):
        dask_query(scorer, ddf, client=client, **_kw(febrl))
    bad = febrl.pool.iloc[:400].copy()
    bad.loc[350, "right_id"] = "nobody"
    with pytest.raises(DataError, match=r"partition 1: right_id 'nobody' is not an id of the right "
                                        r"table at row 150"):
        dask_query(scorer, dd.from_pandas(bad, npartitions=2), client=client, **_kw(febrl))
    with pytest.raises(EmptyPoolError, match="empty after filtering"):
        dask_query(scorer, dd.from_pandas(febrl.labelled, npartitions=2), client=client, **_kw(febrl))
    with pytest.raises(TypeError, match="stream_query"):
        dask_query(scorer, febrl.pool, client=client, **_kw(febrl))


class _SlowMatcher:
    """On a worker, announces its process in a file, then takes its time (so it can be killed)."""

    def __init__(self, matcher, flag):
        self.matcher, self.flag, self.client_pid = matcher, flag, os.getpid()

    def predict_proba(self, X):
        if os.getpid() != self.client_pid:  # the labelled pairs are scored on the client
            try:  # the first task to get here waits to be killed; the others go on
                fd = os.open(self.flag + ".tmp", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return self.matcher.predict_proba(X)
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            os.replace(self.flag + ".tmp", self.flag)
            time.sleep(30)
        return self.matcher.predict_proba(X)


def test_a_dying_worker_fails_the_query_cleanly_and_it_can_be_retried(client, scorer, febrl, tmp_path):
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import tests
    flag = tmp_path / "worker.pid"
    slow = ChunkScorer(febrl.ds.left, febrl.ds.right, features=febrl.sf,
                       matcher=_SlowMatcher(febrl.matcher, str(flag)))
    ddf = dd.from_pandas(febrl.pool, npartitions=2)

    def kill_when_started():
        for _ in range(600):
            if flag.exists() and flag.read_text():
                os.kill(int(flag.read_text()), signal.SIGKILL)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_when_started)
    killer.start()
    try:
        with pytest.raises(WorkerLostError, match="lost a worker .* No batch was chosen .* run the "
                                                  "query again"):
            dask_query(slow, ddf, client=client, **_kw(febrl))
    finally:
        killer.join()
    client.wait_for_workers(2, timeout=120)
    # the retry (a scorer without risk model: the restarted worker need not import torch)
    plain = ChunkScorer(febrl.ds.left, febrl.ds.right, features=febrl.sf, matcher=febrl.matcher)
    ref = stream_query(plain, febrl.pool, **_kw(febrl))
    _same(dask_query(plain, ddf, client=client, **_kw(febrl)), ref)


def _brute_tokens(left, right, col, max_block_size, dedup=False):
    import re

    words = re.compile(r"(?u)\b\w+\b")

    def toks(t):
        return {w for w in words.findall(str(t).strip().lower())} if pd.notna(t) else set()

    lt = {i: toks(v) for i, v in left[col].items()}
    rt = lt if dedup else {i: toks(v) for i, v in right[col].items()}
    count = {}
    for d in ([lt] if dedup else [lt, rt]):
        for ts in d.values():
            for t in ts:
                count[t] = count.get(t, 0) + 1
    out = set()
    for a, ta in lt.items():
        ta = {t for t in ta if count[t] <= max_block_size}
        for b, tb in rt.items():
            if ta & tb and (not dedup or str(a) < str(b)):
                out.add((str(a), str(b)))
    return out


def test_dask_block_tokens_and_standard(client, febrl):
    left, right = febrl.ds.left.iloc[:300], febrl.ds.right.iloc[:300]
    dl, dr = dd.from_pandas(left, npartitions=3), dd.from_pandas(right, npartitions=2)
    got = dask_block(dl, dr, on="surname", max_block_size=20).compute()
    assert list(got.columns) == ["left_id", "right_id"]
    pairs = set(map(tuple, got.to_numpy()))
    assert len(pairs) == len(got)  # each pair once
    assert pairs == _brute_tokens(left, right, "surname", 20)
    std = dask_block(dl, dr, on=["postcode", "state"], method="standard").compute()
    ref = block(left, right, [("standard", ["postcode", "state"])]).pairs
    assert set(map(tuple, std.to_numpy())) == set(map(tuple, ref.to_numpy()))
    # deduplication: within one table, each unordered pair once
    dedup = dask_block(dl, on="given_name", max_block_size=30).compute()
    assert set(map(tuple, dedup.to_numpy())) == _brute_tokens(left, left, "given_name", 30, dedup=True)
    with pytest.raises(DataError, match=r"the right table lacks the column\(s\) \['surname'\]"):
        dask_block(dl, dr.rename(columns={"surname": "nope"}), on="surname")
