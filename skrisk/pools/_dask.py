"""The same risk-sampling query over a Dask DataFrame of candidate pairs, and blocking on Dask.

Needs the optional extra ``skrisk[dask]`` (``dask[dataframe,distributed]``); importing this
module without it raises an ImportError that says so.
"""

from __future__ import annotations

import re
import time
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._typing import RandomStateLike
from ..data._text import normalise_text
from ..exceptions import DataError, SkriskError
from ._scorer import PAIR_COLUMNS, ChunkScorer
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

try:
    import dask
    import dask.dataframe as dd
except ImportError as exc:  # pragma: no cover - the extra is in [dev]
    raise ImportError(
        "skrisk.pools.dask_query / dask_block need Dask: pip install 'skrisk[dask]'."
    ) from exc

__all__ = ["WorkerLostError", "dask_block", "dask_query"]

_ROW_BITS = 40  # key = partition << 40 | row: up to 2**40 rows per partition, 2**23 partitions
_WORD_RE = re.compile(r"(?u)\b\w+\b")


class WorkerLostError(SkriskError, RuntimeError):
    """The Dask cluster lost a worker (or its connection) during a query; no batch was chosen."""


def _lost_worker_errors() -> tuple[type[BaseException], ...]:
    """What distributed raises when a worker or its connection is lost (not the errors a task
    raises itself, e.g. a missing file, which reach the caller as they are)."""
    errors: list[type[BaseException]] = []
    try:
        from distributed import CancelledError
        from distributed.comm.core import CommClosedError
        from distributed.scheduler import KilledWorker

        errors += [KilledWorker, CommClosedError, CancelledError]
    except ImportError:  # pragma: no cover - plain dask without distributed
        pass
    return tuple(errors)


def _partition_candidates(
    part: pd.DataFrame, number: int, scorer: ChunkScorer, keep_out: PairFilter, m: int,
    chunk_size: int, who: str,
) -> dict[str, Any]:
    """On a worker: filter, score (in pieces of ``chunk_size``) and keep the ``m`` riskiest pairs
    of one partition, with their representations."""
    start = time.perf_counter()
    cands = Candidates.empty()
    counts = {"labelled": 0, "self_pairs": 0}
    n_scored = 0
    part = part[list(PAIR_COLUMNS)].reset_index(drop=True)
    for offset in range(0, len(part), chunk_size):
        piece = part.iloc[offset:offset + chunk_size].reset_index(drop=True)
        rows = np.arange(offset, offset + len(piece), dtype=np.int64)
        keep, c = keep_out(piece)
        for k, v in c.items():
            counts[k] += v
        if not keep.any():
            continue
        scored = scorer._score(
            piece[keep].reset_index(drop=True), representation=True,
            where=f"{who}: partition {number}", rows=rows[keep], row_word="row",
        )
        n_scored += len(scored)
        key = (np.int64(number) << _ROW_BITS) | rows[keep]
        dedup = scorer.task == "dedup"  # a pair and its mirror are one candidate
        cands = cands.merge(Candidates.from_scored(scored, key, m, dedup), m, dedup)
    return {"number": number, "n": len(part), "n_scored": n_scored, "filtered": counts,
            "candidates": cands, "seconds": time.perf_counter() - start}


def _client(client: Any) -> Any:
    if client is not None:
        return client
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError):  # no distributed client: dask's local scheduler
        return None


