"""Weighted fastPAM with fixed medoids: the torch kernel behind risk sampling.

The problem (paper section 4, eq. 7 and Algorithm 1): given points ``x_1..x_n``, weights
``w_i >= 0``, a set ``L`` of fixed medoids (the labelled pairs) and a budget ``b``, choose ``Q``
(``|Q| = b``, ``Q`` disjoint from ``L``) minimising the weighted total deviation

    TD(Q) = sum_i w_i * min_{m in L u Q} ||x_i - x_m||_2 .

The swap gain of exchanging a medoid ``m`` of ``Q`` for a non-medoid ``j`` decomposes (FastPAM1,
Schubert & Rousseeuw 2021, with weights) into two dense reductions over one block of distances::

    TD(m -> j) - TD = acc_j + S[m, j]
    acc_j   = sum_o w_o * min(D_oj - dn_o, 0)                       (gain of adding j)
    S[m, j] = sum_{o: nearest(o) = m} w_o * clip(D_oj - dn_o, 0, ds_o - dn_o)   (loss of removing m)

where ``dn_o`` / ``ds_o`` are the distances of ``o`` to its nearest / second-nearest medoid.
Both are computed from an ``n x B`` block of distances produced by one matrix product
(``||a||^2 + ||b||^2 - 2 a.b``), so the full ``n x n`` matrix is never stored.
"""

from __future__ import annotations

import math
import numbers
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Literal

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from skrisk._params import Interval, Options, validate_call
from skrisk._typing import IntArray, RandomStateLike
from skrisk._device import cpu_threads, resolve_device, torch_threads

__all__ = ["KMedoidsResult", "weighted_fastpam"]

_INITS = ("heaviest", "build")
_SCHEDULES = ("eager", "best")
# Rows per tile on CPU: a tile of ``_CPU_TILE_ELEMS`` float32 values stays in the last-level cache.
_CPU_TILE_ELEMS = 1 << 20
# Eager schedule: swaps tried per block (the best one, then the next-best on other Q slots).
_MAX_SWAPS_PER_BLOCK = 4
# Smallest ratio of positive weights the kernel accepts: weights enter the float32 matrix product
# squared (w^2 D^2 with distances of order 1), so 1e-15 leaves w^2 D^2 well inside float32's
# normal range (>= 1.2e-38) for distances down to ~1e-4 of the data's extent.
_MIN_WEIGHT_RATIO = 1e-15


@dataclass(frozen=True)
class KMedoidsResult:
    """Result of :func:`weighted_fastpam`.

    Attributes
    ----------
    selected : ndarray of shape (n_select,)
        Indices (into ``X``) of the chosen medoids ``Q``, sorted ascending. Disjoint from ``fixed``.
    medoids : ndarray of shape (n_fixed + n_select,)
        All medoids: ``fixed`` (in the order given) followed by ``selected``.
    labels : ndarray of shape (n_samples,)
        For every point, the position in ``medoids`` of its nearest medoid (ties: lowest position).
    total_deviation : float
        Weighted total deviation ``sum_i w_i * min_m ||x_i - x_m||``, recomputed in float64 for the
        final medoids.
    n_swaps : int
        Number of swaps applied in the SWAP phase (swaps undone by the float64 re-check excluded).
    n_iter : int
        Number of passes over the candidates started in the SWAP phase.
    converged : bool
        Whether the SWAP phase ended because no improving swap was left (not by ``max_iter``).
    device : str
        The torch device the kernel ran on.
    build_seconds, swap_seconds : float
        Wall time of the BUILD and SWAP phases.
    """

    selected: IntArray
    medoids: IntArray
    labels: IntArray
    total_deviation: float
    n_swaps: int
    n_iter: int
    converged: bool
    device: str
    build_seconds: float = field(default=0.0)
    swap_seconds: float = field(default=0.0)

    @property
    def assignment(self) -> IntArray:
        """Alias of ``labels`` (the paper's cluster assignment)."""
        return self.labels


# --------------------------------------------------------------------------------------------
# Validation (all of it runs before any distance is computed)
# --------------------------------------------------------------------------------------------
def _as_data_tensor(X: Any) -> torch.Tensor:
    if isinstance(X, torch.Tensor):
        t = X.detach()
    else:
        try:
            arr = np.asarray(X)
        except Exception as exc:  # e.g. ragged nested lists
            raise TypeError(
                f"X could not be converted to an array ({exc}); pass a 2-D numpy array or torch "
                "tensor of shape (n_samples, n_features)."
            ) from exc
        if arr.dtype == object or arr.dtype.kind in "USVMm":
            raise TypeError(
                f"X has dtype {arr.dtype}, which is not numeric; pass a float array of shape "
                "(n_samples, n_features)."
            )
        if arr.dtype.kind == "c":
            raise TypeError("X is complex; pass real-valued features (e.g. np.abs(X) or X.real).")
        if arr.dtype.kind in "biu" or arr.dtype == np.float16:
            arr = arr.astype(np.float32)
        arr = np.ascontiguousarray(arr)
        if not arr.flags.writeable:  # torch warns on read-only buffers (e.g. memmaps)
            arr = arr.copy()
        t = torch.from_numpy(arr)
    if t.is_complex():
        raise TypeError("X is complex; pass real-valued features (e.g. X.real).")
    if not t.is_floating_point():
        t = t.to(torch.float32)
    if t.ndim != 2:
        raise ValueError(
            f"X must be 2-D of shape (n_samples, n_features), got {t.ndim}-D with shape "
            f"{tuple(t.shape)}; reshape it, e.g. X.reshape(-1, 1) for a single feature."
        )
    if t.shape[0] == 0:
        raise ValueError("X is empty (0 samples); pass at least n_select + len(fixed) points.")
    if t.shape[1] == 0:
        raise ValueError("X has 0 features; pass an array of shape (n_samples, n_features>=1).")
    finite = torch.isfinite(t)
    if not bool(finite.all()):
        bad = (~finite).nonzero()
        row, col = int(bad[0, 0]), int(bad[0, 1])
        raise ValueError(
            f"X contains NaN or infinity ({bad.shape[0]} values, first at row {row}, column {col}, "
            f"value {float(t[row, col])}); impute or drop those rows before selecting medoids "
            "(finite values of any magnitude are fine: the kernel rescales them)."
        )
    return t


