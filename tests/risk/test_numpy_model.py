"""The numpy forward of LearnRisk's risk (prediction on the CPU) equals the torch one."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from skrisk import LearnRisk
from skrisk.matchers import FeatureMatcher
# internal on purpose: the two forwards compared
from skrisk.risk import _model, _numpy_model
from skrisk.risk.research import LearnRiskEstimator

TOL = 1e-12


def _torch_distribution(core: LearnRiskEstimator, X):
    """VaR, mean, std of ``X`` by the torch forward (the one training uses)."""
    F, p = core._transform_input(X)
    dev = torch.device("cpu")
    return _model.predict(core._params(dev), core._inputs(F, p, dev), float(core.theta))


def _assert_equal(core: LearnRiskEstimator, X) -> None:
    got = core.predict_distribution(X)
    want = _torch_distribution(core, X)
    for g, w in zip(got, want):
        assert g.dtype == np.float64 and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=0, atol=TOL)


def test_numpy_forward_equals_torch_on_beer(beer_risk):
    X_tr, y_tr = beer_risk["train"]
    X_v, y_v = beer_risk["valid"]
    core = LearnRiskEstimator(train_pairs=(X_tr, y_tr), epochs=40, random_state=0).fit(X_v, y_v)
    for split in ("train", "valid", "test"):
        _assert_equal(core, beer_risk[split][0])


def test_numpy_forward_equals_torch_around_a_forest():
    """LearnRisk around a FeatureMatcher on person pairs, as ``skrisk match`` scores with it."""
    from skrisk.data import PairDataset, SimilarityFeatures, block
    from skrisk.datasets import make_person_table

    table, links = make_person_table(3000, random_state=1)
    cand = block(table, None, true_links=links).pairs
    ds = PairDataset.from_table(table, cand, split="train", name="persons")
    sf = SimilarityFeatures().fit(ds.to_frame())
    F = sf.transform(ds.to_frame())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        risk = LearnRisk(FeatureMatcher(random_state=0), cv=3, epochs=20, random_state=0).fit(F, ds.y)
    assert risk.risk_model_ is not None
    core = risk.risk_model_
    p = risk.predict_proba(F)[:, 1]
    _assert_equal(core, risk._risk_input(F, p))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numpy_forward_equals_torch_at_the_edges(seed):
    """Random parameters, probabilities at 0, 0.5 and 1, pairs without a rule, wide and narrow
    distributions (the clamps of the truncated normal's quantile)."""
    rng = np.random.default_rng(seed)
    J, K, n = 7, 10, 400
    A = (rng.random((n, J)) < 0.3).astype(np.float64)
    A[:20] = 0.0
    p = rng.random(n)
    p[:6] = [0.0, 0.5, 1.0, 1e-15, 1 - 1e-15, 0.5 + 1e-15]
    bins = np.minimum((p * K).astype(np.intp), K - 1)
    kw = dict(w=rng.random(J) * 3, r=0.1 + 0.8 * rng.random(J + K), a=float(rng.random() * 2),
              c=float(rng.random() + 0.01), mu=rng.random(J), mu_tilde=np.maximum(rng.random(J + K), 0.1))
    for theta in (0.51, 0.9, 0.999):
        got = _numpy_model.predict(A=A, p=p, bins=bins, theta=theta, **kw)
        t = lambda v: torch.as_tensor(np.asarray(v, dtype=np.float64))  # noqa: E731
        params = _model.RiskParams(w=t(kw["w"]), r=t(kw["r"]), a=t(kw["a"]), c=t(kw["c"]), s=t(1.0),
                                   mu=t(kw["mu"]), mu_tilde=t(kw["mu_tilde"]))
        x = _model.RiskInputs(t(A), t(p), torch.as_tensor(bins, dtype=torch.int64))
        want = _model.predict(params, x, theta)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=0, atol=TOL)
        g_np = _numpy_model.matcher_weight(p, kw["a"], kw["c"])
        g_t = _model.matcher_weight(t(p), t(kw["a"]), t(kw["c"])).numpy()
        np.testing.assert_allclose(g_np, g_t, rtol=0, atol=TOL)


def test_empty_input():
    risk, mu, std = _numpy_model.predict(A=np.zeros((0, 2)), p=np.zeros(0), bins=np.zeros(0, dtype=int),
                                         w=np.ones(2), r=np.full(5, 0.5), a=1.0, c=0.5, mu=np.ones(2),
                                         mu_tilde=np.full(5, 0.5), theta=0.9)
    assert risk.shape == mu.shape == std.shape == (0,)
