"""``match`` on a Dask cluster for ``typed`` blocking: the records stay on the workers.

Each partition of the tables is checked and kept on a worker. The keys of every record (the hash
of its normalised values, the hashes of each ``typed`` pass's key) are computed there and
shuffled by hash, so that the records sharing a key meet in one task, which makes the key's
pairs exactly as :func:`skrisk.data.block` does on one machine (:mod:`skrisk.data._key_shuffle`).
The pairs go to the partition of their first record (where repeats are dropped and that record's
values joined), then to the partition of their second, where the pair is scored (features,
matcher and risk, in pieces of ``chunk_size``) with a scorer made of only the records it needs;
only the matches come back. The client gathers the record ids (for the entities), never the
records; the entities are computed on the client from the matches, as on one machine.

The steps are one graph of tasks whose recipes the scheduler keeps (a pandas table's pieces, the
model and the value counts among them, never scattered data), so a worker lost mid-run has its
results computed again on the others, and the result is the same.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..data import BlockingResult
from ..data._key_shuffle import (Groups, group_members, id_key_columns, id_key_hashes, identical_keys, key_pairs,
                                 pass_keys)
from ..data._typed_blocking import check_typed_params
from ..exceptions import DataError
from ._model import MatchModel
from ._steps import (_feature_names, _kept, _matches_and_entities, _reasons, _refuse_nul,
                     one_table_for_linkage_error, repeated_id_error)

__all__ = ["typed_params", "match_by_shuffle"]

# the client holds every record id (for the entities) up to this many records
MAX_CLIENT_RECORDS = 200_000_000
# records of a piece of a partition that one task blocks and scores
_PIECE = 250_000


def typed_params(rules: Any, attributes: list[str]) -> tuple[list[str], dict] | None:
    """(columns, parameters) of a single ``typed`` rule; None for any other rules."""
    if isinstance(rules, tuple) and rules and isinstance(rules[0], str):
        rules = [rules]
    if not isinstance(rules, list) or len(rules) != 1:
        return None
    rule = rules[0]
    if not isinstance(rule, (tuple, list)) or len(rule) not in (2, 3) or rule[0] != "typed":
        return None
    cols = list(attributes) if rule[1] is None else ([rule[1]] if isinstance(rule[1], str) else list(rule[1]))
    return cols, check_typed_params(dict(rule[2]) if len(rule) == 3 else {}, cols)


def _kind(dtype: Any) -> str:
    """The kind of values a column holds, as the schema check compares them."""
    if pd.api.types.is_bool_dtype(dtype):
        return "bool"
    if pd.api.types.is_numeric_dtype(dtype):
        return "number"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime"
    return "text"


def _check_summaries(summaries: list[tuple[list[str], dict, int]], source: str) -> None:
    """Refuse partitions whose columns (or the kind of a column's values) differ from the first's;
    ``summaries``: each partition's columns, the kind of each column's values (None: all
    missing) and its length."""
    if not summaries:
        return
    cols, kinds0, _ = summaries[0]
    for number, (here, kinds, _) in enumerate(summaries[1:], start=1):
        absent = [c for c in cols if c not in here]
        extra = [c for c in here if c not in cols]
        if absent or extra:
            col, has, lacks = (absent[0], 0, number) if absent else (extra[0], number, 0)
            raise DataError(
                f"{source}: partition {number} does not have the columns of partition 0: the column "
                f"{col!r} is in partition {has} but not in partition {lacks} (partition 0: {cols[:10]}; "
                f"partition {number}: {here[:10]}). Every partition of a table must have the same "
                "columns: rewrite the files with one schema."
            )
        for c in cols:
            a, b = kinds0[c], kinds[c]
            if a is not None and b is not None and a != b:
                raise DataError(
                    f"{source}: the column {c!r} holds {a} values in partition 0 but {b} values in partition "
                    f"{number}. Every partition of a table must have the same schema: rewrite the files with "
                    "one type for that column."
                )


# ---------------------------------------------------------------------------- tasks (on workers)
def _summary(part: pd.DataFrame) -> tuple[list[str], dict[str, str | None], int]:
    """The columns of a partition, the kind of each column's values (None: all missing), its length."""
    kinds = {str(c): (_kind(part[c].dtype) if part[c].notna().any() else None) for c in part.columns}
    return [str(c) for c in part.columns], kinds, len(part)


def _prepare(part: pd.DataFrame, model: MatchModel, source: str, id_column: str | None,
             rows: tuple[int, int] | None = None) -> pd.DataFrame:
    """A partition (its ``rows``, when given) checked against the model: its attribute columns,
    indexed by id (as text)."""
    if rows is not None:
        part = part.iloc[rows[0]:rows[1]]
    if id_column is not None and id_column in part.columns:
        part = part.set_index(id_column)
    model.check_table(part, source)
    _refuse_nul(part[list(model.attributes)], source)
    out = part[list(model.attributes)].copy()
    out.index = out.index.astype(str)
    return out


def _buckets(frame: pd.DataFrame, n: int) -> list[pd.DataFrame]:
    """``frame`` split into ``n`` shuffle buckets by its first hash."""
    b = (frame["h1"].to_numpy() % np.uint64(n)).astype(np.int64)
    order = np.argsort(b, kind="stable")
    cuts = np.searchsorted(b[order], np.arange(1, n))
    return [frame.iloc[rows].reset_index(drop=True) for rows in np.split(order, cuts)]


def _identical_buckets(part: pd.DataFrame, offset: int, side: int, n: int) -> list[pd.DataFrame]:
    """The keys of the groups of identical records of a partition, in ``n`` shuffle buckets."""
    return _buckets(identical_keys(part, offset, side), n)


def _members(pieces: list[pd.DataFrame], bucket: int) -> pd.DataFrame:
    return group_members(pieces).assign(bucket=bucket)


def _id_key_hashes(part: pd.DataFrame, offset: int, side: int, groups: Groups, types: dict,
                  cols: list[str]) -> dict[str, tuple[int, np.ndarray]]:
    """Per ``:id`` column, the filled count and distinct value hashes of a partition's blocked records."""
    blocked = ~groups.not_heads(offset + np.arange(len(part)), side)
    return {c: id_key_hashes(part, types, c, blocked) for c in cols}


def _key_buckets(part: pd.DataFrame, offset: int, side: int, groups: Groups, types: dict, cols: list[str],
                 id_keys: dict[str, bool], n: int) -> list[pd.DataFrame]:
    """The typed passes' keys of a partition's blocked records (group heads), in ``n`` shuffle buckets."""
    blocked = ~groups.not_heads(offset + np.arange(len(part)), side)
    return _buckets(pass_keys(part, offset, types, cols, blocked, id_keys, side), n)


def _by_partition(a: np.ndarray, b: np.ndarray, offsets: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The pairs split by the partition of their first record (``offsets``: each partition's first position)."""
    p = np.searchsorted(offsets, a, side="right") - 1
    order = np.argsort(p, kind="stable")
    cuts = np.searchsorted(p[order], np.arange(1, len(offsets)))
    return [(a[rows], b[rows]) for rows in np.split(order, cuts)]


def _block_bucket(pieces: list[pd.DataFrame], max_block: int, dedup: bool, groups: Groups,
                  offsets: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The pairs of the keys of one shuffle bucket (groups spread), by the first record's partition."""
    a, b = key_pairs(pieces, max_block, dedup)
    a, b = groups.spread(a, b)
    if dedup:
        a, b = np.minimum(a, b), np.maximum(a, b)
    return _by_partition(a, b, offsets)


def _identical_by_partition(groups: Groups, offsets: np.ndarray, dedup: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    a, b = groups.identical_pairs()
    if dedup:
        a, b = np.minimum(a, b), np.maximum(a, b)
    return _by_partition(a, b, offsets)


def _join_first(part: pd.DataFrame, offset: int, keyed: list[tuple[np.ndarray, np.ndarray]],
                identical: tuple[np.ndarray, np.ndarray], offsets_b: np.ndarray) -> list[dict[str, Any]]:
    """The pairs whose first record is in this partition, each once, split by the partition of
    the second record, each bucket with the first records it needs (their positions and rows);
    last, the number of distinct pairs the keys and the identical records each gave."""
    def distinct(pieces: list[tuple[np.ndarray, np.ndarray]]) -> pd.DataFrame:
        return pd.DataFrame({"a": np.concatenate([p[0] for p in pieces]).astype(np.int64),
                             "b": np.concatenate([p[1] for p in pieces]).astype(np.int64)}).drop_duplicates()

    by_keys, same = distinct(keyed), distinct([identical])
    frame = pd.concat([by_keys, same], ignore_index=True).drop_duplicates() if len(same) else by_keys
    a, b = frame["a"].to_numpy(), frame["b"].to_numpy()
    out = []
    for b_q, a_q in _by_partition(b, a, offsets_b):  # by the second record's partition
        rows = np.unique(a_q - offset)
        out.append({"a": a_q, "b": b_q, "first_pos": rows + offset, "first": part.iloc[rows]})
    out.append({"keys": len(by_keys), "identical": len(same)})
    return out


def _value_counts(part: pd.DataFrame, model: MatchModel) -> dict[str, pd.Series]:
    counts = getattr(model.features, "value_counts", None)
    return counts(part) if callable(counts) else {}


def _add_counts(parts: list[dict[str, pd.Series]]) -> dict[str, pd.Series]:
    """The value counts of a whole table from those of its partitions."""
    attrs = sorted({a for p in parts for a in p})
    return {a: pd.concat([p[a] for p in parts if a in p]).groupby(level=0, sort=True).sum().astype(np.int64)
            for a in attrs}


def _score_bucket(part: pd.DataFrame, offset: int, pieces: list[dict[str, Any]], model: MatchModel,
                  counts: Any, chunk_size: int, dedup: bool, reasons: bool, names_f: list[str]) -> dict[str, Any]:
    """Score the pairs whose second record is in this partition (a scorer of only the records they
    name); keep those above the model's threshold."""
    tick = time.perf_counter()
    pieces = [p for p in pieces if len(p["a"])]
    n = sum(len(p["a"]) for p in pieces)
    if not n:
        return {"n": 0, "kept": [], "reasons": 0.0, "seconds": time.perf_counter() - tick}
    a = np.concatenate([p["a"] for p in pieces])
    b = np.concatenate([p["b"] for p in pieces])
    first_pos = np.concatenate([p["first_pos"] for p in pieces])
    first = pd.concat([p["first"] for p in pieces])
    order = np.argsort(first_pos, kind="stable")
    id_a = first.index.to_numpy(dtype=object)[order][np.searchsorted(first_pos[order], a)]
    id_b = part.index.to_numpy(dtype=object)[b - offset]
    second = part.iloc[np.unique(b - offset)]
    if dedup:
        table = pd.concat([first, second])
        scorer = model.scorer(table[~table.index.duplicated()], None, n_jobs=1, value_counts=counts or None)
        swap = id_b < id_a  # one table: each pair as left_id < right_id, as on one machine
        id_a, id_b = np.where(swap, id_b, id_a), np.where(swap, id_a, id_b)
    else:
        scorer = model.scorer(first, second, n_jobs=1, value_counts=counts)
    pairs = pd.DataFrame({"left_id": id_a, "right_id": id_b})
    kept, reasons_s = [], 0.0
    for start in range(0, n, chunk_size):
        got = _kept(scorer.score(pairs.iloc[start:start + chunk_size], risk_of="matches"), model.threshold)
        if got is None:
            continue
        if reasons:
            r_tick = time.perf_counter()
            got["reasons"] = _reasons(model, scorer, got, names_f)
            reasons_s += time.perf_counter() - r_tick
        kept.append(got)
    return {"n": n, "kept": kept, "reasons": reasons_s, "seconds": time.perf_counter() - tick}


def _rows(part: pd.DataFrame, rows: np.ndarray) -> pd.DataFrame:
    return part.iloc[rows]


def _ids(part: pd.DataFrame) -> np.ndarray:
    return part.index.to_numpy(dtype=object)


# ---------------------------------------------------------------------------- the client's side
class _RemoteRecords:
    """A scorer for the entities' checks (``score(pairs)``): the records the pairs name fetched
    from the workers' partitions, scored by a scorer made of them."""

    def __init__(self, client: Any, model: MatchModel, parts: list[list[Any]], ids: list[pd.Index],
                 offsets: list[np.ndarray], dedup: bool, counts: Any) -> None:
        self.client, self.model, self.parts, self.ids, self.offsets = client, model, parts, ids, offsets
        self.dedup, self.counts = dedup, counts

    def _records(self, side: int, wanted: np.ndarray) -> pd.DataFrame:
        pos = self.ids[side].get_indexer(pd.unique(wanted))
        offsets = self.offsets[side]
        p = np.searchsorted(offsets, pos, side="right") - 1
        futures = [self.client.submit(_rows, self.parts[side][k], np.sort(pos[p == k] - offsets[k]))
                   for k in np.unique(p)]
        got = self.client.gather(futures)
        return pd.concat(got) if got else pd.DataFrame()

    def score(self, pairs: pd.DataFrame) -> Any:
        left_ids, right_ids = pairs["left_id"].to_numpy(dtype=object), pairs["right_id"].to_numpy(dtype=object)
        if self.dedup:
            table = self._records(0, np.concatenate([left_ids, right_ids]))
            return self.model.scorer(table, None, n_jobs=1, value_counts=self.counts or None).score(pairs)
        return self.model.scorer(self._records(0, left_ids), self._records(1, right_ids), n_jobs=1,
                                 value_counts=self.counts).score(pairs)


def _held(client: Any, obj: Any) -> Any:
    """A future of ``obj`` whose recipe (the object itself) the scheduler keeps: a worker lost with
    it is given it again (scattered data, of which the scheduler keeps one copy, would be lost)."""
    import warnings

    from dask import delayed

    with warnings.catch_warnings():  # a recipe of tens of MB (the value counts) is meant to be one
        warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
        return client.compute(delayed(obj, traverse=False))


def _results(client: Any, futures: list[Any], progress: bool, *, total: int, unit: str, desc: str,
             step: Callable[[Any], int]) -> list[Any]:
    """The futures' results as they finish (a progress bar advanced by ``step(result)``); on an
    error or an interrupt, the unfinished ones are cancelled."""
    from distributed import as_completed

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=total, unit=unit, desc=desc)
    results = []
    try:
        for fut in as_completed(futures):
            results.append(fut.result())
            if bar is not None:
                bar.update(step(results[-1]))
    finally:
        if bar is not None:
            bar.close()
        pending = [f for f in futures if not f.done()]
        if pending:
            client.cancel(pending)
    return results


def _partitions(table: Any, source: str, client: Any, n_workers: int) -> tuple[list[Any], bool]:
    """Futures of the partitions of a pandas or Dask DataFrame or a Parquet folder; whether they
    came from files (the model's id column is then the index)."""
    import os

    import dask.dataframe as dd

    from_files = isinstance(table, (str, os.PathLike))
    if from_files:
        table = dd.read_parquet(os.fspath(table))
    if isinstance(table, pd.DataFrame):
        k = max(2 * n_workers, -(-len(table) // _PIECE))
        bounds = np.linspace(0, len(table), k + 1).astype(int)
        return [_held(client, table.iloc[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])], False
    if not isinstance(table, dd.DataFrame):
        raise TypeError(f"{source} must be a pandas or Dask DataFrame indexed by record id, or a Parquet folder, "
                        f"got {type(table).__name__}.")
    return client.compute(table.to_delayed()), from_files


def _check_ids(ids: list[list[np.ndarray]], names: tuple[str, str], dedup_two: bool) -> list[pd.Index]:
    """Every record id of each table (one table from two files: both, in order), refused unless
    unique over all the partitions, as on one machine; a table with no record refused."""
    for side, parts in enumerate(ids):
        if not sum(len(i) for i in parts):
            raise DataError(f"{names[side]} holds no record: give a table with at least one row.")
    groups = [ids[0] + ids[1]] if dedup_two else ids
    out = []
    for g, parts in enumerate(groups):
        every = pd.Index(np.concatenate(parts))
        out.append(every)
        if every.is_unique:
            continue
        dup = every[every.duplicated()][0]
        where = np.flatnonzero(every == dup)[:2]
        bounds = np.cumsum([len(i) for i in parts])
        p = np.searchsorted(bounds, where, side="right")
        if dedup_two and p[0] < len(ids[0]) <= p[1]:
            raise DataError(
                f"The id {dup!r} is in both {names[0]} and {names[1]}: the model deduplicates one table, so the "
                "two tables are matched as one and every id must name one record. Give the records of one "
                "table other ids (e.g. a prefix), or put them in one file.")
        raise repeated_id_error(names[g], dup, int(where[1]))  # the row in the partitions' order
    return out


def match_by_shuffle(
    model: MatchModel, left: Any, right: Any, *, client: Any, rule: tuple[list[str], dict], chunk_size: int,
    reasons: bool, progress: bool, one_to_one: bool, names: tuple[str, str],
) -> dict[str, Any]:
    """:func:`~skrisk.matching.match` with ``client`` and a ``typed`` rule: the fields of its
    ``MatchResult``, every record kept on the workers."""
    from dask import delayed

    t_start = time.perf_counter()
    timings = dict.fromkeys(("checking", "blocking", "encoding", "scoring", "reasons", "entities"), 0.0)
    cols, params = rule
    types, max_block = params["types"], int(params["max_block"])
    n_workers = max(1, len(client.scheduler_info().get("workers", {})))
    if model.task == "link" and right is None:
        raise one_table_for_linkage_error(names[0])
    dedup = model.task == "dedup"
    model_f = _held(client, model)
    parts = []
    for table, name in zip((left, right), names):
        if table is None:
            continue
        futures, from_files = _partitions(table, name, client, n_workers)
        summaries = client.gather([client.submit(_summary, f, pure=False) for f in futures])
        _check_summaries(summaries, name)
        # pieces of at most _PIECE records, at least two per worker: every step has work for each
        lengths = [s[2] for s in summaries]
        target = max(1, min(_PIECE, -(-sum(lengths) // (2 * n_workers))))
        idc = model.id_column if from_files else None
        parts.append([client.submit(_prepare, f, model_f, f"{name} (partition {i})", idc, (lo, min(lo + target, n)),
                                    pure=False)
                      for i, (f, n) in enumerate(zip(futures, lengths)) for lo in range(0, max(n, 1), target)])
        del futures  # the read partitions are released once checked (the scheduler keeps their recipe)
    ids = [client.gather([client.submit(_ids, f, pure=False) for f in fs]) for fs in parts]
    if sum(len(i) for side in ids for i in side) > MAX_CLIENT_RECORDS:
        raise DataError(f"More than {MAX_CLIENT_RECORDS:,} records: the entities are computed on the client, "
                        "which holds every record id; match the tables in parts.")
    every_id = _check_ids(ids, names, dedup and len(parts) == 2)
    if dedup and len(parts) == 2:  # one table from two: its partitions in order
        parts, ids = [parts[0] + parts[1]], [ids[0] + ids[1]]
    sides = [0] if dedup else [0, 1]
    offsets = [np.cumsum([0] + [len(i) for i in ids[s]])[:-1].astype(np.int64) for s in sides]
    sizes = [int(sum(len(i) for i in ids[s])) for s in sides]
    side_counts = [_add_counts(client.gather([client.submit(_value_counts, f, model_f, pure=False) for f in parts[s]]))
                   for s in sides]
    counts = side_counts[0] if dedup else tuple(c or None for c in side_counts)
    counts_f = _held(client, counts)
    timings["checking"] = time.perf_counter() - t_start

    tick = time.perf_counter()
    n_buckets = max(sum(len(p) for p in parts), 2 * n_workers)

    # the steps as one graph (dask.delayed), computed at once: the scheduler keeps every step's
    # recipe while a later one needs it, so a lost worker's results are computed again
    def task(fn: Callable, nout: int | None = None) -> Any:
        return delayed(fn, pure=False, nout=nout)

    every = [(s, k) for s in sides for k in range(len(parts[s]))]
    ik = [task(_identical_buckets, n_buckets)(parts[s][k], int(offsets[s][k]), s, n_buckets) for s, k in every]
    members = client.gather(client.compute([task(_members)([x[b] for x in ik], b) for b in range(n_buckets)]))
    groups = Groups.from_members(pd.concat(members, ignore_index=True), dedup=dedup)
    groups_f = _held(client, groups)
    id_cols = id_key_columns(types, cols)
    id_keys: dict[int, dict[str, bool]] = {s: {} for s in sides}
    if id_cols:
        for s in sides:
            got = client.gather([client.submit(_id_key_hashes, parts[s][k], int(offsets[s][k]), s, groups_f, types,
                                               id_cols, pure=False) for k in range(len(parts[s]))])
            for c in id_cols:
                filled = sum(g[c][0] for g in got)
                distinct = len(np.unique(np.concatenate([g[c][1] for g in got]))) if got else 0
                id_keys[s][c] = bool(filled and distinct >= 0.25 * filled)
    kb = [task(_key_buckets, n_buckets)(parts[s][k], int(offsets[s][k]), s, groups_f, types, cols, id_keys[s],
                                        n_buckets) for s, k in every]
    second = sides[-1]
    n_first, n_second = len(parts[0]), len(parts[second])
    blocks = [task(_block_bucket, n_first)([x[b] for x in kb], max_block, dedup, groups_f, offsets[0])
              for b in range(n_buckets)]
    ident = task(_identical_by_partition, n_first)(groups_f, offsets[0], dedup)
    joined = [task(_join_first, n_second + 1)(parts[0][p], int(offsets[0][p]), [x[p] for x in blocks], ident[p],
                                              offsets[second]) for p in range(n_first)]
    names_f = _feature_names(model) if reasons else []
    scored = [task(_score_bucket)(parts[second][q], int(offsets[second][q]), [j[q] for j in joined], model_f,
                                  counts_f, int(chunk_size), dedup, reasons, names_f) for q in range(n_second)]
    futures = client.compute(scored + [j[n_second] for j in joined])
    scored, made_f = futures[:n_second], futures[n_second:]
    results = _results(client, scored, progress, total=len(scored), unit="partition",
                       desc="Blocking and scoring on the cluster", step=lambda r: 1)
    made = client.gather(made_f)
    rule_sizes = {f"typed:{'+'.join(cols)}": int(sum(m["keys"] for m in made))}
    if sum(m["identical"] for m in made):
        rule_sizes["identical records"] = int(sum(m["identical"] for m in made))
    n = int(sum(r["n"] for r in results))
    kept = [k for r in results for k in r["kept"]]
    timings["reasons"] = float(sum(r["reasons"] for r in results))
    timings["scoring"] = time.perf_counter() - tick  # blocking and scoring run as one graph on the cluster
    if n == 0:
        raise DataError(f"Blocking {names[0] if len(names) < 2 or right is None else names[0] + ' against ' + names[1]}"
                        " produced no candidate pair: the typed keys of no two records agree; block with 'tokens' "
                        "instead (--blocking tokens).")
    remote = _RemoteRecords(client, model, parts, every_id, offsets, dedup, counts)
    records = every_id[0].tolist() if dedup else (every_id[0].tolist(), every_id[1].tolist())
    matches, entities = _matches_and_entities(model, None, None, kept, remote, reasons=reasons, one_to_one=one_to_one,
                                              progress=progress, timings=timings, records=records)
    n_all = sizes[0] * (sizes[0] - 1) // 2 if dedup else sizes[0] * sizes[1]
    blocked = BlockingResult(
        pairs=pd.DataFrame({"left_id": pd.Series(dtype=object), "right_id": pd.Series(dtype=object)}),
        n_left=sizes[0], n_right=sizes[-1], reduction_ratio=1.0 - n / max(n_all, 1), pair_completeness=None,
        n_true_links=None, rule_sizes=rule_sizes, seconds=timings["scoring"], task="dedup" if dedup else "link",
        n_candidates=n)
    timings["total"] = time.perf_counter() - t_start
    return {"matches": matches, "entities": entities, "n_candidates": n, "timings": timings, "blocking": blocked}
