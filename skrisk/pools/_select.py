"""The pieces a streamed or distributed risk-sampling query is made of, shared by
:func:`~skrisk.pools.stream_query` and :func:`~skrisk.pools.dask_query`: the labelled-pair
filter, the running top-k of the riskiest candidates, and the batch choice (Lipschitz weights +
weighted k-medoids with the labelled pairs as fixed medoids)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._typing import RandomStateLike
from ..exceptions import DataError, EmptyPoolError
from ..risk._uncertainty import matcher_uncertainty
from ._scorer import PAIR_COLUMNS, ChunkScorer, ScoredChunk

if TYPE_CHECKING:  # torch is imported where the kernel runs (on the client), not on the workers
    from ..kmedoids import KMedoidsResult

__all__ = ["PoolQuery"]

_SEP = "\x1f"  # joins the two ids of a pair into one key (a character no id file holds)


@dataclass(frozen=True)
class PoolQuery:
    """The batch a streamed (or Dask) risk-sampling query chose, with what it took.

    Attributes
    ----------
    pairs : pandas.DataFrame
        ``left_id``, ``right_id`` of the chosen pairs, riskiest first.
    positions : ndarray of intp, shape (n_instances,)
        Their rows in the source (counting every pair the source held, in reading order).
    risk : ndarray of float64, shape (n_instances,)
        Their risks.
    proba : ndarray of float64, shape (n_instances,)
        Their match probabilities.
    n_pairs : int
        Pairs scored (the source's pairs less the filtered ones).
    n_filtered : dict of str to int
        Pairs left out before scoring: ``"labelled"`` (already labelled) and ``"self_pairs"``
        (a record paired with itself, deduplication only).
    n_candidates : int
        Riskiest pairs kept for the selector (its ``candidates(n_instances)``, fewer when the pool
        is smaller).
    kmedoids : KMedoidsResult or None
        The kernel's result over the labelled pairs (fixed medoids, first) and the candidates
        (None for a selector other than :class:`~skrisk.strategies.KMedoidsSelector`).
    timings : dict of str to float
        Wall seconds: ``"labelled"`` (scoring the labelled pairs), ``"score"`` (reading, filtering
        and scoring the pool), ``"merge"`` (the running top-k), ``"weights"``, ``"kmedoids"``,
        ``"total"``.
    """

    pairs: pd.DataFrame
    positions: np.ndarray
    risk: np.ndarray
    proba: np.ndarray
    n_pairs: int
    n_filtered: dict[str, int]
    n_candidates: int
    kmedoids: "KMedoidsResult | None"
    timings: dict[str, float] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (
            f"PoolQuery(n_instances={len(self.positions)}, n_pairs={self.n_pairs}, "
            f"n_candidates={self.n_candidates}, total_s={self.timings.get('total', float('nan')):.3f})"
        )


#: Candidates a pool query keeps, as a multiple of the batch, for a selector that chooses from the
#: whole pool (its ``candidates`` is None): a streamed pool is never held whole.
STREAM_PRESELECT = 2


def query_selector(sampler: Any, matcher: Any, random_state: RandomStateLike, who: str) -> tuple[Any, RandomStateLike]:
    """The selector of ``sampler`` (a default ``RiskSampler()`` when None) for ``matcher``, checked,
    and the seed of the query: ``random_state``, else the sampler's."""
    from ..strategies import KMedoidsSelector, RiskSampler

    if sampler is None:
        sampler = RiskSampler()
    elif not isinstance(sampler, RiskSampler):
        raise TypeError(f"{who}: sampler must be a skrisk.RiskSampler, got {type(sampler).__name__}.")
    selector = sampler.resolve_selector(matcher)
    if isinstance(selector, KMedoidsSelector) and selector.preselect is None:
        raise ValueError(
            f"{who}: the selector's preselect must be a number >= 1 (a multiple of n_instances), got "
            "None: a streamed pool is never held whole, so the kernel always runs on the riskiest "
            "ceil(preselect * n_instances) pairs. Give KMedoidsSelector(preselect=2), for example."
        )
    return selector, (random_state if random_state is not None else sampler.random_state)


def n_candidates(n_instances: Any, selector: Any) -> int:
    """The number of candidates to keep: the selector's ``candidates(n)``, or
    ``STREAM_PRESELECT * n`` for a selector that chooses from the whole pool; ``n_instances``
    checked."""
    if isinstance(n_instances, bool) or not isinstance(n_instances, numbers.Integral) or n_instances < 1:
        raise ValueError(f"n_instances must be a positive int, got {n_instances!r}.")
    m = selector.candidates(int(n_instances)) if callable(getattr(selector, "candidates", None)) else None
    if m is None:
        m = int(math.ceil(STREAM_PRESELECT * int(n_instances)))
    return max(int(n_instances), int(m))


def _keys(left: np.ndarray, right: np.ndarray, dedup: bool) -> pd.Index:
    """One text key per pair; for deduplication the two ids in sorted order."""
    left = np.asarray(left, dtype=object)
    right = np.asarray(right, dtype=object)
    if dedup:
        swap = right < left
        left, right = np.where(swap, right, left), np.where(swap, left, right)
    return pd.Index(pd.Series(left, dtype=object) + _SEP + pd.Series(right, dtype=object))


class PairFilter:
    """Leaves out the labelled pairs (either order for deduplication) and self-pairs."""

    def __init__(self, labelled: pd.DataFrame | None, task: str) -> None:
        self.dedup = task == "dedup"
        if labelled is None or len(labelled) == 0:
            self.keys = pd.Index([], dtype=object)
        else:
            ids = [labelled[c].astype(str).to_numpy() for c in PAIR_COLUMNS]
            self.keys = _keys(ids[0], ids[1], self.dedup)

    def __call__(self, pairs: pd.DataFrame) -> tuple[np.ndarray, dict[str, int]]:
        """Boolean mask of the pairs to keep, and the counts left out."""
        left = pairs["left_id"].astype(str).to_numpy()
        right = pairs["right_id"].astype(str).to_numpy()
        keep = np.ones(len(pairs), dtype=bool)
        counts = {"labelled": 0, "self_pairs": 0}
        if self.dedup:
            self_pair = left == right
            counts["self_pairs"] = int(self_pair.sum())
            keep &= ~self_pair
        if len(self.keys):
            known = _keys(left, right, self.dedup).isin(self.keys)
            counts["labelled"] = int((known & keep).sum())
            keep &= ~known
        return keep, counts


def chunk_risk(scored: ScoredChunk) -> np.ndarray:
    """The risk of a scored chunk; without a risk model the matcher's uncertainty."""
    if scored.risk is not None:
        return scored.risk
    return matcher_uncertainty(scored.proba)


@dataclass
class Candidates:
    """The riskiest pairs seen so far: ties of risk go to the lower key (the pair's order).

    A pair that the source holds more than once (in one chunk or in several) is kept once, at
    its riskiest occurrence (ties: the first in the source), so a batch never asks it twice.
    """

    key: np.ndarray
    risk: np.ndarray
    proba: np.ndarray
    representation: np.ndarray
    left_id: np.ndarray
    right_id: np.ndarray

    @classmethod
    def empty(cls) -> "Candidates":
        o = np.empty(0, dtype=object)
        return cls(np.empty(0, np.int64), np.empty(0), np.empty(0), np.empty((0, 0), np.float32), o, o)

    @classmethod
    def from_scored(cls, scored: ScoredChunk, key: np.ndarray, m: int, dedup: bool = False) -> "Candidates":
        """The ``m`` riskiest pairs of one scored chunk (``key``: their order keys); with ``dedup``
        a pair and its mirror are one pair."""
        risk = chunk_risk(scored)
        left, right = (scored.pairs[c].to_numpy(dtype=object) for c in PAIR_COLUMNS)
        once = first_of_each_pair(risk, np.asarray(key), left, right, dedup)
        idx = once[top_positions(risk[once], np.asarray(key)[once], m)]
        return cls(
            np.asarray(key, dtype=np.int64)[idx], risk[idx], scored.proba[idx],
            scored.representation[idx], scored.pairs["left_id"].to_numpy(dtype=object)[idx],
            scored.pairs["right_id"].to_numpy(dtype=object)[idx],
        )

    def __len__(self) -> int:
        return len(self.key)

    def merge(self, other: "Candidates", m: int, dedup: bool = False) -> "Candidates":
        """The ``m`` riskiest of both (each pair once; with ``dedup`` a pair and its mirror too)."""
        if len(self) == 0:
            return other
        if len(other) == 0:
            return self
        if self.representation.shape[1] != other.representation.shape[1]:
            raise DataError(
                f"The representations of two chunks differ in width ({self.representation.shape[1]} "
                f"and {other.representation.shape[1]}): the matcher must represent every pair alike."
            )
        cat = [np.concatenate([getattr(self, f), getattr(other, f)]) for f in
               ("key", "risk", "proba", "representation", "left_id", "right_id")]
        once = first_of_each_pair(cat[1], cat[0], cat[4], cat[5], dedup)
        idx = once[top_positions(cat[1][once], cat[0][once], m)]
        return Candidates(*(a[idx] for a in cat))

    def in_key_order(self) -> "Candidates":
        order = np.argsort(self.key, kind="stable")
        return Candidates(self.key[order], self.risk[order], self.proba[order],
                          self.representation[order], self.left_id[order], self.right_id[order])


def first_of_each_pair(risk: np.ndarray, key: np.ndarray, left: np.ndarray, right: np.ndarray,
                       dedup: bool = False) -> np.ndarray:
    """Positions of one occurrence of each distinct ``(left, right)`` pair (with ``dedup``, of each
    unordered pair): its riskiest, ties to the smaller key; in position order."""
    pair = _keys(left, right, dedup=dedup)
    if pair.is_unique:
        return np.arange(len(risk))
    order = np.lexsort((key, -risk))
    first = ~pair[order].duplicated(keep="first")
    return np.sort(order[first])


def top_positions(risk: np.ndarray, key: np.ndarray, m: int) -> np.ndarray:
    """Positions of the ``m`` largest risks, ties broken by the smaller key; riskiest first."""
    n = len(risk)
    if n > m:
        threshold = np.partition(risk, n - m)[n - m]
        idx = np.flatnonzero(risk >= threshold)
    else:
        idx = np.arange(n)
    order = np.lexsort((np.asarray(key)[idx], -risk[idx]))
    return idx[order[:m]]


def labelled_representation(
    scorer: ChunkScorer, labelled: Any, who: str
) -> tuple[pd.DataFrame | None, np.ndarray]:
    """The labelled pairs (checked) and their representations."""
    if labelled is None:
        return None, np.empty((0, 0), dtype=np.float32)
    if not isinstance(labelled, pd.DataFrame):
        raise TypeError(
            f"{who}: labelled must be a DataFrame of the labelled pairs (columns 'left_id', "
            f"'right_id'), or None; got {type(labelled).__name__}."
        )
    scored = scorer._score(labelled, representation=True, where=f"{who}: the labelled pairs")
    return scored.pairs, scored.representation


def choose_batch(
    cands: Candidates, rep_lab: np.ndarray, n_instances: int, selector: Any, random_state: RandomStateLike,
    timings: dict[str, float],
) -> tuple[np.ndarray, "KMedoidsResult | None"]:
    """Risk sampling's batch among the candidates (in key order), by the selector: positions into
    ``cands``, riskiest first, and the kernel's result."""
    if len(cands) < n_instances:  # every candidate kept: the pool holds fewer distinct pairs
        raise EmptyPoolError(
            f"the pool holds {len(cands)} distinct pairs after filtering (a pair given more than once counts "
            f"once), fewer than n_instances={n_instances}. Ask for a smaller batch."
        )
    chosen = selector.select(cands.risk, cands.representation, rep_lab, n_instances, proba=cands.proba,
                             random_state=random_state)
    timings.update(chosen.timings)
    return chosen.positions, chosen.kmedoids


def pool_query(cands: Candidates, chosen: np.ndarray, positions: np.ndarray, res: "KMedoidsResult | None",
               n_pairs: int, filtered: dict[str, int], timings: dict[str, float]) -> PoolQuery:
    """The :class:`PoolQuery` of the ``chosen`` candidates (``positions``: their rows in the source)."""
    return PoolQuery(
        pairs=pd.DataFrame({"left_id": cands.left_id[chosen].astype(str),
                            "right_id": cands.right_id[chosen].astype(str)}),
        positions=np.asarray(positions).astype(np.intp),
        risk=cands.risk[chosen],
        proba=cands.proba[chosen],
        n_pairs=n_pairs,
        n_filtered=filtered,
        n_candidates=len(cands),
        kmedoids=res,
        timings=timings,
    )


def empty_pool_error(who: str, name: str, n_read: int, filtered: dict[str, int], n_pairs: int,
                     n_instances: int) -> EmptyPoolError:
    what = (f"{name} held {n_read} pairs; {filtered['labelled']} were labelled already and "
            f"{filtered['self_pairs']} paired a record with itself")
    if n_pairs == 0:
        return EmptyPoolError(f"{who}: the pool is empty after filtering: {what}. Give a source with "
                              "unlabelled candidate pairs.")
    return EmptyPoolError(f"{who}: the pool holds {n_pairs} pairs after filtering, fewer than "
                          f"n_instances={n_instances} ({what}). Ask for a smaller batch.")