def dask_query(
    scorer: ChunkScorer,
    ddf: Any,
    *,
    labelled: pd.DataFrame | None,
    n_instances: int,
    chunk_size: int = 100_000,
    sampler: Any = None,
    random_state: RandomStateLike = None,
    client: Any = None,
    progress: bool = True,
) -> PoolQuery:
    """Risk sampling over a Dask DataFrame of candidate pairs: the same batch as
    :func:`stream_query`, with the scoring spread over the workers.

    The scorer (tables and fitted models) and the labelled-pair filter are sent to every worker
    once (``client.scatter(..., broadcast=True)``; without a distributed client, one shared graph
    node). Each partition is filtered, scored in pieces of ``chunk_size`` and reduced to its
    riskiest pairs with their representations on the worker (as many as :func:`stream_query`
    keeps); the client merges those lists (the global riskiest pairs, ties to the earlier pair)
    and runs the sampler's selector (by default Lipschitz weights and weighted k-medoids with the
    labelled pairs fixed).

    Parameters
    ----------
    scorer : ChunkScorer
        The tables and fitted models.
    ddf : dask.dataframe.DataFrame
        Candidate pairs with columns ``left_id`` and ``right_id``.
    labelled, n_instances, chunk_size, sampler, random_state
        As in :func:`stream_query` (``chunk_size`` bounds the pairs a worker scores at once).
    client : distributed.Client, optional
        The cluster; default the current client (``distributed.get_client()``), else dask's
        local scheduler.
    progress : bool, default=True
        A tqdm bar of the pairs scored (updated as partitions finish).

    Returns
    -------
    PoolQuery
        ``positions`` count the rows of ``ddf`` in partition order.

    Raises
    ------
    DataError
        ``ddf`` lacks the id columns, or a partition holds an id that is not in its table (the
        message names the partition and its row).
    EmptyPoolError
        No pair (or fewer than ``n_instances``) left after filtering.
    WorkerLostError
        A worker died (or the connection to it was lost) during the query: the pending tasks are
        cancelled, no partial batch is returned, and the call can be repeated once the cluster
        has its workers back (a nanny restarts a dead worker).

    Notes
    -----
    Memory per worker is that of :func:`stream_query` for one chunk, plus the scorer; the client
    holds ``n_partitions * m`` candidates at most (``m`` those of :func:`stream_query`) (each worker sends
    only its partition's riskiest pairs) and the kernel.

    Examples
    --------
    >>> from distributed import Client, LocalCluster  # doctest: +SKIP
    >>> client = Client(LocalCluster(n_workers=2, threads_per_worker=1))  # doctest: +SKIP
    >>> ddf = dask.dataframe.read_parquet("candidates/")  # doctest: +SKIP
    >>> q = dask_query(scorer, ddf, labelled=labelled_pairs, n_instances=100)  # doctest: +SKIP
    """
    who = "dask_query"
    selector, seed = query_selector(sampler, scorer.matcher, random_state, who)
    m = n_candidates(n_instances, selector)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}.")
    if not isinstance(ddf, dd.DataFrame):
        raise TypeError(
            f"{who} takes a dask DataFrame of candidate pairs, got {type(ddf).__name__}; for pandas "
            "frames, Parquet files or chunks on one machine use skrisk.pools.stream_query."
        )
    cols = [str(c) for c in ddf.columns]
    missing = [c for c in PAIR_COLUMNS if c not in cols]
    if missing:
        raise DataError(
            f"{who}: the dask DataFrame lacks the column(s) {missing} (its columns: {cols[:10]}): "
            f"candidate pairs need the record ids {list(PAIR_COLUMNS)}."
        )
    timings: dict[str, float] = {}
    start = time.perf_counter()
    lab_pairs, rep_lab = labelled_representation(scorer, labelled, who)
    timings["labelled"] = time.perf_counter() - start
    keep_out = PairFilter(lab_pairs, scorer.task)
    client = _client(client)
    parts = ddf[list(PAIR_COLUMNS)].to_delayed()
    t = time.perf_counter()
    results = _run(client, parts, scorer, keep_out, m, int(chunk_size), who, progress)
    timings["score"] = time.perf_counter() - t
    t = time.perf_counter()
    results.sort(key=lambda r: r["number"])
    offsets = np.concatenate([[0], np.cumsum([r["n"] for r in results])]).astype(np.int64)
    cands = Candidates.empty()
    filtered = {"labelled": 0, "self_pairs": 0}
    for r in results:
        cands = cands.merge(r["candidates"], m, scorer.task == "dedup")
        for k, v in r["filtered"].items():
            filtered[k] += v
    n_pairs = int(sum(r["n_scored"] for r in results))
    timings["merge"] = time.perf_counter() - t
    timings["partition_seconds"] = float(sum(r["seconds"] for r in results))
    if n_pairs < n_instances:
        raise empty_pool_error(who, "the dask DataFrame", int(offsets[-1]), filtered, n_pairs, n_instances)
    cands = cands.in_key_order()
    chosen, res = choose_batch(cands, rep_lab, n_instances, selector, seed, timings)
    key = cands.key[chosen]
    positions = offsets[key >> _ROW_BITS] + (key & ((1 << _ROW_BITS) - 1))
    timings["total"] = time.perf_counter() - start
    return pool_query(cands, chosen, positions, res, n_pairs, filtered, timings)


