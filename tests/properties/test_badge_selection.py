"""Property tests (hypothesis) of risk-weighted BADGE, ``BadgeSelector`` (issue #27)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from skrisk.strategies import BadgeSelector

FAST = settings(max_examples=40, deadline=None)


@FAST
@given(st.integers(2, 40), st.integers(1, 6), st.integers(0, 2**31 - 1), st.floats(0.0, 0.9))
def test_badge_batch_is_distinct_and_prefers_pairs_at_risk(n, h, seed, zero_share):
    """A batch of distinct rows, reproducible by seed; a zero-risk row is drawn only once every row
    at risk is drawn or lies on a row already drawn (it adds nothing then); unit weights ignore the
    risk altogether."""
    rng = np.random.RandomState(seed)
    k = int(rng.randint(1, n + 1))
    rep = rng.normal(size=(n, h)).astype(np.float32)
    proba = rng.uniform(0.01, 0.99, size=n)
    risk = rng.uniform(0.0, 1.0, size=n) * (rng.uniform(size=n) >= zero_share)
    out = BadgeSelector(device="cpu").select(risk, rep, None, k, proba=proba, random_state=seed)
    pos = out.positions
    assert len(pos) == k and len(np.unique(pos)) == k and pos.min() >= 0 and pos.max() < n
    assert out.kmedoids is None
    np.testing.assert_array_equal(np.sort(risk[pos])[::-1], risk[pos])  # riskiest first
    at_risk = np.flatnonzero(risk > 0)
    if (risk[pos] == 0).any():
        assert set(at_risk) <= set(pos)
    again = BadgeSelector(device="cpu").select(risk, rep, None, k, proba=proba, random_state=seed)
    np.testing.assert_array_equal(again.positions, pos)
    unit = BadgeSelector(weighting="unit", device="cpu").select(np.zeros(n), rep, None, k, proba=proba,
                                                               random_state=seed)
    assert len(np.unique(unit.positions)) == k


@FAST
@given(st.lists(st.floats(0.001, 0.999), min_size=1, max_size=20), st.integers(1, 5))
def test_badge_embedding_norm_is_the_uncertainty(probs, h):
    """The compact gradient embedding a * h: |a| is min(p, 1 - p) (the distance to the decision),
    its sign the predicted class; a confident pair lies near the origin."""
    from skrisk.strategies._batch import badge_embedding  # internal on purpose: the embedding itself

    p = np.asarray(probs)
    rep = np.ones((len(p), h))
    G = badge_embedding(p, rep)
    a = G[:, 0].astype(np.float64)
    np.testing.assert_allclose(np.abs(a), np.minimum(p, 1 - p), rtol=1e-6, atol=1e-7)
    assert ((a > 0) == (p > 0.5)).all()
