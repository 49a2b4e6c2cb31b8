"""ChunkScorer: one chunk of pairs -> features, probabilities, risks, representations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from skrisk.data import PairDataset, SimilarityFeatures
from skrisk.exceptions import DataError, NotFittedError
from skrisk.matchers import FeatureMatcher
from skrisk.pools import ChunkScorer
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.pools._scorer import ScoredChunk


def _direct(f, pairs):
    """The same numbers the long way: a PairDataset's frame through the fitted models."""
    sub = PairDataset.from_frames(f.ds.left, f.ds.right, pairs)
    F = f.sf.transform(sub.to_frame()).astype(np.float64)
    return F, f.matcher.predict_proba(F)[:, 1], f.risk.predict_risk(F)


def test_score_equals_the_models_applied_directly(febrl):
    scorer = ChunkScorer(febrl.ds.left, febrl.ds.right, features=febrl.sf, matcher=febrl.matcher,
                         risk_model=febrl.risk)
    assert scorer._encoded is not None  # the tables are encoded once; a chunk costs its comparisons
    chunk = febrl.pool.iloc[:700]
    out = scorer.score(chunk, representation=True)
    F, p, r = _direct(febrl, chunk)
    assert isinstance(out, ScoredChunk) and len(out) == 700
    assert out.pairs.columns.tolist() == ["left_id", "right_id"]
    assert (out.pairs.to_numpy() == chunk.to_numpy()).all()
    np.testing.assert_allclose(out.proba, p)
    np.testing.assert_allclose(out.risk, r, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(out.representation, febrl.matcher.represent(F), rtol=1e-5, atol=1e-5)
    assert out.representation.dtype == np.float32
    assert out.labels.tolist() == (p > 0.5).astype(int).tolist()
    assert scorer.task == "link"


def test_a_pair_scores_the_same_in_any_chunk(febrl):
    scorer = ChunkScorer(febrl.ds.left, febrl.ds.right, features=febrl.sf, matcher=febrl.matcher,
                         risk_model=febrl.risk)
    chunk = febrl.pool.iloc[:500]
    whole = scorer.score(chunk, representation=True)
    parts = [scorer.score(chunk.iloc[i:i + 77], representation=True) for i in range(0, 500, 77)]
    np.testing.assert_array_equal(whole.proba, np.concatenate([p.proba for p in parts]))
    # the risk's rule sums are one matmul, whose kernel some CPUs pick by the number of rows: on
    # an AMD EPYC VM 12 of these 500 risks came out one unit in the last place apart (2.9e-16)
    np.testing.assert_allclose(whole.risk, np.concatenate([p.risk for p in parts]), rtol=1e-13, atol=0)
    np.testing.assert_array_equal(whole.representation,
                                  np.concatenate([p.representation for p in parts]))


def test_threshold_and_no_risk_model(febrl):
    scorer = ChunkScorer(febrl.ds.left, febrl.ds.right, features=febrl.sf, matcher=febrl.matcher,
                         threshold=0.9)
    out = scorer.score(febrl.pool.iloc[:300])
    assert out.risk is None and out.representation is None
    assert out.labels.tolist() == (out.proba > 0.9).astype(int).tolist()
    empty = scorer.score(febrl.pool.iloc[:0], representation=True)
    assert len(empty) == 0 and empty.proba.shape == (0,)


def test_matcher_fitted_on_pair_frames(febrl):
    """A FeatureMatcher fitted on pair frames gets the pair frame (it computes its own features)."""
    frame = febrl.train.to_frame()
    m = FeatureMatcher(features=SimilarityFeatures(metrics=["jaccard"]), random_state=0)
    m.fit(frame, febrl.train.y)
    scorer = ChunkScorer(febrl.ds.left, febrl.ds.right, features=febrl.sf, matcher=m)
    chunk = febrl.pool.iloc[:200]
    out = scorer.score(chunk, representation=True)
    sub = PairDataset.from_frames(febrl.ds.left, febrl.ds.right, chunk).to_frame()
    np.testing.assert_allclose(out.proba, m.predict_proba(sub)[:, 1])
    np.testing.assert_allclose(out.representation, m.represent(sub), rtol=1e-5, atol=1e-5)


def test_any_classifier_on_the_features(febrl):
    """A plain sklearn classifier: probabilities on the features, representation = the features."""
    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression().fit(febrl.F_train, febrl.train.y)
    scorer = ChunkScorer(febrl.ds.left, febrl.ds.right, features=febrl.sf, matcher=clf)
    chunk = febrl.pool.iloc[:100]
    out = scorer.score(chunk, representation=True)
    F, _, _ = _direct(febrl, chunk)
    np.testing.assert_allclose(out.proba, clf.predict_proba(F)[:, 1])
    np.testing.assert_allclose(out.representation, F.astype(np.float32))


def test_dedup_right_is_left(febrl):
    table = febrl.ds.left
    scorer = ChunkScorer(table, table, features=febrl.sf, matcher=febrl.matcher)
    assert scorer.task == "dedup"
    assert ChunkScorer(table, None, features=febrl.sf, matcher=febrl.matcher).task == "dedup"
    ids = table.index.to_numpy()
    chunk = pd.DataFrame({"left_id": ids[:50], "right_id": ids[50:100]})
    out = scorer.score(chunk)
    sub = PairDataset.from_frames(table, table, chunk)
    np.testing.assert_allclose(
        out.proba, febrl.matcher.predict_proba(febrl.sf.transform(sub.to_frame()).astype(float))[:, 1])
    bad = pd.DataFrame({"left_id": [ids[0]], "right_id": ["rec-1070-dup-0"]})
    with pytest.raises(DataError, match=r"'rec-1070-dup-0' is not an id of the table at row 0"):
        scorer.score(bad)


def test_bad_chunks_are_named(febrl):
    scorer = ChunkScorer(febrl.ds.left, febrl.ds.right, features=febrl.sf, matcher=febrl.matcher)
    chunk = febrl.pool.iloc[:5].copy()
    chunk.loc[3, "right_id"] = "nobody"
    with pytest.raises(DataError, match=r"right_id 'nobody' is not an id of the right table at row 3"):
        scorer.score(chunk)
    chunk.loc[3, "right_id"] = None
    with pytest.raises(DataError, match=r"right_id is missing at row 3"):
        scorer.score(chunk)
    with pytest.raises(DataError, match=r"lacks the column\(s\) \['right_id'\]"):
        scorer.score(chunk.rename(columns={"right_id": "rid"}))
    with pytest.raises(TypeError, match="DataFrame"):
        scorer.score(chunk.to_numpy())


def test_bad_models_and_tables(febrl):
    left, right = febrl.ds.left, febrl.ds.right
    with pytest.raises(NotFittedError):
        ChunkScorer(left, right, features=SimilarityFeatures(), matcher=febrl.matcher)
    with pytest.raises(TypeError, match="predict_proba"):
        ChunkScorer(left, right, features=febrl.sf, matcher=object())
    with pytest.raises(DataError, match=r"lacks the attribute column\(s\) \['surname'\]"):
        ChunkScorer(left, right.drop(columns="surname"), features=febrl.sf, matcher=febrl.matcher)
    dup = pd.concat([right.iloc[:3], right.iloc[:1]])
    with pytest.raises(DataError, match="duplicate record ids"):
        ChunkScorer(left, dup, features=febrl.sf, matcher=febrl.matcher)
    with pytest.raises(ValueError, match="threshold"):
        ChunkScorer(left, right, features=febrl.sf, matcher=febrl.matcher, threshold=2)


def test_invalid_probabilities_are_refused(febrl):
    class Broken:
        def predict_proba(self, X):
            P = np.full((len(X), 2), 0.5)
            P[2] = np.nan
            return P

    scorer = ChunkScorer(febrl.ds.left, febrl.ds.right, features=febrl.sf, matcher=Broken())
    with pytest.raises(DataError, match="invalid probabilities .* first at row 2"):
        scorer.score(febrl.pool.iloc[:5])


def test_rnn_matcher_through_its_pipeline(febrl):
    """make_rnn_pipeline's PairEncoder + RNNMatcher gets pair frames; one pass gives both."""
    import torch

    # internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
    from skrisk.matchers._rnn import make_rnn_pipeline

    pipe = make_rnn_pipeline(max_length=8, hidden_size=8, classifier_size=16, max_epochs=1,
                             train_split=None, verbose=0, random_state=0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a 1-epoch toy fit: threads only add contention
    try:
        pipe.fit(febrl.train.to_frame(), febrl.train.y)
    finally:
        torch.set_num_threads(threads)
    scorer = ChunkScorer(febrl.ds.left, febrl.ds.right, features=febrl.sf, matcher=pipe)
    chunk = febrl.pool.iloc[:64]
    out = scorer.score(chunk, representation=True)
    sub = PairDataset.from_frames(febrl.ds.left, febrl.ds.right, chunk).to_frame()
    np.testing.assert_allclose(out.proba, pipe.predict_proba(sub)[:, 1], rtol=1e-5, atol=1e-6)
    H = pipe[-1].represent(pipe[:-1].transform(sub))
    np.testing.assert_allclose(out.representation, H, rtol=1e-5, atol=1e-6)
    assert out.representation.shape == (64, 16)


def test_n_jobs_is_checked_and_does_not_change_the_scores(febrl):
    with pytest.raises(ValueError, match="n_jobs"):
        ChunkScorer(febrl.ds.left, febrl.ds.right, features=febrl.sf, matcher=febrl.matcher, n_jobs=0)
    chunk = febrl.pool.iloc[:300]
    one = ChunkScorer(febrl.ds.left, febrl.ds.right, features=febrl.sf, matcher=febrl.matcher, n_jobs=1)
    two = ChunkScorer(febrl.ds.left, febrl.ds.right, features=febrl.sf, matcher=febrl.matcher, n_jobs=2)
    np.testing.assert_array_equal(one.score(chunk).proba, two.score(chunk).proba)