def _check_fixed(fixed: Any, n: int) -> np.ndarray:
    if fixed is None:
        return np.empty(0, dtype=np.intp)
    if isinstance(fixed, torch.Tensor):
        fixed = fixed.detach().cpu().numpy()
    arr = np.asarray(fixed)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"fixed must be a 1-D sequence of row indices, got shape {arr.shape}.")
    if arr.size == 0:
        return np.empty(0, dtype=np.intp)
    if arr.dtype == bool:
        raise TypeError(
            "fixed is a boolean mask; pass integer row indices instead, e.g. np.flatnonzero(mask)."
        )
    if arr.dtype.kind not in "iu":
        raise TypeError(
            f"fixed must hold integer row indices, got dtype {arr.dtype}; convert it with "
            "np.asarray(fixed, dtype=int)."
        )
    if arr.min() < 0 or arr.max() >= n:
        bad = arr[(arr < 0) | (arr >= n)][:5].tolist()
        raise ValueError(
            f"fixed holds indices out of range for X with {n} rows: {bad}; indices must lie in "
            f"[0, {n - 1}]."
        )
    uniq, counts = np.unique(arr, return_counts=True)
    if uniq.size != arr.size:
        raise ValueError(
            f"fixed holds repeated indices {uniq[counts > 1][:5].tolist()}; pass each fixed medoid "
            "once (e.g. np.unique(fixed))."
        )
    return arr.astype(np.intp)


def _check_weights(sample_weight: Any, n: int, fixed: np.ndarray) -> np.ndarray:
    if sample_weight is None:
        w = np.ones(n, dtype=np.float64)
    else:
        if isinstance(sample_weight, torch.Tensor):
            sample_weight = sample_weight.detach().cpu().numpy()
        w = np.asarray(sample_weight)
        if w.dtype == object or w.dtype.kind not in "biuf":
            raise TypeError(
                f"sample_weight must be numeric, got dtype {w.dtype}; pass a float array of shape "
                f"({n},)."
            )
        if w.ndim == 0:
            w = np.full(n, float(w), dtype=np.float64)
        w = w.astype(np.float64)
        if w.shape != (n,):
            raise ValueError(
                f"sample_weight has shape {w.shape} but X has {n} rows; pass one weight per row."
            )
    if not np.all(np.isfinite(w)):
        raise ValueError(
            "sample_weight contains NaN or infinity; replace them (e.g. np.nan_to_num) first."
        )
    if np.any(w < 0):
        raise ValueError(
            f"sample_weight contains {int(np.sum(w < 0))} negative values; weights must be >= 0 "
            "(clip them, e.g. np.clip(w, 0, None))."
        )
    free = np.ones(n, dtype=bool)
    free[fixed] = False
    if not np.any(w[free] > 0):
        raise ValueError(
            "sample_weight is zero on every point that is not a fixed medoid, so every choice has "
            "total deviation 0; pass positive weights (or sample_weight=None for unit weights)."
        )
    # A fixed medoid is at distance 0 from itself, so its weight never counts: drop it, so that
    # a huge weight there cannot squeeze the others below float32's range.
    w = w.copy()
    w[fixed] = 0.0
    pos = w[w > 0]
    lo, hi = float(pos.min()), float(pos.max())
    if lo < _MIN_WEIGHT_RATIO * hi:
        i_lo = int(np.flatnonzero(w == lo)[0])
        raise ValueError(
            f"sample_weight spans more than {1 / _MIN_WEIGHT_RATIO:.0e} between its smallest "
            f"positive value ({lo:.3g} at row {i_lo}) and its largest ({hi:.3g}) on the points that "
            "are not fixed medoids: the float32 kernel cannot tell the small ones from 0, and would "
            "report a swap-optimal result it did not search for. Set negligible weights to 0 "
            f"(e.g. w = np.where(w < w.max() * {_MIN_WEIGHT_RATIO:.0e}, 0, w)) or compress the range "
            "(e.g. np.sqrt(w))."
        )
    return w


def _rng_permutation_ranks(random_state: RandomStateLike, n: int) -> np.ndarray | None:
    if random_state is None:
        return None
    if isinstance(random_state, np.random.Generator):
        return random_state.permutation(n)
    return check_random_state(random_state).permutation(n)


@contextmanager
def _strict_fp32() -> Iterator[None]:
    """True float32 matrix products (no TF32 / bf16), restored on exit."""
    prev = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(prev)


def _block_cells(n: int, block_size: int) -> int:
    """Distance cells of one parallel region: a CPU row tile of a block."""
    return min(n * block_size, max(block_size, _CPU_TILE_ELEMS))


