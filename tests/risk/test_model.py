"""The torch risk model: truncated-normal VaR, aggregation, RankNet training."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from skrisk.risk import _model


@pytest.mark.parametrize("q", [0.1, 0.5, 0.9])
def test_truncnorm_ppf_matches_scipy(q):
    rng = np.random.default_rng(0)
    mu = np.r_[rng.uniform(0, 1, 50), 0.0, 1.0, 0.999, 0.001]
    sigma = np.r_[rng.uniform(0.005, 0.8, 50), 0.1, 0.1, 0.001, 0.3]
    ours = _model.truncnorm_ppf(torch.tensor(q, dtype=torch.float64), torch.tensor(mu), torch.tensor(sigma))
    ref = stats.truncnorm.ppf(q, (0 - mu) / sigma, (1 - mu) / sigma, loc=mu, scale=sigma)
    np.testing.assert_allclose(ours.numpy(), ref, rtol=1e-7, atol=1e-9)


def _params(J=3, K=4, seed=0, requires_grad=True):
    gen = torch.Generator().manual_seed(seed)
    mu = np.array([0.0, 1.0, 0.3])[:J]
    mt = np.where(np.r_[mu, np.full(K, 0.5)] <= 0, 0.1, np.r_[mu, np.full(K, 0.5)])
    return _model.init_params(mu, mt, 2, gen, torch.device("cpu"))


def test_forward_var_equals_scipy_truncated_normal_quantiles():
    params = _params()
    A = torch.tensor([[1, 0, 0], [0, 1, 1], [0, 0, 0], [1, 1, 0]], dtype=torch.float64)
    p = torch.tensor([0.2, 0.9, 0.6, 0.45], dtype=torch.float64)
    bins = (p * 4).long().clamp(max=3)
    risk, mu, sigma = _model.forward(params, _model.RiskInputs(A, p, bins), 0.9)
    # aggregation by hand
    with torch.no_grad():
        w, r, a, c = params.w, params.r, params.a, params.c
        g = a + 1 - torch.exp(-((p - 0.5) ** 2) / (2 * c**2))
        W = A @ w + g
        mu_ref = (A @ (w * params.mu) + g * p) / W
        var_ref = (A @ (w**2 * (r[:3] * params.mu_tilde[:3]) ** 2) + g**2 * (r[3:] * params.mu_tilde[3:])[bins] ** 2) / W**2
    np.testing.assert_allclose(mu.detach().numpy(), mu_ref.numpy(), rtol=1e-8)
    np.testing.assert_allclose(sigma.detach().numpy() ** 2, var_ref.numpy(), rtol=1e-6)
    m, s = mu.detach().numpy(), sigma.detach().numpy()
    a_, b_ = -m / s, (1 - m) / s
    upper = stats.truncnorm.ppf(0.9, a_, b_, loc=m, scale=s)  # label unmatch: upper 90% quantile
    lower = stats.truncnorm.ppf(0.1, a_, b_, loc=m, scale=s)  # label match: 1 - lower 10% quantile
    expected = np.where(p.numpy() >= 0.5, 1 - lower, upper)
    np.testing.assert_allclose(risk.detach().numpy(), expected, rtol=1e-7, atol=1e-10)


def test_no_rule_pair_rests_on_matcher_output():
    params = _params()
    A = torch.zeros((1, 3), dtype=torch.float64)
    p = torch.tensor([0.3], dtype=torch.float64)
    _, mu, sigma = _model.forward(params, _model.RiskInputs(A, p, torch.tensor([1])), 0.9)
    assert float(mu.detach()) == pytest.approx(0.3, abs=1e-8)
    assert float(sigma.detach()) == pytest.approx(float(params.r[4].detach() * params.mu_tilde[4]), rel=1e-6)


def test_gradients_match_finite_differences():
    params = _params()
    A = torch.tensor([[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]], dtype=torch.float64)
    p = torch.tensor([0.2, 0.8, 0.45, 0.6], dtype=torch.float64)
    x = _model.RiskInputs(A, p, (p * 4).long().clamp(max=3))
    z = torch.tensor([True, False, False, True])

    def f(w, r, a, c, s):
        pr = _model.RiskParams(w, r, a, c, s, params.mu, params.mu_tilde)
        risk, _, _ = _model.forward(pr, x, 0.9)
        return _model.ranknet_loss(risk, z, s) + _model._regulariser(pr, 1e-3, 1e-3)

    inputs = tuple(t.detach().clone().requires_grad_() for t in params.learnable())
    assert torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-5)


def test_ranknet_loss_counts_each_unordered_pair_once():
    risk = torch.tensor([0.9, 0.1, 0.2], dtype=torch.float64)
    z = torch.tensor([True, False, False])
    s = torch.tensor(2.0, dtype=torch.float64)
    expected = sum(np.log1p(np.exp(-2.0 * (0.9 - v))) for v in (0.1, 0.2))
    assert float(_model.ranknet_loss(risk, z, s)) == pytest.approx(expected)
    assert float(_model.ranknet_loss(risk, torch.zeros(3, dtype=torch.bool), s)) == 0.0


def _toy(n=600, seed=0):
    rng = np.random.default_rng(seed)
    J, K = 4, 10
    A = (rng.uniform(size=(n, J)) < 0.3).astype(float)
    p = rng.uniform(size=n)
    # pairs firing rule 0 are mispredicted more often
    z = rng.uniform(size=n) < np.where(A[:, 0] > 0, 0.5, 0.05)
    x = _model.RiskInputs(torch.tensor(A), torch.tensor(p), torch.tensor(np.minimum((p * K).astype(int), K - 1)))
    mu = np.array([0.5, 0.1, 0.9, 0.2])
    mt = np.r_[mu, np.full(K, 0.5)]
    return x, torch.tensor(z), mu, mt


@pytest.mark.parametrize("optimizer, lr", [("sgd", 1e-3), ("adam", 1e-2)])
def test_training_lowers_loss_and_respects_constraints(optimizer, lr):
    x, z, mu, mt = _toy()
    gen = torch.Generator().manual_seed(0)
    params = _model.init_params(mu, mt, 3, gen, torch.device("cpu"))
    hist = _model.train_risk_model(params, x, z, theta=0.9, epochs=30, batch_size=128, lr=lr,
                                   optimizer=optimizer, l1=1e-3, l2=1e-3, generator=gen)
    assert hist[-1] < hist[0]
    assert (params.w >= 0).all() and float(params.a.detach()) >= 0 and float(params.c.detach()) >= 0
    assert (params.r >= 0.1 - 1e-12).all() and (params.r <= 0.9 + 1e-12).all()


def test_training_is_deterministic_under_a_seeded_generator():
    x, z, mu, mt = _toy()
    outs = []
    for _ in range(2):
        gen = torch.Generator().manual_seed(5)
        params = _model.init_params(mu, mt, 3, gen, torch.device("cpu"))
        _model.train_risk_model(params, x, z, theta=0.9, epochs=5, batch_size=100, lr=1e-3,
                                optimizer="sgd", l1=1e-3, l2=1e-3, generator=gen)
        outs.append(torch.cat([t.detach().reshape(-1) for t in params.learnable()]))
    assert torch.equal(outs[0], outs[1])


def test_single_thread_restores_thread_count(two_torch_threads):
    before = torch.get_num_threads()
    assert before == 2
    with _model.single_thread(torch.device("cpu")):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
