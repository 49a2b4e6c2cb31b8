"""stream_query and PairSource: a pool read chunk by chunk, the batch of risk sampling."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from skrisk.exceptions import DataError, EmptyPoolError
from skrisk.pools import ChunkScorer, PairSource, PoolQuery, stream_query
from skrisk.strategies import KMedoidsSelector, RiskSampler


@pytest.fixture(scope="module")
def scorer(febrl):
    return ChunkScorer(febrl.ds.left, febrl.ds.right, features=febrl.sf, matcher=febrl.matcher,
                       risk_model=febrl.risk)


def _query(scorer, febrl, source, **kw):
    kw = {"labelled": febrl.labelled, "n_instances": 20, "random_state": 0, "progress": False, **kw}
    return stream_query(scorer, source, **kw)


def _same(a: PoolQuery, b: PoolQuery) -> None:
    np.testing.assert_array_equal(a.positions, b.positions)
    pd.testing.assert_frame_equal(a.pairs, b.pairs)
    np.testing.assert_array_equal(a.risk, b.risk)


def test_batch_does_not_depend_on_the_chunk_size(scorer, febrl):
    pool = febrl.pool
    one = _query(scorer, febrl, pool, chunk_size=len(pool))  # the whole pool as one chunk
    assert isinstance(one, PoolQuery) and len(one.positions) == 20
    assert one.n_pairs == len(pool) and one.n_candidates == 40
    for size in (1_000, 10_000, 97):
        _same(_query(scorer, febrl, pool, chunk_size=size), one)
    # the positions are the pairs' rows in the source, riskiest first
    assert (pool.iloc[one.positions].to_numpy() == one.pairs.to_numpy()).all()
    assert (np.diff(one.risk) <= 0).all()
    # the batch lies among the pool's 2 * n_instances riskiest pairs
    risk_all = scorer.score(pool).risk
    assert one.risk.min() >= np.sort(risk_all)[::-1][39]
    np.testing.assert_allclose(one.risk, risk_all[one.positions])
    # the kernel ran with the labelled pairs fixed, and chose spread-out pairs
    assert one.kmedoids.selected.size == 20 and len(np.unique(one.positions)) == 20
    assert set(one.timings) >= {"score", "merge", "weights", "kmedoids", "total"}


def test_the_batch_is_risk_samplings_core_over_the_candidates(scorer, febrl):
    """One selection core: the streamed batch is the sampler's selector over the candidates, here
    the whole pool (``preselect`` large enough to keep every pair)."""
    pool = febrl.pool
    selector = KMedoidsSelector(preselect=len(pool), weighting="lipschitz")
    sampler = RiskSampler(selector=selector, random_state=0)
    q = _query(scorer, febrl, pool, n_instances=1, sampler=sampler, chunk_size=1_000)
    whole = scorer.score(pool, representation=True)
    rep_lab = scorer.score(febrl.labelled, representation=True).representation
    ref = selector.select(whole.risk, whole.representation, rep_lab, 1, random_state=0)
    assert q.n_candidates == len(pool)
    np.testing.assert_array_equal(q.positions, ref.positions)
    # the selection keywords of 0.1 are gone: the sampler's selector is the one place
    with pytest.raises(TypeError, match="preselect"):
        _query(scorer, febrl, pool, preselect=3)


def test_same_batch_from_every_kind_of_source(scorer, febrl, tmp_path):
    pool = febrl.pool
    ref = _query(scorer, febrl, pool, chunk_size=1_000)
    parts = [pool.iloc[i:i + 700] for i in range(0, len(pool), 700)]
    _same(_query(scorer, febrl, iter(parts), chunk_size=1_000), ref)  # chunks of another size
    _same(_query(scorer, febrl, lambda: (p for p in parts)), ref)
    pool.iloc[:1500].to_parquet(tmp_path / "part-0.parquet", row_group_size=400)
    pool.iloc[1500:].to_parquet(tmp_path / "part-1.parquet", row_group_size=400)
    _same(_query(scorer, febrl, tmp_path, chunk_size=300), ref)
    _same(_query(scorer, febrl, PairSource(str(tmp_path)), chunk_size=1_000), ref)
    single = tmp_path / "one.parquet"
    pool.to_parquet(single)
    _same(_query(scorer, febrl, single), ref)


def test_labelled_pairs_are_left_out(scorer, febrl):
    lab = febrl.labelled
    pool = pd.concat([lab.iloc[:100], febrl.pool], ignore_index=True)
    q = _query(scorer, febrl, pool, chunk_size=500)
    assert q.n_filtered == {"labelled": 100, "self_pairs": 0}
    assert q.n_pairs == len(febrl.pool)
    assert (q.positions >= 100).all()
    with pytest.raises(EmptyPoolError, match=r"the pool is empty after filtering: .* held 100 pairs; "
                                             r"100 were labelled already"):
        _query(scorer, febrl, lab.iloc[:100])
    with pytest.raises(EmptyPoolError, match="fewer than n_instances=20"):
        _query(scorer, febrl, febrl.pool.iloc[:10])


def test_without_labelled_pairs_or_risk_model(febrl):
    plain = ChunkScorer(febrl.ds.left, febrl.ds.right, features=febrl.sf, matcher=febrl.matcher)
    q = stream_query(plain, febrl.pool, labelled=None, n_instances=10, random_state=0, progress=False)
    p = plain.score(febrl.pool).proba
    np.testing.assert_allclose(q.risk, np.minimum(p, 1 - p)[q.positions])


def test_dedup_leaves_out_self_pairs_and_mirrored_labels(febrl):
    table = febrl.ds.left
    scorer = ChunkScorer(table, table, features=febrl.sf, matcher=febrl.matcher)
    ids = table.index.to_numpy()
    rng = np.random.RandomState(1)
    pool = pd.DataFrame({"left_id": rng.choice(ids, 400), "right_id": rng.choice(ids, 400)})
    pool.loc[:4, "right_id"] = pool.loc[:4, "left_id"]  # 5 self-pairs
    labelled = pool.iloc[10:15].rename(columns={"left_id": "right_id", "right_id": "left_id"})
    q = stream_query(scorer, pool, labelled=labelled, n_instances=5, chunk_size=150,
                     random_state=0, progress=False)
    assert q.n_filtered == {"labelled": 5, "self_pairs": 5}
    assert not set(q.positions) & (set(range(5)) | set(range(10, 15)))


def test_chunks_that_disagree_in_columns(scorer, febrl, tmp_path):
    pool = febrl.pool
    chunks = [pool.iloc[:100], pool.iloc[100:200].assign(score=1.0)]
    with pytest.raises(DataError, match=r"chunk 1 has the columns \['left_id', 'right_id', 'score'\] "
                                        r"but chunk 0 had \['left_id', 'right_id'\]"):
        _query(scorer, febrl, chunks)
    with pytest.raises(DataError, match=r"chunk 0 has the columns \['l', 'right_id'\], without "
                                        r"\['left_id'\]"):
        _query(scorer, febrl, [pool.rename(columns={"left_id": "l"})])
    with pytest.raises(DataError, match="chunk 1 is a ndarray, not a pandas DataFrame"):
        _query(scorer, febrl, [pool.iloc[:50], pool.to_numpy()])
    pool.iloc[:100].to_parquet(tmp_path / "a.parquet")
    pool.iloc[100:200].rename(columns={"right_id": "rid"}).to_parquet(tmp_path / "b.parquet")
    with pytest.raises(DataError, match=r"chunk 1 \(file '.*b\.parquet'\) has the columns "
                                        r"\['left_id', 'rid'\] but chunk 0 had"):
        _query(scorer, febrl, tmp_path)


def test_bad_ids_name_the_pool_row(scorer, febrl):
    pool = febrl.pool.iloc[:300].copy()
    pool.loc[250, "left_id"] = "nobody"
    with pytest.raises(DataError, match=r"chunk 2: left_id 'nobody' is not an id of the left table "
                                        r"at pool row 250"):
        _query(scorer, febrl, pool, chunk_size=100)


def test_bad_sources_and_parameters(scorer, febrl, tmp_path):
    gen = (c for c in [febrl.pool])
    src = PairSource(gen)
    _query(scorer, febrl, src)
    with pytest.raises(RuntimeError, match="read already: give a function"):
        _query(scorer, febrl, src)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        PairSource(tmp_path / "nothing.parquet")
    (tmp_path / "x.parquet").write_text("left_id,right_id\na,b\n")
    with pytest.raises(DataError, match="cannot be read as Parquet"):
        PairSource(tmp_path / "x.parquet")
    with pytest.raises(TypeError, match="PairSource takes"):
        PairSource(42)
    with pytest.raises(ValueError, match=r"The 'preselect' parameter of KMedoidsSelector must be None or a "
                       r"float in the range \[1, inf\)\. Got 0.5 instead\."):
        _query(scorer, febrl, febrl.pool, sampler=RiskSampler(selector=KMedoidsSelector(preselect=0.5)))
    with pytest.raises(ValueError, match="preselect must be a number >= 1"):
        _query(scorer, febrl, febrl.pool, sampler=RiskSampler(selector=KMedoidsSelector(preselect=None)))
    with pytest.raises(TypeError, match="sampler must be a skrisk.RiskSampler"):
        _query(scorer, febrl, febrl.pool, sampler="risk")
    with pytest.raises(ValueError, match="n_instances must be a positive int"):
        _query(scorer, febrl, febrl.pool, n_instances=0)
    with pytest.raises(ValueError, match="chunk_size must be a positive int"):
        _query(scorer, febrl, febrl.pool, chunk_size=0)


def test_progress_bar_counts_pairs(scorer, febrl, capsys):
    _query(scorer, febrl, febrl.pool, progress=True, chunk_size=1_000)
    err = capsys.readouterr().err
    assert "scoring pairs" in err and "pairs" in err


def test_a_deduplication_pool_never_chooses_a_pair_and_its_mirror(febrl):
    """Issue #48, the rest of item 6: (a, b) and (b, a) of one table are one candidate."""
    table = febrl.ds.left
    scorer = ChunkScorer(table, None, features=febrl.sf, matcher=febrl.matcher, risk_model=febrl.risk)
    ids = table.index.to_numpy()
    pairs = pd.DataFrame({"left_id": ids[:40], "right_id": ids[40:80]})
    mirrored = pd.concat([pairs, pairs.rename(columns={"left_id": "right_id", "right_id": "left_id"})],
                         ignore_index=True)[["left_id", "right_id"]]
    kw = {"labelled": None, "n_instances": 10, "random_state": 0, "progress": False}
    q = stream_query(scorer, [mirrored.iloc[:30], mirrored.iloc[30:]], **kw)
    unordered = {tuple(sorted(p)) for p in zip(q.pairs["left_id"], q.pairs["right_id"])}
    assert len(unordered) == 10
    once = stream_query(scorer, pairs, **kw)
    assert unordered == {tuple(sorted(p)) for p in zip(once.pairs["left_id"], once.pairs["right_id"])}