class _Threads:
    """The kernel's CPU thread policy (:func:`skrisk._device.cpu_threads`), checked again at the
    start of every pass over the candidates so that a machine that becomes busy (or idle)
    during a long call is followed; torch's setting is restored when the call ends."""

    def __init__(self, dev: torch.device, n: int, block_size: int) -> None:
        self.cpu = dev.type == "cpu"
        self.cells = _block_cells(n, block_size)
        self.limit = torch.get_num_threads()

    def __enter__(self) -> None:
        self._ctx = torch_threads(cpu_threads(self.cells, self.limit) if self.cpu else None)
        self._ctx.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._ctx.__exit__(*exc)

    def recheck(self) -> None:
        if self.cpu and self.limit > 1:
            n = cpu_threads(self.cells, self.limit)
            if n != torch.get_num_threads():
                torch.set_num_threads(n)


# --------------------------------------------------------------------------------------------
# The kernel
# --------------------------------------------------------------------------------------------
def _pow2_normalise(X: torch.Tensor) -> tuple[torch.Tensor, int]:
    """``(X * 2**s, s)`` with ``max |X * 2**s|`` in ``[0.5, 1)`` (``s = 0`` if ``X`` is all 0).

    A power of two changes only the floating-point exponent, so float32 products of the scaled
    data equal the unscaled ones times a power of two wherever those neither overflow nor
    underflow: results at ordinary scales are bit-identical to unscaled ones.
    """
    top = float(X.abs().max())
    if top == 0.0:
        return X, 0
    _, e = math.frexp(top)  # top = mant * 2**e, mant in [0.5, 1)
    if e == 0:
        return X, 0
    half = -e // 2  # two exact factors: 2**-e alone overflows for subnormal float64 data
    return X * math.ldexp(1.0, half) * math.ldexp(1.0, -e - half), -e


