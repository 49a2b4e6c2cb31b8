"""stream_query: risk sampling over a pool read chunk by chunk, in bounded memory."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from .._typing import RandomStateLike
from ._scorer import ChunkScorer
from ._select import (
    Candidates,
    PairFilter,
    PoolQuery,
    choose_batch,
    empty_pool_error,
    labelled_representation,
    n_candidates,
    pool_query,
    query_selector,
)
from ._source import PairSource, as_source

__all__ = ["stream_query"]


def _bar(progress: bool, total: int | None) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="pairs", unit_scale=True, desc="scoring pairs", disable=not progress,
                leave=False)


def stream_query(
    scorer: ChunkScorer,
    source: PairSource | Any,
    *,
    labelled: pd.DataFrame | None,
    n_instances: int,
    chunk_size: int = 100_000,
    sampler: Any = None,
    random_state: RandomStateLike = None,
    progress: bool = True,
) -> PoolQuery:
    """Risk sampling over a pool that is read chunk by chunk and never held whole.

    Every chunk of the source is filtered (labelled pairs and, for deduplication, self-pairs
    left out), scored by ``scorer`` (similarity features, match probability, risk,
    representation) and merged into a running top list of the riskiest pairs with their
    representations (the sampler's selector's ``candidates(n_instances)``: ``ceil(preselect *
    n_instances)`` for :class:`~skrisk.strategies.KMedoidsSelector`, ``2 * n_instances`` for a
    selector that chooses from the whole pool); everything else of the chunk is dropped. The batch
    is then chosen among those candidates by the sampler's selector, the one risk-sampling core
    of :class:`~skrisk.RiskSampler` too: by default Lipschitz weights ``R_i / min_j ||x_i - x_j||``
    against the labelled pairs' representations, and weighted k-medoids
    (:func:`skrisk.kmedoids.weighted_fastpam`) with the labelled pairs as fixed medoids.

    Parameters
    ----------
    scorer : ChunkScorer
        The tables and fitted models.
    source : PairSource, DataFrame, path of a Parquet file or dataset, or iterable of DataFrames
        The pool (anything :class:`PairSource` takes).
    labelled : DataFrame or None
        The labelled pairs (``left_id``, ``right_id``; other columns ignored): the fixed medoids,
        and left out of the pool. None: no labelled pair (the weights are then the risks).
    n_instances : int
        Batch size.
    chunk_size : int, default=100_000
        Pairs scored at once (bounds the memory, see Notes).
    sampler : RiskSampler, default=None
        Its selector (``"auto"`` resolved for the scorer's matcher) chooses the batch, seeded by
        its ``random_state``; a :class:`~skrisk.strategies.KMedoidsSelector`'s ``preselect`` must
        be a number here, never None. Its scoring parameters (validation pairs, its risk) are not
        used: the scorer scores. None: ``RiskSampler()``.
    random_state : int, RandomState or None, default=None
        Seeds the kernel's tie-breaks; None: the sampler's ``random_state``.
    progress : bool, default=True
        A tqdm bar of the pairs scored.

    Returns
    -------
    PoolQuery

    Raises
    ------
    DataError
        A chunk without the id columns or with other columns than the first chunk (the message
        names the chunk and the columns), an id not in its table (names the pool row).
    EmptyPoolError
        No pair (or fewer than ``n_instances``) left after filtering.

    Notes
    -----
    Ties of risk are broken by the pairs' order in the source, so the batch does not depend on
    ``chunk_size``, and equals the batch of the whole pool scored as one chunk.

    Without a risk model in the scorer the risk is the matcher's uncertainty
    (``skrisk.risk.matcher_uncertainty``).
    Unlike :class:`~skrisk.RiskSampler`'s default first query (``preselect_after="batch"``), the
    kernel never sees the whole pool: it is not in memory. The distance floor's scale
    (``distance_floor="auto"``) is the median distance of the candidates, not of the pool.

    Peak memory, with ``c = chunk_size``, ``m`` candidates,
    ``|L|`` labelled pairs, ``A`` attributes, ``F`` similarity features and representations of
    width ``h``, is about

    - per chunk: the pair frame (``2 A c`` references to the tables' texts, 8 bytes each, plus
      the ids), the features (``8 F c`` bytes), the probabilities and risks (``16 c``), the
      representation (``4 h c``) and the models' temporaries (a random forest: a few bytes per
      pair and tree; LearnRisk: ``O(c x rules)``);
    - kept: ``m`` candidates (``4 h + 40`` bytes each plus their ids) and the labelled
      representations (``4 h |L|``);
    - the kernel: ``O((m + |L|) (h + n_instances + 64))`` floats.

    None of it grows with the pool. For ``c = 100,000``, ``A = 4``, ``F = 30``, ``h = 30`` this
    is some 60 MB per chunk on top of the tables and the models.
    """
    who = "stream_query"
    selector, seed = query_selector(sampler, scorer.matcher, random_state, who)
    m = n_candidates(n_instances, selector)
    src = as_source(source)
    timings = {"labelled": 0.0, "score": 0.0, "merge": 0.0}
    start = time.perf_counter()
    lab_pairs, rep_lab = labelled_representation(scorer, labelled, who)
    timings["labelled"] = time.perf_counter() - start
    keep_out = PairFilter(lab_pairs, scorer.task)
    dedup = scorer.task == "dedup"  # a pair and its mirror are one candidate
    cands = Candidates.empty()
    filtered = {"labelled": 0, "self_pairs": 0}
    n_read = n_pairs = 0
    bar = _bar(progress, src.n_pairs)
    try:
        t = time.perf_counter()
        for chunk in src.chunks(chunk_size):
            rows = np.arange(chunk.start, chunk.start + len(chunk.pairs), dtype=np.int64)
            n_read += len(rows)
            keep, counts = keep_out(chunk.pairs)
            for k, v in counts.items():
                filtered[k] += v
            if keep.any():
                pairs = chunk.pairs[keep].reset_index(drop=True) if not keep.all() else chunk.pairs
                scored = scorer._score(pairs, representation=True, rows=rows[keep],
                                       where=f"{who}: {src.name}: {chunk.where}")
                n_pairs += len(scored)
                t_merge = time.perf_counter()
                cands = cands.merge(Candidates.from_scored(scored, rows[keep], m, dedup), m, dedup)
                timings["merge"] += time.perf_counter() - t_merge
            bar.update(len(rows))
        timings["score"] = time.perf_counter() - t - timings["merge"]
    finally:
        bar.close()
    if n_pairs < n_instances:
        raise empty_pool_error(who, src.name, n_read, filtered, n_pairs, n_instances)
    cands = cands.in_key_order()
    chosen, res = choose_batch(cands, rep_lab, n_instances, selector, seed, timings)
    timings["total"] = time.perf_counter() - start
    return pool_query(cands, chosen, cands.key[chosen], res, n_pairs, filtered, timings)
