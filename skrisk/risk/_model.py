"""LearnRisk's risk model in torch (float64): aggregation, truncated-normal VaR, RankNet training.

Follows ``../shared/docs/learnrisk.md`` sections 2-4. Everything is vectorised over the pairs of a
batch; the pairwise RankNet loss is a ``(n_mispredicted, n_correct)`` matrix per batch.

Notation per pair ``i``: fired rules ``x_ij``, matcher probability ``p_i`` in bin ``b(i)``,
machine label ``yhat_i = 1[p_i > 0.5]`` (:data:`~skrisk.matchers.MATCH_THRESHOLD`; a tie is a
non-match)::

    g_i   = a + 1 - exp(-(p_i - 0.5)^2 / (2 c^2))
    W_i   = sum_j w_j x_ij + g_i
    mu_i  = (sum_j w_j x_ij mu_j + g_i p_i) / W_i
    var_i = (sum_j w_j^2 x_ij (r_j mu~_j)^2 + g_i^2 (r_b mu~_b)^2) / W_i^2
    VaR_i = F^-1(theta)          if yhat_i = 0   (F: N(mu_i, var_i) truncated to [0, 1])
            1 - F^-1(1 - theta)  if yhat_i = 1
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import numpy.typing as npt
import torch

from .._device import torch_threads
from ..matchers._base import MATCH_THRESHOLD

__all__ = [
    "RiskParams", "RiskInputs", "matcher_weight", "truncnorm_ppf", "forward", "ranknet_loss",
    "train_risk_model",
]

EPS = 1e-10
_CLAMP = 1e-12


@dataclass
class RiskInputs:
    """Per-pair tensors of the model (all on one device).

    Attributes
    ----------
    A : Tensor (n, J) float64
        Rule activations (0/1).
    p : Tensor (n,) float64
        Matcher match probabilities.
    bins : Tensor (n,) int64
        Probability bin of each pair.
    """

    A: torch.Tensor
    p: torch.Tensor
    bins: torch.Tensor

    def take(self, idx: torch.Tensor) -> "RiskInputs":
        """The rows at ``idx``."""
        return RiskInputs(self.A[idx], self.p[idx], self.bins[idx])


@dataclass
class RiskParams:
    """Learnable parameters plus the fixed expectations.

    Attributes
    ----------
    w : Tensor (J,)       rule weights (>= 0)
    r : Tensor (J + K,)   relative standard deviations of rules, then bins (in [0.1, 0.9])
    a, c : Tensor ()      weight function of the matcher output (>= 0)
    s : Tensor ()         RankNet scale
    mu : Tensor (J,)      rule expectations (fraction of matches among covered training pairs)
    mu_tilde : Tensor (J + K,)  expectations used to scale the standard deviations
    """

    w: torch.Tensor
    r: torch.Tensor
    a: torch.Tensor
    c: torch.Tensor
    s: torch.Tensor
    mu: torch.Tensor
    mu_tilde: torch.Tensor

    def learnable(self) -> list[torch.Tensor]:
        """The tensors SGD updates."""
        return [self.w, self.r, self.a, self.c, self.s]


def truncnorm_ppf(q: torch.Tensor, mu: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    """Quantile ``q`` of ``N(mu, sigma^2)`` truncated to ``[0, 1]``.

    ``F^-1(q) = mu + sigma * Phi^-1(Phi(alpha) + q (Phi(beta) - Phi(alpha)))`` with
    ``alpha = -mu / sigma``, ``beta = (1 - mu) / sigma``; the inner probability is clamped to
    ``[1e-12, 1 - 1e-12]`` and the result to ``[0, 1]``.
    """
    lo = torch.special.ndtr(-mu / sigma)
    hi = torch.special.ndtr((1.0 - mu) / sigma)
    inner = (lo + q * (hi - lo)).clamp(_CLAMP, 1.0 - _CLAMP)
    return (mu + sigma * torch.special.ndtri(inner)).clamp(0.0, 1.0)


def matcher_weight(p: torch.Tensor, a: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Weight of the matcher's output feature: ``g(p) = a + 1 - exp(-(p - 0.5)^2 / (2 c^2))``.

    The one implementation of ``g`` (training, prediction and :meth:`explain` use it).
    """
    return a + 1.0 - torch.exp(-((p - 0.5) ** 2) / (2.0 * c**2 + EPS))