def _run(client: Any, parts: list, scorer: ChunkScorer, keep_out: PairFilter, m: int, chunk_size: int,
         who: str, progress: bool) -> list[dict[str, Any]]:
    """Score every partition; a lost worker becomes one clear error and nothing is returned."""
    from tqdm.auto import tqdm

    bar = tqdm(unit="pairs", unit_scale=True, desc="scoring pairs", disable=not progress, leave=False)
    if client is None:
        scorer_node, filter_node = dask.delayed(scorer, pure=True), dask.delayed(keep_out, pure=True)
        tasks = [dask.delayed(_partition_candidates, pure=True)(p, i, scorer_node, filter_node, m,
                                                               chunk_size, who)
                 for i, p in enumerate(parts)]
        try:
            out = list(dask.compute(*tasks))
        finally:
            bar.close()
        return out
    from distributed import as_completed

    futures: list[Any] = []
    try:
        scorer_f = client.scatter(scorer, broadcast=True, hash=False)
        filter_f = client.scatter(keep_out, broadcast=True, hash=False)
        tasks = [dask.delayed(_partition_candidates, pure=False)(p, i, scorer_f, filter_f, m,
                                                                chunk_size, who)
                 for i, p in enumerate(parts)]
        futures = client.compute(tasks)
        out = []
        for fut in as_completed(futures):
            r = fut.result()
            out.append(r)
            bar.update(r["n"])
        return out
    except _lost_worker_errors() as exc:
        raise WorkerLostError(
            f"{who}: the Dask cluster lost a worker (or its connection) while scoring the pairs "
            f"({type(exc).__name__}: {exc}). No batch was chosen and nothing was kept; run the "
            "query again once the cluster has its workers back (a nanny restarts a dead worker; "
            "client.wait_for_workers(n) waits for them). If a worker dies every time, it may be "
            "running out of memory: use a smaller chunk_size or more, smaller partitions."
        ) from exc
    finally:
        bar.close()
        pending = [f for f in futures if not f.done()]
        if pending:
            client.cancel(pending)


# ---------------------------------------------------------------------------- blocking
def _tokens_of(frame: pd.DataFrame, cols: list[str], side: str) -> pd.DataFrame:
    """``(token, <side>_id)`` rows: the distinct normalised words of each record's ``cols``."""
    ids = frame.index.astype(str).to_numpy()
    out_ids, out_tokens = [], []
    texts = [frame[c].map(normalise_text).to_numpy(dtype=object) for c in cols]
    for i, rid in enumerate(ids):
        toks = set()
        for t in texts:
            toks.update(_WORD_RE.findall(t[i]))
        out_ids.extend([rid] * len(toks))
        out_tokens.extend(sorted(toks))
    return pd.DataFrame({"token": pd.Series(out_tokens, dtype=object),
                         f"{side}_id": pd.Series(out_ids, dtype=object)})


def _keys_of(frame: pd.DataFrame, cols: list[str], side: str) -> pd.DataFrame:
    """``(key, <side>_id)`` rows: the normalised values of ``cols`` joined; missing keys dropped."""
    parts = [frame[c].map(normalise_text) for c in cols]
    key = parts[0].astype(object)
    missing = parts[0] == ""
    for p in parts[1:]:
        key = key + "\x1f" + p
        missing |= p == ""
    out = pd.DataFrame({"key": key.to_numpy(dtype=object),
                        f"{side}_id": frame.index.astype(str).to_numpy(dtype=object)})
    return out[~missing.to_numpy()]


def _as_dask(table: Any, side: str) -> Any:
    if isinstance(table, pd.DataFrame):
        return dd.from_pandas(table, npartitions=1)
    if isinstance(table, dd.DataFrame):
        return table
    raise TypeError(
        f"dask_block: the {side} table must be a dask or pandas DataFrame indexed by record id, got "
        f"{type(table).__name__}."
    )


