"""``match``: block new tables with a saved model, score the candidate pairs in chunks, cluster.

Memory is bounded by the chunk size: the candidate pairs are held as ids, and features, the
matcher's input and probabilities exist for one chunk at a time; only the pairs above the
model's threshold are kept (with their risk, and their reasons on request).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

from .._threads import map_in_order, n_threads
from ..data._types import shared_standardisation
from ._model import MatchModel, ModelManifest
from ._steps import (_candidates, _feature_names, _kept, _matches_and_entities, _model_rules, _prepare_tables,
                     _reasons, _stage)

__all__ = ["MatchResult", "match", "match_loading"]


@dataclass
class MatchResult:
    """What :func:`match` found.

    Attributes
    ----------
    matches : pandas.DataFrame
        One row per pair above the model's threshold: ``left_id``, ``right_id`` (str),
        ``probability``, ``risk`` (float), and ``reasons`` (str) when asked for; sorted by
        probability, highest first. For a dedup task ``left_id < right_id``.
    entities : Entities
        The matches grouped into entities (:func:`~skrisk.matching.cluster_entities`).
    n_candidates : int
        Candidate pairs blocking produced (all of them were scored).
    timings : dict of str to float
        Wall seconds of ``"checking"`` (the tables against the model), ``"blocking"``,
        ``"encoding"`` (every distinct value of the tables normalised, tokenised and hashed
        once), ``"scoring"`` (features, matcher and risk of every candidate,
        :class:`~skrisk.pools.ChunkScorer`), ``"reasons"``, ``"entities"`` and ``"total"``.
    blocking : BlockingResult or None
        The blocking's figures (number of candidates, reduction ratio, time), without the
        candidate pairs themselves (:meth:`~skrisk.data.BlockingResult.without_pairs`: released
        once scored; :func:`skrisk.data.block` gives them).
    """

    matches: pd.DataFrame
    entities: Any
    n_candidates: int
    timings: dict[str, float] = field(default_factory=dict)
    blocking: Any = None


def match(
    model: MatchModel,
    left: pd.DataFrame,
    right: pd.DataFrame | None = None,
    *,
    chunk_size: int = 50_000,
    reasons: bool = False,
    progress: bool = True,
    one_to_one: bool = False,
    blocking: Any = None,
    names: tuple[str, str] = ("the left table", "the right table"),
    client: Any = None,
    n_jobs: int | None = -1,
    entities: Any = None,
    merge: str = "report",
) -> MatchResult:
    """Block new tables with a saved model, score every candidate pair, group matches into entities.

    Parameters
    ----------
    model : MatchModel
        From :func:`~skrisk.matching.load_model` (or built in memory).
    left : pandas.DataFrame
        New records indexed by unique id (as :func:`skrisk.data.read_table` reads them), with at
        least the model's attributes (other columns are ignored).
    right : pandas.DataFrame or None, default=None
        The other table of a linkage model. For a dedup model it is optional: its records are
        deduplicated together with ``left`` (ids must then be unique across both).
    chunk_size : int, default=50_000
        Candidate pairs scored at a time: bounds the memory of features and probabilities.
    reasons : bool, default=False
        Add a ``reasons`` column: the top three reasons of each match's risk (LearnRisk's fired
        rules, with feature names).
    progress : bool, default=True
        A tqdm progress bar per stage: blocking, encoding and entities (each its elapsed
        time) and scoring (over the candidate pairs).
    one_to_one : bool, default=False
        Linkage of two clean tables: each record matches at most one record of the other table
        (entities by maximum-weight matching instead of connected components), in both outputs:
        ``matches`` keeps exactly the pairs of that matching (the other pairs above the
        threshold are dropped), and every entity is one such pair or one record.
    blocking : rule or list of rules, default=None
        Blocking rules for :func:`skrisk.data.block`; None: the model's own. Records identical
        in every attribute (after normalisation) are candidates whatever the rules, and are
        blocked as one record whose pairs stand for those of every copy
        (``block(..., identical=True)``).
    names : (str, str)
        How messages name the two tables (e.g. their file paths).
    client : distributed.Client or None, default=None
        Score on this Dask cluster (needs ``skrisk[dask]``): ``left`` and ``right`` may then also
        be Dask DataFrames or Parquet folders (read into the client, a folder's
        ``model.id_column`` as the index when it is a column; partitions whose columns or column
        types differ are refused). With the ``typed`` rule (the default of a model on person
        columns) the records stay on the workers: each record's keys are hashed where it is
        and shuffled by hash, the pairs are made where the keys meet, joined to their records'
        partitions and scored there; only the matches and the record ids come to the client,
        and ``timings["scoring"]`` is the wall time of blocking and scoring on the cluster.
        With other rules (the ``tokens`` rule's nearest neighbours need every record), the
        tables are read into the client and blocked there with the single-machine code, and
        each partition of candidate pairs is scored on a worker. Either way the candidates,
        matches (probabilities within 1e-9) and entities are those without a client, entities
        are computed on the client, a worker lost mid-run has its work computed again, and
        ``timings["reasons"]`` sums the workers' seconds.
    n_jobs : int or None, default=-1
        Threads for blocking's row chunks and for scoring (chunks of pairs scored side by side;
        -1: every CPU, None: 1; never more threads than CPUs). The matches and entities do not
        depend on it; memory grows by a chunk per thread.
    entities : path-like or None, default=None
        Incremental matching: the folder of an earlier run (its ``entities.csv`` and blocking
        index). The new records are blocked against the new and the known records only, join
        the known entities (whose ids stay) or start new ones; the result also has ``changes``
        (merges and updates, riskiest first; a linkage record named ``left:<id>`` or
        ``right:<id>``) and ``summary``. An empty ``left`` is allowed; a linkage model takes new
        records of either table or both (``right`` may be None). Not with ``one_to_one``. See the
        user guide's incremental matching section.
    merge : {"report", "apply"}, default="report"
        With ``entities``: a new record that links two known entities is reported in
        ``changes``; ``"apply"`` also merges them (into the smallest id).

    Returns
    -------
    MatchResult

    Raises
    ------
    DataError
        A table lacks an attribute the model needs, holds repeated ids, shares ids with the other
        table of a dedup task, a linkage model got one table, or blocking found no candidate.
        Raised before any pair is scored.
    """
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}.")
    if entities is not None and client is not None:
        raise ValueError("match(entities=..., client=...): incremental matching runs on one machine; "
                         "leave out client (the new records and their candidates are few).")
    if entities is not None and one_to_one:
        raise ValueError("match(entities=..., one_to_one=True): an incremental run does not keep the matches "
                         "one to one; run a full run (without entities) for a one-to-one linkage.")
    if entities is not None:
        from ._incremental import match_incremental

        return match_incremental(model, left, right, entities, merge=merge, chunk_size=chunk_size,
                                 reasons=reasons, blocking=blocking, names=names, n_jobs=n_jobs,
                                 tools={"prepare_tables": _prepare_tables, "feature_names": _feature_names,
                                        "reasons": _reasons})
    model.check()
    if client is not None:
        from ._distributed import match_on_dask

        return MatchResult(**match_on_dask(model, left, right, client=client, chunk_size=int(chunk_size),
                                           reasons=reasons, progress=progress, one_to_one=one_to_one,
                                           blocking=blocking, names=names, n_jobs=n_jobs))
    return match_loading(model, lambda: model, left, right, chunk_size=int(chunk_size), reasons=reasons,
                         progress=progress, one_to_one=one_to_one, blocking=blocking, names=names,
                         n_jobs=n_jobs)[1]


def match_loading(
    plan: MatchModel | ModelManifest, load: Callable[[], MatchModel], left: pd.DataFrame,
    right: pd.DataFrame | None, *, chunk_size: int, reasons: bool, progress: bool, one_to_one: bool,
    blocking: Any, names: tuple[str, str], n_jobs: int | None,
) -> tuple[MatchModel, MatchResult]:
    """:func:`match` on one machine, the model made by ``load()`` once the tables are blocked:
    ``plan`` (a model, or the manifest of a model file) gives the attributes, task and rules that
    checking and blocking need, so a model file's estimators (and scikit-learn) load while, not
    before, the work starts. ``timings["total"]`` leaves out ``load()``'s time."""
    if blocking is None and not isinstance(plan, MatchModel) and plan.blocking is None:
        plan = load()  # the default rules follow the features' column types
    t_start = time.perf_counter()
    timings = dict.fromkeys(("checking", "blocking", "encoding", "scoring", "reasons", "entities"), 0.0)
    left, right = _prepare_tables(plan, left, right, names)
    timings["checking"] = time.perf_counter() - t_start
    threads = n_threads(n_jobs)
    with shared_standardisation():  # blocking and encoding standardise each typed value once
        with _stage("Blocking", progress, timings, "blocking"):
            blocked = _candidates(left, right, _model_rules(plan) if blocking is None else blocking, names, n_jobs)
        t_load = time.perf_counter()
        model = plan if isinstance(plan, MatchModel) else load()
        t_load = time.perf_counter() - t_load
        with _stage("Encoding the tables", progress, timings, "encoding"):
            # chunks on threads, each on one: no thread waits for another's rapidfuzz workers
            scorer = model.scorer(left, right, n_jobs=1 if threads > 1 else n_jobs)  # every distinct value once
    n = blocked.n_candidates
    names_f = _feature_names(model) if reasons else []
    step = int(chunk_size)

    def score_chunk(start: int) -> tuple[int, pd.DataFrame | None]:
        chunk = blocked.pairs.iloc[start:start + step]
        return len(chunk), _kept(scorer.score(chunk, risk_of="matches"), model.threshold)  # risk of the kept only

    kept: list[pd.DataFrame] = []
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=n, unit="pair", desc="Scoring candidate pairs")
    tick = time.perf_counter()
    try:
        for size, part in map_in_order(score_chunk, range(0, n, step), threads):
            if part is not None:
                if reasons:
                    r_tick = time.perf_counter()
                    part["reasons"] = _reasons(model, scorer, part, names_f)
                    timings["reasons"] += time.perf_counter() - r_tick
                kept.append(part)
            if bar is not None:
                bar.update(size)
    finally:
        if bar is not None:
            bar.close()
    timings["scoring"] += time.perf_counter() - tick - timings["reasons"]
    # every candidate is scored: release them before the entities (7.6 million pairs of ids at a
    # million records, about 0.12 GB); the result keeps the blocking's figures
    blocked = blocked.without_pairs()
    matches, entities = _matches_and_entities(model, left, right, kept, scorer, reasons=reasons,
                                              one_to_one=one_to_one, progress=progress, timings=timings)
    timings["total"] = time.perf_counter() - t_start - t_load
    return model, MatchResult(matches=matches, entities=entities, n_candidates=n, timings=timings,
                              blocking=blocked)