def forward(
    params: RiskParams, x: RiskInputs, theta: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """VaR, mean and standard deviation of every pair in ``x``."""
    J = params.w.shape[0]
    w = params.w
    g = matcher_weight(x.p, params.a, params.c)
    sig_rule2 = (params.r[:J] * params.mu_tilde[:J]) ** 2
    sig_bin2 = ((params.r[J:] * params.mu_tilde[J:]) ** 2)[x.bins]
    # one matmul for the three rule sums: sum w, sum w mu, sum w^2 sigma^2
    sums = x.A @ torch.stack([w, w * params.mu, w * w * sig_rule2], dim=1)
    W = sums[:, 0] + g + EPS
    mu = (sums[:, 1] + g * x.p) / W + EPS
    var = (sums[:, 2] + g * g * sig_bin2) / (W * W) + EPS
    sigma = torch.sqrt(var)
    yhat = x.p > MATCH_THRESHOLD
    q = torch.where(yhat, 1.0 - theta, theta).to(mu.dtype)
    quant = truncnorm_ppf(q, mu, sigma)
    var_risk = torch.where(yhat, 1.0 - quant, quant)
    return var_risk, mu, sigma


def ranknet_loss(risk: torch.Tensor, z: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """RankNet loss summed over all (mispredicted, correct) pairs of the batch.

    For an unordered pair with ``z_i != z_j`` the target is "the mispredicted one ranks higher",
    so the term is ``-P o + log(1 + e^o) = softplus(-s (risk_mis - risk_ok))``.
    """
    pos, neg = risk[z], risk[~z]
    return _pairwise(pos, neg, s)


def _pairwise(pos: torch.Tensor, neg: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    if pos.numel() == 0 or neg.numel() == 0:
        return (pos.sum() + neg.sum()) * 0.0
    return torch.nn.functional.softplus(-s * (pos[:, None] - neg[None, :])).sum()


def _regulariser(params: RiskParams, l1: float, l2: float) -> torch.Tensor:
    """``sum_v l1 |v|_1 + l2 / 2 ||v||^2`` over ``w, s, a, c`` (r is not regularised)."""
    tot = params.w.new_zeros(())
    for v in (params.w, params.s, params.a, params.c):
        tot = tot + l1 * v.abs().sum() + l2 * 0.5 * (v**2).sum()
    return tot


def init_params(
    mu: npt.NDArray[np.float64],
    mu_tilde: npt.NDArray[np.float64],
    max_active: int,
    generator: torch.Generator,
    device: torch.device,
    rsd_init: float | None = None,
) -> RiskParams:
    """Initial parameters (learnrisk.md section 4): ``w ~ U(0, 1/max_active)``, ``r ~ U(0.1, 0.9)``
    (or ``r = rsd_init`` for every feature when given)."""
    J = len(mu)
    dt = torch.float64
    w = torch.rand(J, generator=generator, dtype=dt) / max(max_active, 1)
    r = 0.1 + 0.8 * torch.rand(len(mu_tilde), generator=generator, dtype=dt)
    if rsd_init is not None:
        r = torch.full_like(r, float(rsd_init))
    return RiskParams(
        w=w.to(device).requires_grad_(),
        r=r.to(device).requires_grad_(),
        a=torch.tensor(1.0, dtype=dt, device=device, requires_grad=True),
        c=torch.tensor(0.5, dtype=dt, device=device, requires_grad=True),
        s=torch.tensor(1.0, dtype=dt, device=device, requires_grad=True),
        mu=torch.as_tensor(mu, dtype=dt, device=device),
        mu_tilde=torch.as_tensor(mu_tilde, dtype=dt, device=device),
    )


def single_thread(device: torch.device) -> Any:
    """Run torch CPU work on one intra-op thread (restored afterwards); other devices: unchanged.

    The model's tensors are small (a batch of 512 pairs), so thread-pool synchronisation costs
    more than it saves, most of all on a loaded machine.
    """
    return torch_threads(1 if device.type == "cpu" else None)


def train_risk_model(
    params: RiskParams,
    x: RiskInputs,
    z: torch.Tensor,
    *,
    theta: float,
    epochs: int,
    batch_size: int,
    lr: float,
    optimizer: str,
    l1: float,
    l2: float,
    generator: torch.Generator,
    monitor: Callable[[RiskParams], float] | None = None,
    eval_every: int = 10,
    patience: int | None = None,
) -> list[float]:
    """Minimise the RankNet loss over mini-batches, projecting after every step.

    Returns, per epoch, the mean ranking loss of its batches plus the regulariser at the epoch's
    end. Without ``monitor`` the parameters after the last step are kept (no early stopping), as
    in the research code. With ``monitor`` (a score of the current parameters, higher is better,
    e.g. the ROC AUC on held-out validation pairs), the score is computed before training and
    every ``eval_every`` epochs; the best-scoring parameters are restored at the end, and
    training stops after ``patience`` evaluations without improvement (never, if None).
    Each epoch reshuffles the pairs with ``generator`` (batch membership as in a plain shuffle;
    inside a batch the order does not matter to the summed loss).
    """
    with single_thread(x.p.device):
        return _train(params, x, z, theta, epochs, batch_size, lr, optimizer, l1, l2, generator,
                      monitor, eval_every, patience)


def _train(params, x, z, theta, epochs, batch_size, lr, optimizer, l1, l2, generator,  # type: ignore[no-untyped-def]
           monitor=None, eval_every=10, patience=None):
    n = x.p.shape[0]
    dev = x.p.device
    J = params.w.shape[0]
    # all learnable values in one flat leaf [w, a, c, s, r]: the penalty gradient, the optimiser
    # step and the projections are then a handful of ops per step instead of one set per tensor
    flat = torch.cat(
        [params.w.detach(), params.a.detach().reshape(1), params.c.detach().reshape(1),
         params.s.detach().reshape(1), params.r.detach()]
    ).requires_grad_()
    opt_cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}[optimizer]
    opt = opt_cls([flat], lr=lr)
    history: list[float] = []
    n_batches = max(1, -(-n // batch_size))
    batch_of = torch.arange(n, device=dev) // batch_size
    reg_part, pos_part = slice(0, J + 3), slice(0, J + 2)  # penalised: w, a, c, s; >= 0: w, a, c

    def view() -> RiskParams:
        return RiskParams(flat[:J], flat[J + 3 :], flat[J], flat[J + 1], flat[J + 2], params.mu,
                          params.mu_tilde)

    best_score, best_flat, since = -math.inf, None, 0
    if monitor is not None:
        with torch.no_grad():
            best_score, best_flat = monitor(view()), flat.detach().clone()
    for epoch in range(epochs):
        perm = torch.randperm(n, generator=generator).to(dev)
        # one gather per epoch: batches stay contiguous, mispredicted pairs first inside each
        # batch, so every step works on slices (cheap forward and backward)
        order = perm[torch.argsort(2 * batch_of + (~z[perm]).long(), stable=True)]
        xe, ze = x.take(order), z[order]
        n_pos = torch.bincount(batch_of[ze], minlength=n_batches).tolist()
        total = torch.zeros((), dtype=torch.float64, device=dev)
        for b, start in enumerate(range(0, n, batch_size)):
            stop = min(n, start + batch_size)
            xb = RiskInputs(xe.A[start:stop], xe.p[start:stop], xe.bins[start:stop])
            pv = RiskParams(flat[:J], flat[J + 3 :], flat[J], flat[J + 1], flat[J + 2], params.mu, params.mu_tilde)
            risk, _, _ = forward(pv, xb, theta)
            loss = _pairwise(risk[: n_pos[b]], risk[n_pos[b] :], pv.s)
            opt.zero_grad(set_to_none=False)
            loss.backward()
            with torch.no_grad():  # gradient of l1 |v| + l2 / 2 v^2, as if added to the loss
                v = flat[reg_part]
                flat.grad[reg_part].add_(torch.sign(v), alpha=l1).add_(v, alpha=l2)
            opt.step()
            with torch.no_grad():  # projections: w, a, c <- |.|; r <- clip(r, 0.1, 0.9)
                flat[pos_part].abs_()
                flat[J + 3 :].clamp_(0.1, 0.9)
            total += loss.detach()
        with torch.no_grad():
            v = flat[reg_part]
            reg = l1 * v.abs().sum() + 0.5 * l2 * (v * v).sum()
        history.append(float(total / n_batches + reg))
        if monitor is not None and ((epoch + 1) % eval_every == 0 or epoch + 1 == epochs):
            with torch.no_grad():
                score = monitor(view())
            if score > best_score:
                best_score, best_flat, since = score, flat.detach().clone(), 0
            else:
                since += 1
                if patience is not None and since >= patience:
                    break
    with torch.no_grad():
        if best_flat is not None:
            flat.copy_(best_flat)
        params.w.copy_(flat[:J])
        params.a.copy_(flat[J])
        params.c.copy_(flat[J + 1])
        params.s.copy_(flat[J + 2])
        params.r.copy_(flat[J + 3 :])
    return history


@torch.no_grad()
def predict(
    params: RiskParams, x: RiskInputs, theta: float, batch_size: int = 8192
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """VaR, mean and standard deviation as numpy arrays, computed in batches."""
    outs: list[tuple[torch.Tensor, ...]] = []
    n = x.p.shape[0]
    for start in range(0, n, batch_size):
        idx = torch.arange(start, min(n, start + batch_size), device=x.p.device)
        outs.append(forward(params, x.take(idx), theta))
    if not outs:
        e = np.zeros(0)
        return e, e.copy(), e.copy()
    return tuple(torch.cat([o[k] for o in outs]).cpu().numpy() for k in range(3))  # type: ignore[return-value]