def dask_block(
    left: Any,
    right: Any = None,
    *,
    on: str | Sequence[str],
    method: str = "tokens",
    max_block_size: int | None = 1_000,
) -> Any:
    """Candidate pairs of two large tables (or within one) on Dask, partition by partition.

    ``"tokens"``: two records are candidates when they share a word of the ``on`` columns (after
    :meth:`PairDataset.texts`' normalisation) that no more than ``max_block_size`` records hold
    (frequent words, like stop words, make no block). ``"standard"``: the normalised values of
    all ``on`` columns are equal (as :func:`skrisk.data.block`'s ``"standard"`` rule).
    Each partition's records are turned into ``(token, id)`` rows on the workers and the two
    sides are joined on the token (a shuffle join), so no table is held on one machine.

    Parameters
    ----------
    left : dask or pandas DataFrame
        Indexed by record id.
    right : dask or pandas DataFrame, optional
        The other table; None (or ``left`` itself) blocks within ``left`` (deduplication: each
        unordered pair of distinct records once, ``left_id < right_id``).
    on : str or sequence of str
        The column(s) blocked on.
    method : {"tokens", "standard"}, default="tokens"
    max_block_size : int or None, default=1000
        ``"tokens"`` only: words held by more records than this (both tables together) are
        ignored; None keeps every word (the number of pairs can then grow with the square of
        the tables).

    Returns
    -------
    dask.dataframe.DataFrame
        Lazy candidate pairs, ``left_id``, ``right_id`` (``str``), each pair once, in no
        particular order: give it to :func:`dask_query`, or ``.compute()`` it.

    Raises
    ------
    DataError
        An ``on`` column missing from a table.

    Examples
    --------
    >>> import pandas as pd
    >>> left = pd.DataFrame({"name": ["acme corp", "globex"]}, index=["a1", "a2"])
    >>> right = pd.DataFrame({"name": ["acme corporation", "initech"]}, index=["b1", "b2"])
    >>> dask_block(left, right, on="name").compute().to_numpy().tolist()
    [['a1', 'b1']]
    """
    cols = [on] if isinstance(on, str) else list(on)
    if not cols:
        raise ValueError("dask_block: on must name at least one column.")
    if method not in ("tokens", "standard"):
        raise ValueError(f"dask_block: method must be 'tokens' or 'standard', got {method!r}.")
    if max_block_size is not None and (isinstance(max_block_size, bool) or not isinstance(
            max_block_size, (int, np.integer)) or max_block_size < 2):
        raise ValueError(f"dask_block: max_block_size must be an int >= 2 or None, got {max_block_size!r}.")
    dedup = right is None or right is left
    lt = _as_dask(left, "left")
    rt = lt if dedup else _as_dask(right, "right")
    for side, t in (("left", lt), ("right", rt)):
        absent = [c for c in cols if c not in t.columns]
        if absent:
            raise DataError(
                f"dask_block: the {side} table lacks the column(s) {absent} to block on (its columns: "
                f"{[str(c) for c in t.columns][:10]})."
            )
    fn = _tokens_of if method == "tokens" else _keys_of
    key = "token" if method == "tokens" else "key"
    meta_l = pd.DataFrame({key: pd.Series(dtype=object), "left_id": pd.Series(dtype=object)})
    meta_r = pd.DataFrame({key: pd.Series(dtype=object), "right_id": pd.Series(dtype=object)})
    lk = lt[cols].map_partitions(fn, cols, "left", meta=meta_l)
    rk = rt[cols].map_partitions(fn, cols, "right", meta=meta_r)
    if method == "tokens" and max_block_size is not None:
        counts = lk[key].value_counts() if dedup else dd.concat([lk[key], rk[key]]).value_counts()
        small = counts[counts <= max_block_size].index.to_frame(name=key).reset_index(drop=True)
        lk = lk.merge(small, on=key, how="inner")
        rk = lk.rename(columns={"left_id": "right_id"}) if dedup else rk.merge(small, on=key, how="inner")
    elif dedup:
        rk = lk.rename(columns={"left_id": "right_id"})
    pairs = lk.merge(rk, on=key, how="inner")[["left_id", "right_id"]]
    if dedup:
        pairs = pairs[pairs["left_id"] < pairs["right_id"]]
    pairs = pairs.drop_duplicates()
    return pairs.map_partitions(lambda p: p.reset_index(drop=True).astype(str),
                                meta=pd.DataFrame({"left_id": pd.Series(dtype=str),
                                                   "right_id": pd.Series(dtype=str)}))