def _top2(M: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Nearest and second-nearest per row; ties go to the lowest column."""
    i1 = torch.argmin(M, dim=1)
    v1 = M.gather(1, i1[:, None]).squeeze(1)
    M2 = M.clone()
    M2.scatter_(1, i1[:, None], math.inf)
    i2 = torch.argmin(M2, dim=1)
    v2 = M2.gather(1, i2[:, None]).squeeze(1)
    return v1, i1, v2, i2


class _Kernel:
    """State of one weighted fastPAM run (all tensors on one device)."""

    def __init__(
        self,
        X: torch.Tensor,
        w: np.ndarray,
        fixed: np.ndarray,
        n_select: int,
        block_size: int,
        device: torch.device,
    ) -> None:
        n, d = X.shape
        self.n, self.d, self.b = n, d, n_select
        self.dev = device
        self.B = block_size
        X64 = X.to(device=device, dtype=torch.float64)
        # Distances are float32 matrix products of [x, |x|^2, 1]: coordinates of order 1e20 overflow
        # |x|^2 and coordinates of order 1e-30 underflow it, and every swap gain then reads 0 (or
        # NaN). Scale by a power of two so that max |x| lies in [0.5, 1): exact in binary floating
        # point, so the search is the same as at scale 1 and the argmin is unchanged. Once before
        # centring (so the mean cannot overflow), once after (so a small spread far from the
        # origin is not lost). Distances here are the caller's times ``2**self.scale_exp``.
        X64, e1 = _pow2_normalise(X64)
        Xc = X64 - X64.mean(dim=0, keepdim=True)  # translation-invariant; less cancellation
        Xc, e2 = _pow2_normalise(Xc)
        self.scale_exp = e1 + e2
        self.X64 = Xc
        sq = (Xc * Xc).sum(dim=1, keepdim=True)
        ones = torch.ones(n, 1, dtype=torch.float64, device=device)
        # row form [x, |x|^2, 1]; the column form of a point is [-2x, 1, |x|^2]
        Xr64 = torch.cat([Xc, sq, ones], dim=1)
        self.Xr = Xr64.to(torch.float32).contiguous()
        # Weights enter the blocks through the rows: scaling row i by w_i^2 makes the matrix
        # product give w_i^2 D^2, so its square root is w_i D (weights normalised to max 1).
        wn = torch.as_tensor(w / w.max(), dtype=torch.float64, device=device)
        self.Xw = (Xr64 * (wn * wn)[:, None]).to(torch.float32).contiguous()
        del Xr64
        self.col_scale = torch.cat(
            [torch.full((d,), -2.0), torch.ones(2)]
        ).to(device=device, dtype=torch.float32)
        self.col_perm = torch.cat([torch.arange(d), torch.tensor([d + 1, d])]).to(device)
        self.w = wn.to(torch.float32)
        self.w64 = wn  # normalised weights: the search is scale-invariant
        self.w_orig = torch.as_tensor(w, dtype=torch.float64, device=device)
        self.fixed = torch.as_tensor(fixed, dtype=torch.long, device=device)
        free = np.ones(n, dtype=bool)
        free[fixed] = False
        self.cand_np = np.flatnonzero(free)
        self.cand_all = torch.as_tensor(self.cand_np, dtype=torch.long, device=device)
        # row tiles: the whole column on CUDA, balanced cache-sized tiles on CPU
        if device.type == "cuda":
            n_tiles = 1
        else:
            n_tiles = max(1, -(-n * block_size // _CPU_TILE_ELEMS))
        tile = -(-n // n_tiles)
        self.tiles = [(r, min(r + tile, n)) for r in range(0, n, tile)]
        self.tile_bounds = np.array([t[0] for t in self.tiles] + [n])
        rows = min(tile, n)
        self.ar = torch.arange(block_size, device=device)
        self.bufD = torch.empty(rows * block_size, dtype=torch.float32, device=device)
        self.bufN = torch.empty(rows * block_size, dtype=torch.float32, device=device)
        self.bufS = torch.empty((n_select + 1) * block_size, dtype=torch.float32, device=device)
        self.inf = torch.tensor(math.inf, dtype=torch.float64, device=device)
        self.n_swaps = 0
        self.cache: dict[int, torch.Tensor] = {}
        self.cache_left = 0
        self._fixed_nearest()

    def unscale(self, value: float) -> float:
        """A distance (or weighted sum of distances) in the caller's units."""
        try:
            return math.ldexp(value, -self.scale_exp)
        except OverflowError:  # beyond float64: the caller's coordinates were near its limit
            return math.inf

    # ---- distances ------------------------------------------------------------------------------
    def _col_form(self, idx: torch.Tensor) -> torch.Tensor:
        return self.Xr.index_select(0, idx)[:, self.col_perm] * self.col_scale

    def dist_cols(self, idx: torch.Tensor) -> torch.Tensor:
        """Distances of all points to the points ``idx``: (n, len(idx)), exact 0 on self."""
        D = torch.mm(self.Xr, self._col_form(idx).T)
        D.clamp_min_(0).sqrt_()
        D[idx, torch.arange(idx.numel(), device=self.dev)] = 0.0
        return D

    def _fixed_nearest(self) -> None:
        n, dev = self.n, self.dev
        self.dL1 = torch.full((n,), math.inf, dtype=torch.float32, device=dev)
        self.dL2 = torch.full((n,), math.inf, dtype=torch.float32, device=dev)
        for s in range(0, self.fixed.numel(), self.B):
            D = self.dist_cols(self.fixed[s : s + self.B])
            if D.shape[1] > 1:
                v1, _, v2, _ = _top2(D)
            else:
                v1, v2 = D[:, 0], torch.full_like(D[:, 0], math.inf)
            lo = torch.minimum(self.dL1, v1)
            second = torch.minimum(torch.maximum(self.dL1, v1), torch.minimum(self.dL2, v2))
            self.dL1, self.dL2 = lo, second

    # ---- caches for the SWAP phase --------------------------------------------------------------
    def set_medoids(self, Q: torch.Tensor) -> None:
        b = self.b
        self.Q = Q.clone()
        self.is_med = torch.zeros(self.n, dtype=torch.bool, device=self.dev)
        self.is_med[self.fixed] = True
        self.is_med[self.Q] = True
        # distances of every point to the Q medoids: (n, b), rows gathered after a swap
        self.DQ = torch.empty(self.n, b, dtype=torch.float32, device=self.dev)
        for s in range(0, b, self.B):
            self.DQ[:, s : s + self.B] = self.dist_cols(self.Q[s : s + self.B])
        M = torch.cat([self.DQ, self.dL1[:, None], self.dL2[:, None]], dim=1)
        self.dn, self.n1, self.ds, self.n2 = _top2(M)
        self._derived()
        self.td = float(torch.dot(self.w64, self.dn.double()))

    def dist_col(self, j: int) -> torch.Tensor:
        """Distances of all points to point ``j``: (n,), exact 0 at ``j``."""
        c = self.Xr[j, self.col_perm] * self.col_scale
        d = torch.mv(self.Xr, c).clamp_min_(0).sqrt_()
        d[j] = 0.0
        return d

    def set_dn(self, dn: torch.Tensor) -> None:
        self.dn = dn
        self.wdn = self.w * dn

    def _derived(self) -> None:
        self.wdn = self.w * self.dn
        wgap = self.w * (self.ds - self.dn)
        self.wgap = torch.where(self.w > 0, wgap, 0.0)  # 0 * inf when a row has no 2nd medoid
        self.slot = torch.clamp(self.n1, max=self.b)  # L-nearest rows go to the dummy row b
        # per row tile, the rows whose nearest medoid is in Q: only they can lose it in a swap
        # (rows owned by a fixed medoid add nothing to S), so the S part of a block skips the rest
        owned = self.n1 < self.b
        self.q_rows = []
        for r0, r1 in self.tiles:
            loc = owned[r0:r1].nonzero().squeeze(1)
            self.q_rows.append((loc, self.wgap[r0:r1][loc, None], self.slot[r0:r1][loc]))

    # ---- block evaluation -----------------------------------------------------------------------
    def plan(self, cand: np.ndarray) -> tuple[torch.Tensor, list[Any]]:
        """Device indices of a sorted candidate block and, per row tile, its own cells."""
        bounds = np.searchsorted(cand, self.tile_bounds)
        ct = torch.as_tensor(cand, dtype=torch.long, device=self.dev)
        selfs: list[tuple[int, torch.Tensor, torch.Tensor] | None] = []
        for t, (r0, _) in enumerate(self.tiles):
            lo, hi = int(bounds[t]), int(bounds[t + 1])
            selfs.append((hi - lo, ct[lo:hi] - r0, self.ar[lo:hi]) if hi > lo else None)
        return ct, selfs

    def block(
        self, plan: tuple[torch.Tensor, list[Any]], mode: str, key: int | None = None
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Evaluate a block of candidates.

        ``mode="swap"``: best swap delta per candidate and its Q slot (medoids get +inf).
        ``mode="add"``: TD change of adding each candidate (<= 0). ``mode="cost"``: sum_o w_o D_oj.
        ``key``: the block's index in the SWAP phase; its weighted distances (which never change)
        are kept for later passes while the distance cache has room (see ``cache_mb``).
        """
        cand, selfs = plan
        Bc = cand.numel()
        b = self.b
        cached = self.cache.get(key) if key is not None else None
        store = None
        if key is not None and cached is None and self.cache_left >= self.n * Bc * 4:
            store = torch.empty(self.n, Bc, dtype=torch.float32, device=self.dev)
            self.cache[key] = store
            self.cache_left -= self.n * Bc * 4
        C = self._col_form(cand).T if cached is None else None
        acc = torch.zeros(Bc, dtype=torch.float64, device=self.dev)
        if mode == "swap":
            S64 = torch.zeros(b + 1, Bc, dtype=torch.float64, device=self.dev)
            S = self.bufS[: (b + 1) * Bc].view(b + 1, Bc)
        for t, (r0, r1) in enumerate(self.tiles):
            rows = r1 - r0
            D = self.bufD[: rows * Bc].view(rows, Bc)
            if cached is not None:
                D.copy_(cached[r0:r1])
            else:
                torch.mm(self.Xw[r0:r1], C, out=D)  # w^2 D^2
                D.clamp_min_(0).sqrt_()  # w D
                if selfs[t] is not None:
                    D[selfs[t][1], selfs[t][2]] = 0.0
                if store is not None:
                    store[r0:r1].copy_(D)
            if mode == "cost":
                acc.add_(D.sum(dim=0))
                continue
            D.sub_(self.wdn[r0:r1, None])  # w (D - dn)
            N = self.bufN[: rows * Bc].view(rows, Bc)
            torch.clamp(D, max=0.0, out=N)
            acc.add_(N.sum(dim=0))
            if mode == "add":
                continue
            loc, wgap_q, slot_q = self.q_rows[t]
            if loc.numel() == 0:
                continue
            Dq = D.index_select(0, loc) if loc.numel() < rows else D
            Dq.clamp_min_(0.0)
            torch.minimum(Dq, wgap_q, out=Dq)  # w clip(D - dn, 0, ds - dn)
            S.zero_()
            S.index_add_(0, slot_q, Dq)
            S64.add_(S)
        if mode != "swap":
            return acc
        Sm, m = S64[:b].min(dim=0)
        delta = acc + Sm
        delta = torch.where(self.is_med[cand], self.inf, delta)
        return delta, m

    # ---- swaps ----------------------------------------------------------------------------------
    def try_swap(self, m: int, j: int) -> bool:
        """Swap Q slot ``m`` for point ``j``; keep it only if the float64 TD drops.

        Rows whose nearest or second-nearest medoid was ``m`` are recomputed from the cached
        distances to Q and L; every other row only compares its two cached distances with ``j``.
        """
        dj = self.dist_col(j)
        n1, n2, dn, ds = self.n1, self.n2, self.dn, self.ds
        closer = dj < dn
        new_dn = torch.where(closer, dj, dn)
        new_n1 = torch.where(closer, m, n1)
        new_ds = torch.where(closer, dn, torch.minimum(dj, ds))
        new_n2 = torch.where(closer, n1, torch.where(dj < ds, m, n2))
        rows = ((n1 == m) | (n2 == m)).nonzero().squeeze(1)
        if rows.numel():
            M = torch.cat(
                [self.DQ.index_select(0, rows), self.dL1[rows, None], self.dL2[rows, None]], dim=1
            )
            M[:, m] = dj[rows]
            v1, i1, v2, i2 = _top2(M)
            new_dn[rows], new_n1[rows], new_ds[rows], new_n2[rows] = v1, i1, v2, i2
        td_new = float(torch.dot(self.w64, new_dn.double()))
        if not td_new < self.td:
            return False
        self.DQ[:, m] = dj
        self.n1, self.n2, self.dn, self.ds = new_n1, new_n2, new_dn, new_ds
        self._derived()
        self.is_med[self.Q[m]] = False
        self.Q[m] = j
        self.is_med[j] = True
        self.td = td_new
        self.n_swaps += 1
        return True

    # ---- final assignment in float64 ------------------------------------------------------------
    def final(self, medoids: torch.Tensor) -> tuple[torch.Tensor, float]:
        X = self.X64
        sq = (X * X).sum(1)
        best = torch.full((self.n,), math.inf, dtype=torch.float64, device=self.dev)
        lab = torch.zeros(self.n, dtype=torch.long, device=self.dev)
        for s in range(0, medoids.numel(), self.B):
            idx = medoids[s : s + self.B]
            D2 = sq[:, None] + sq[idx][None, :] - 2.0 * (X @ X[idx].T)
            D = D2.clamp_min_(0).sqrt_()
            D[idx, torch.arange(idx.numel(), device=self.dev)] = 0.0
            v, i = D.min(dim=1)
            upd = v < best
            best = torch.where(upd, v, best)
            lab = torch.where(upd, i + s, lab)
        # every medoid belongs to its own cluster (matters only for duplicate points)
        lab[medoids] = torch.arange(medoids.numel(), device=self.dev)
        best[medoids] = 0.0
        return lab, self.unscale(float((self.w_orig * best).sum()))


def _heaviest(w: np.ndarray, cand: np.ndarray, b: int, random_state: RandomStateLike) -> np.ndarray:
    """The ``b`` candidates of largest weight (paper line 1); ties by rank, else lowest index."""
    ranks = _rng_permutation_ranks(random_state, cand.size)
    tie = np.arange(cand.size) if ranks is None else ranks
    order = np.lexsort((tie, -w[cand]))
    return cand[order[:b]]


def _greedy_build(k: _Kernel, progress: Any) -> torch.Tensor:
    """Weighted greedy BUILD (lazy greedy with block re-evaluation; exact greedy result).

    Gains of adding a point only shrink as medoids are added (the objective is a facility-location
    function), so stale gains are upper bounds; the top ``block_size`` stale candidates are
    re-evaluated until the best fresh gain beats every stale bound.
    """
    cand = k.cand_all
    nc = cand.numel()
    dev = k.dev
    blocks = [k.plan(k.cand_np[s : s + k.B]) for s in range(0, nc, k.B)]
    chosen: list[int] = []
    k.set_dn(k.dL1.clone())
    taken = torch.zeros(nc, dtype=torch.bool, device=dev)
    if k.fixed.numel() == 0:
        cost = torch.cat([k.block(c, "cost") for c in blocks])
        first = int(torch.argmin(cost))
        chosen.append(int(cand[first]))
        taken[first] = True
        k.set_dn(torch.minimum(k.dn, k.dist_cols(cand[first : first + 1])[:, 0]))
        progress.update(1)
    ub = torch.cat([-k.block(c, "add") for c in blocks])  # exact gains, all fresh
    fresh = torch.ones(nc, dtype=torch.bool, device=dev)
    ninf = torch.tensor(-math.inf, dtype=torch.float64, device=dev)
    ub = torch.where(taken, ninf, ub)
    pos = torch.arange(nc, device=dev)
    while len(chosen) < k.b:
        while True:
            fv = torch.where(fresh & ~taken, ub, ninf)
            best_fresh = float(fv.max())
            stale = torch.where(fresh | taken, ninf, ub)
            order = torch.sort(stale, descending=True, stable=True).indices
            top_stale = float(stale[order[0]])
            if best_fresh >= top_stale and best_fresh > -math.inf:
                j = int(pos[fv == best_fresh].min())
                break
            top = order[: k.B]
            top = top[stale[top] > -math.inf]
            top = torch.sort(top).values
            ub[top] = -k.block(k.plan(k.cand_np[top.cpu().numpy()]), "add")
            fresh[top] = True
        chosen.append(int(cand[j]))
        taken[j] = True
        k.set_dn(torch.minimum(k.dn, k.dist_cols(cand[j : j + 1])[:, 0]))
        fresh.zero_()
        progress.update(1)
    return torch.tensor(chosen, dtype=torch.long, device=dev)


def _rtol(k: _Kernel) -> float:
    """Smallest TD decrease worth a swap (float32 distances: below this it is noise)."""
    return 1e-7 * k.td


def _eager_swaps(k: _Kernel, delta: torch.Tensor, m: torch.Tensor, cand: torch.Tensor) -> bool:
    """Apply the best improving swap of a block, then the next-best ones on other Q slots.

    The later ones were evaluated before the earlier swaps of the same block, so each is kept
    only if the float64 re-check confirms that TD dropped; the first failure ends the block.
    At most ``_MAX_SWAPS_PER_BLOCK`` swaps per block.
    """
    tol = _rtol(k)
    order = torch.argsort(delta, stable=True)[:_MAX_SWAPS_PER_BLOCK]
    dvs = delta[order].tolist()
    ms = m[order].tolist()
    js = cand[order].tolist()
    used: set[int] = set()
    for dv, mi, ji in zip(dvs, ms, js):
        if not dv < -tol:
            break
        if mi in used:
            continue
        if not k.try_swap(mi, ji):
            break
        used.add(mi)
    return bool(used)


class _NoBar:
    def update(self, *a: Any) -> None:
        pass

    def set_postfix(self, **kw: Any) -> None:
        pass

    def set_description(self, *a: Any) -> None:
        pass

    def close(self) -> None:
        pass


def _bar(verbose: bool, total: int | None, desc: str) -> Any:
    if not verbose:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, leave=False)


@validate_call({
    "n_select": [Interval(numbers.Integral, 1, None)],
    "init": [Options(str, _INITS)],
    "schedule": [Options(str, _SCHEDULES)],
    "max_iter": [Interval(numbers.Integral, 0, None)],
    "block_size": [Interval(numbers.Integral, 1, None)],
    "cache_mb": [Interval(numbers.Real, 0, float("inf"))],
    "verbose": ["boolean"],
})
def weighted_fastpam(
    X: np.ndarray | torch.Tensor,
    n_select: int,
    *,
    sample_weight: np.ndarray | torch.Tensor | None = None,
    fixed: IntArray | list[int] | torch.Tensor | None = None,
    init: Literal["heaviest", "build"] = "heaviest",
    schedule: Literal["eager", "best"] = "eager",
    max_iter: int = 1000,
    block_size: int = 64,
    cache_mb: float = 1024,
    device: str | torch.device = "auto",
    random_state: RandomStateLike = None,
    verbose: bool = False,
) -> KMedoidsResult:
    """Weighted k-medoids with fixed medoids (the paper's weighted fastPAM, Algorithm 1).

    Chooses ``Q`` (``n_select`` points of ``X`` not in ``fixed``) minimising
    ``TD = sum_i w_i * min_{m in fixed u Q} ||x_i - x_m||_2``. Fixed medoids never move; points that
    are medoids cost 0.

    Parameters
    ----------
    X : ndarray or torch.Tensor of shape (n_samples, n_features)
        The points (e.g. the matcher's representations of pool and labelled pairs). A CUDA tensor
        stays on its device.
    n_select : int
        Budget ``b``: number of medoids to choose, ``1 <= n_select <= n_samples - len(fixed)``.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights ``w_i`` (the Lipschitz estimates of eq. 6 in risk sampling). ``None``
        means unit weights. Must be positive somewhere outside ``fixed``.
    fixed : array-like of int, default=None
        Row indices of the fixed medoids ``L`` (the labelled set). They are never swapped out and
        are never chosen again.
    init : {"heaviest", "build"}, default="heaviest"
        ``"heaviest"``: the ``n_select`` non-fixed points of largest weight (paper line 1); ties
        are broken by a permutation drawn from ``random_state``, or by lowest index when it is
        ``None``. With unit weights and a ``random_state`` this is a random initialisation.
        ``"build"``: greedy weighted BUILD given the fixed medoids (lazy greedy, same result as
        plain greedy; costs about one to two passes of the SWAP phase).
    schedule : {"eager", "best"}, default="eager"
        ``"eager"`` (FasterPAM-like): walk the candidates in blocks of ``block_size`` and apply the
        best improving swap of each block at once (then up to three next-best swaps of the block
        on other ``Q`` slots, each kept only if the float64 re-check confirms that TD dropped);
        stop after a full pass without improvement.
        ``"best"`` (FastPAM1, the paper's Algorithm 1): evaluate all candidates, apply the single
        best swap, repeat. Both stop at a swap-optimal solution; ``"eager"`` needs far fewer
        distance evaluations.
    max_iter : int, default=1000
        Maximum number of passes over the candidates in the SWAP phase (``"best"`` applies one swap
        per pass, so this bounds its swaps). ``0`` returns the initial solution. A
        :class:`~sklearn.exceptions.ConvergenceWarning` is issued when the limit stops the search.
    block_size : int, default=64
        Candidates evaluated together (columns of one distance block).
    cache_mb : float, default=1024
        Memory (MiB) for keeping the weighted distance blocks of the SWAP phase between passes:
        the distances never change, only the nearest/second-nearest caches do, so a later pass
        reads a kept block instead of recomputing its matrix product. Blocks that do not fit
        are recomputed; ``0`` keeps none (memory ``O(n (d + b + block_size))`` only). Results
        are identical either way. For ``n = 17,000`` points of ``d = 256`` the whole SWAP phase
        fits in about 1 GiB.
    device : {"auto", "cpu", "cuda"} or torch.device, default="auto"
        Where the kernel runs; ``"auto"`` is the device of a CUDA tensor ``X``, else CUDA if
        available and a block is large (``n * block_size`` at least
        ``skrisk._device.GPU_MIN_WORK``, about 4 million distances), else CPU.
    random_state : int, RandomState, Generator or None, default=None
        Only used to break ties among equal weights in ``init="heaviest"``. The result is fully
        deterministic for a given input and ``random_state``.
    verbose : bool, default=False
        Show a tqdm progress bar.

    Returns
    -------
    KMedoidsResult
        ``selected`` (``Q``, sorted), ``medoids`` (``fixed`` then ``selected``), ``labels``
        (position in ``medoids`` of each point's nearest medoid), ``total_deviation``
        (float64), ``n_swaps``, ``n_iter``, ``converged``.

    Raises
    ------
    ValueError
        Empty or non-2-D ``X``, NaN/inf in ``X`` or the weights, negative or all-zero weights,
        ``fixed`` out of range or repeated, ``n_select`` out of ``[1, n_samples - len(fixed)]``,
        unknown ``init`` / ``schedule`` / ``device``.
    TypeError
        Non-numeric ``X`` or weights, non-integer ``fixed`` / ``n_select`` / ``max_iter`` /
        ``block_size``.

    Notes
    -----
    Distances are computed on the fly, ``B = block_size`` candidate columns at a time, by one
    float32 matrix product ``||a||^2 + ||b||^2 - 2 a.b`` (TF32 disabled, clamped at 0, data
    centred first, exact 0 on the diagonal). Gains are accumulated in float64 across row tiles, and
    every swap is re-checked: it is undone unless the float64 sum of the weighted nearest-medoid
    distances drops, so the search cannot cycle. Each point caches its nearest and second-nearest
    medoid; the distances of all points to ``Q`` (``n x b``) and their two nearest distances to
    ``L`` (computed once) are kept. Ties are broken by the lowest index.

    Complexity, with ``n`` points of dimension ``d``, ``k = |L| + b`` and ``c = n - |L|``
    candidates:

    - one pass over the candidates: ``O(n c (d + 1))`` time (``c / B`` blocks of an ``n x B``
      matrix product plus ``O(n B)`` elementwise work and an ``O(n B)`` segment sum);
    - a swap: ``O(n (d + b))`` (one distance column, cache update, float64 re-check);
    - BUILD: ``"heaviest"`` ``O(n log n)``; ``"build"`` one or two passes plus a few blocks per
      chosen medoid; the fixed set: ``O(n |L| d)`` once.

    ``"eager"`` typically needs 2-4 passes in total; ``"best"`` needs one pass per swap (roughly
    ``b`` passes), as in the paper's ``O(b (n - k)^2)`` per iteration.

    CPU threads: at most torch's setting, one per 2**18 distance cells of a block's row tile, and
    no more than the CPUs no other process is running on, checked at the start of the call and
    of every pass (restored when the call ends). A thread whose core another process holds makes
    each of the kernel's many parallel regions wait for it, so on a busy machine the kernel runs
    on fewer threads rather than on contended ones; the result does not depend on the number of
    threads. Where the load changes within a pass, ``OMP_WAIT_POLICY=PASSIVE`` (set before torch
    is imported) keeps waiting threads from spinning.

    Memory is ``O(n (d + b + B))`` floats: the data (float32 plus a float64 copy for the final
    assignment), the ``n x b`` distances to ``Q``, and one ``n x B`` block (two on CPU, cut into
    cache-sized row tiles). The ``n x n`` matrix is never formed: at ``n = 100,000``, ``d = 64``,
    ``b = 100`` the kernel needs about 0.2 GB where the matrix alone would need 40 GB. On top of
    that, up to ``cache_mb`` of kept distance blocks (the first blocks of the SWAP phase, which
    later passes then read instead of recomputing).

    References
    ----------
    .. [1] Nafa, Chen et al. "Active deep learning on entity resolution by risk sampling".
       Knowledge-Based Systems, 2022 (section 4, Algorithm 1).
    .. [2] Schubert, Rousseeuw. "Fast and eager k-medoids clustering: O(k) runtime improvement of
       the PAM, CLARA, and CLARANS algorithms". Information Systems 101, 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from skrisk.kmedoids import weighted_fastpam
    >>> X = np.array([[0.0], [0.1], [0.2], [5.0], [5.1], [9.0]])
    >>> res = weighted_fastpam(X, 1, fixed=[0], sample_weight=[1, 1, 1, 1, 1, 5], device="cpu")
    >>> res.selected.tolist(), res.medoids.tolist()
    ([5], [0, 5])
    >>> res.labels.tolist()
    [0, 0, 0, 1, 1, 1]
    """
    # ---- validation, before any work ------------------------------------------------------------
    Xt = _as_data_tensor(X)
    n = int(Xt.shape[0])
    fixed_np = _check_fixed(fixed, n)
    n_free = n - fixed_np.size
    if n_select > n_free:
        raise ValueError(
            f"n_select={n_select} exceeds the {n_free} points of X that are not fixed medoids "
            f"(n_samples={n}, {fixed_np.size} fixed); lower n_select or pass more points."
        )
    w = _check_weights(sample_weight, n, fixed_np)
    max_iter, block_size = int(max_iter), int(block_size)
    dev = resolve_device(device, like=Xt, work=n * block_size)
    b = int(n_select)
    threads = _Threads(dev, n, block_size)

    with torch.no_grad(), _strict_fp32(), threads:
        t0 = time.perf_counter()
        k = _Kernel(Xt, w, fixed_np, b, block_size, dev)
        if init == "heaviest":
            Q = _heaviest(w, np.flatnonzero(np.isin(np.arange(n), fixed_np, invert=True)), b,
                          random_state)
            Q_t = torch.as_tensor(Q, dtype=torch.long, device=dev)
        else:
            bar = _bar(verbose, b, "BUILD")
            Q_t = _greedy_build(k, bar)
            bar.close()
        k.set_medoids(Q_t)
        k.cache_left = int(cache_mb * 2**20)
        t1 = time.perf_counter()

        cand = k.cand_all
        blocks = [k.plan(k.cand_np[s : s + block_size]) for s in range(0, cand.numel(), block_size)]
        nb = len(blocks)
        n_swaps = 0
        n_iter = 0
        converged = True
        bar = _bar(verbose, None, f"SWAP ({schedule})")
        if max_iter == 0:
            converged = False
        elif schedule == "eager":
            since = 0
            evaluated = 0
            t = 0
            while since < nb and evaluated < max_iter * nb:
                if t == 0 and evaluated:
                    threads.recheck()
                delta, m = k.block(blocks[t], "swap", key=t)
                if _eager_swaps(k, delta, m, blocks[t][0]):
                    n_swaps = k.n_swaps
                    since = 0
                    bar.set_postfix(swaps=n_swaps, td=f"{k.unscale(k.td):.6g}")
                else:
                    since += 1
                evaluated += 1
                t = (t + 1) % nb
                bar.update(1)
            n_iter = -(-evaluated // nb)
            converged = since >= nb
        else:
            converged = False
            while n_iter < max_iter:
                n_iter += 1
                threads.recheck()
                best_v, best_m, best_j = math.inf, -1, -1
                for bi, blk in enumerate(blocks):
                    delta, m = k.block(blk, "swap", key=bi)
                    i = int(torch.argmin(delta))
                    dv = float(delta[i])
                    if dv < best_v:
                        best_v, best_m, best_j = dv, int(m[i]), int(blk[0][i])
                    bar.update(1)
                if best_v < -_rtol(k) and k.try_swap(best_m, best_j):
                    n_swaps = k.n_swaps
                    bar.set_postfix(swaps=n_swaps, td=f"{k.unscale(k.td):.6g}")
                else:
                    converged = True
                    break
        bar.close()
        if not converged and max_iter > 0:
            warnings.warn(
                f"weighted_fastpam stopped after max_iter={max_iter} passes with improving swaps "
                "left; raise max_iter for a swap-optimal result.",
                ConvergenceWarning,
                stacklevel=2,
            )
        selected = torch.sort(k.Q).values
        medoids = torch.cat([k.fixed, selected])
        labels, td = k.final(medoids)
        t2 = time.perf_counter()

    return KMedoidsResult(
        selected=selected.cpu().numpy().astype(np.intp),
        medoids=medoids.cpu().numpy().astype(np.intp),
        labels=labels.cpu().numpy().astype(np.intp),
        total_deviation=td,
        n_swaps=n_swaps,
        n_iter=n_iter,
        converged=converged,
        device=str(dev),
        build_seconds=t1 - t0,
        swap_seconds=t2 - t1,
    )
