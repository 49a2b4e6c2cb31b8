"""dask_query without a distributed cluster: dask's local scheduler gives the same batch."""

from __future__ import annotations

import numpy as np
import pytest

dask = pytest.importorskip("dask", reason="needs the optional extra skrisk[dask]")
dd = pytest.importorskip("dask.dataframe", reason="needs the optional extra skrisk[dask]")

from skrisk.pools import ChunkScorer, dask_query, stream_query  # noqa: E402
from skrisk.strategies import KMedoidsSelector, RiskSampler  # noqa: E402


def test_local_scheduler_gives_the_streamed_batch(febrl):
    distributed = pytest.importorskip("distributed")
    with pytest.raises(ValueError):  # no distributed client in this process now
        distributed.get_client()
    scorer = ChunkScorer(febrl.ds.left, febrl.ds.right, features=febrl.sf, matcher=febrl.matcher,
                         risk_model=febrl.risk)
    kw = {"labelled": febrl.labelled, "n_instances": 15, "random_state": 3, "progress": False}
    ref = stream_query(scorer, febrl.pool, chunk_size=900, **kw)
    with dask.config.set(scheduler="synchronous"):
        q = dask_query(scorer, dd.from_pandas(febrl.pool, npartitions=3), chunk_size=400, **kw)
    np.testing.assert_array_equal(q.positions, ref.positions)
    assert q.pairs.equals(ref.pairs) and q.n_pairs == ref.n_pairs
    # the selection parameters come from a RiskSampler, alike in both
    sampler = RiskSampler(selector=KMedoidsSelector(weighting="risk", preselect=3, device="cpu"))
    ref = stream_query(scorer, febrl.pool, chunk_size=900, sampler=sampler, **kw)
    with dask.config.set(scheduler="synchronous"):
        q = dask_query(scorer, dd.from_pandas(febrl.pool, npartitions=3), chunk_size=400, sampler=sampler, **kw)
    np.testing.assert_array_equal(q.positions, ref.positions)
    assert q.n_candidates == ref.n_candidates == 45
