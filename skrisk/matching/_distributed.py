"""``match`` on a Dask cluster: the candidate pairs scored partition by partition on the workers.

The tables (pandas or Dask DataFrames, or Parquet folders) are read into the client, checked
partition by partition and blocked there with the single-machine code (:func:`skrisk.data.block`
with ``identical=True``), so the candidate pairs are those of :func:`match` without a client. The
tables are encoded once on the client (a :class:`~skrisk.pools.ChunkScorer`, as on one machine)
and sent with the model to every worker once; each partition of candidate pairs is scored on a
worker (features, matcher and risk, in pieces of ``chunk_size``), and only its pairs above the
threshold come back. Entities are computed on the
client by :func:`~skrisk.matching.cluster_entities`, as on one machine.

Needs the optional extra ``skrisk[dask]``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from typing import Any, Iterator

import pandas as pd

from ..exceptions import DataError, MissingCapabilityError
from ._steps import (_candidates, _feature_names, _kept, _matches_and_entities, _model_rules, _prepare_tables,
                     _reasons, _stage)
from ._model import MatchModel
from ._shuffle import _check_summaries, _results, _summary, match_by_shuffle, typed_params

__all__ = ["cluster_client", "match_on_dask"]


def _check_partitions(parts: list[pd.DataFrame], source: str) -> None:
    """Refuse partitions whose columns (or the kind of a column's values) differ from the first's."""
    _check_summaries([_summary(p) for p in parts], source)


def _collect(table: Any, source: str, client: Any, id_column: str) -> pd.DataFrame | None:
    """A pandas table from a pandas or Dask DataFrame or a Parquet folder, partitions checked; a
    Parquet folder's ``id_column``, when it is a column, is the index."""
    if table is None or isinstance(table, pd.DataFrame):
        return table
    import dask.dataframe as dd

    from_files = isinstance(table, (str, os.PathLike))
    if from_files:
        table = dd.read_parquet(os.fspath(table))
    if not isinstance(table, dd.DataFrame):
        raise TypeError(
            f"{source} must be a pandas or Dask DataFrame indexed by record id, or a Parquet folder, got "
            f"{type(table).__name__}."
        )
    parts = client.gather(client.compute(table.to_delayed()))
    _check_partitions(parts, source)
    whole = pd.concat(parts) if len(parts) > 1 else parts[0]
    if from_files and id_column in whole.columns:
        whole = whole.set_index(id_column)
    return whole


def _score_partition(pairs: pd.DataFrame, scorer: Any, threshold: float, chunk_size: int,
                     model: MatchModel | None, names_f: list[str]) -> dict[str, Any]:
    """On a worker: score one partition of candidate pairs in pieces of ``chunk_size``, keep those
    above ``threshold`` (with their reasons when ``model`` is given)."""
    tick = time.perf_counter()
    kept, reasons_s = [], 0.0
    for start in range(0, len(pairs), chunk_size):
        part = _kept(scorer.score(pairs.iloc[start:start + chunk_size], risk_of="matches"), threshold)
        if part is None:
            continue
        if model is not None:
            r_tick = time.perf_counter()
            part["reasons"] = _reasons(model, scorer, part, names_f)
            reasons_s += time.perf_counter() - r_tick
        kept.append(part)
    return {"n": len(pairs), "kept": kept, "reasons": reasons_s, "seconds": time.perf_counter() - tick}


def match_on_dask(
    model: MatchModel,
    left: Any,
    right: Any,
    *,
    client: Any,
    chunk_size: int,
    reasons: bool,
    progress: bool,
    one_to_one: bool,
    blocking: Any,
    names: tuple[str, str],
    n_jobs: int | None,
) -> dict[str, Any]:
    """:func:`~skrisk.matching.match` with ``client``: the fields of its ``MatchResult`` (the same
    result), the scoring on the workers."""
    rule = typed_params(_model_rules(model) if blocking is None else blocking, list(model.attributes))
    if rule is not None:  # keys shuffled on the cluster: no record gathered on the client
        return match_by_shuffle(model, left, right, client=client, rule=rule, chunk_size=int(chunk_size),
                                reasons=reasons, progress=progress, one_to_one=one_to_one, names=names)
    t_start = time.perf_counter()
    timings = dict.fromkeys(("blocking", "encoding", "scoring", "reasons", "entities"), 0.0)
    left = _collect(left, names[0], client, model.id_column)
    right = _collect(right, names[1], client, model.id_column)
    left, right = _prepare_tables(model, left, right, names)
    with _stage("Blocking", progress, timings, "blocking"):
        blocked = _candidates(left, right, _model_rules(model) if blocking is None else blocking, names, n_jobs)
    with _stage("Encoding the tables", progress, timings, "encoding"):
        scorer = model.scorer(left, right, n_jobs=1)  # every distinct value encoded once, as on one machine
    n = blocked.n_candidates
    names_f = _feature_names(model) if reasons else []
    n_workers = max(1, len(client.scheduler_info().get("workers", {})))
    # a few partitions per worker (a slow one is not waited for alone), none below chunk_size pairs
    per_part = max(int(chunk_size), math.ceil(n / (4 * n_workers)))
    tick = time.perf_counter()
    kept: list[pd.DataFrame] = []
    scorer_f = client.scatter(scorer, broadcast=True, hash=False)  # the model and the encoded tables
    model_f = client.scatter(model, broadcast=True, hash=False) if reasons else None
    pairs = blocked.pairs[["left_id", "right_id"]]
    futures = [client.submit(_score_partition, pairs.iloc[start:start + per_part].reset_index(drop=True), scorer_f,
                             float(model.threshold), int(chunk_size), model_f, names_f, pure=False)
               for start in range(0, n, per_part)]
    results = _results(client, futures, progress, total=n, unit="pair", desc="Scoring candidate pairs",
                       step=lambda r: r["n"])
    for r in results:
        kept.extend(r["kept"])
        timings["reasons"] += r["reasons"]
    # reasons: the workers' seconds; scoring: the wall time of the partitions on the cluster
    timings["scoring"] = time.perf_counter() - tick
    blocked = blocked.without_pairs()
    matches, entities = _matches_and_entities(model, left, right, kept, scorer, reasons=reasons,
                                              one_to_one=one_to_one, progress=progress, timings=timings)
    timings["total"] = time.perf_counter() - t_start
    return {"matches": matches, "entities": entities, "n_candidates": n, "timings": timings, "blocking": blocked}


@contextlib.contextmanager
def cluster_client(workers: int | None, scheduler: str | None) -> Iterator[Any]:
    """A Dask client of ``skrisk match --workers N`` (a LocalCluster of N processes, one thread
    each) or ``--scheduler ADDRESS`` (a running cluster); None when neither is given."""
    if workers is None and scheduler is None:
        yield None
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:
        raise MissingCapabilityError(
            "--workers and --scheduler run on Dask: pip install 'skrisk[dask]'.") from exc
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout="30s")
        except (OSError, TimeoutError) as exc:
            raise DataError(f"--scheduler {scheduler}: no Dask scheduler answered there ({exc}); start one "
                            "(dask scheduler) or give its address as tcp://HOST:PORT.") from None
        with client:
            yield client
        return
    with LocalCluster(n_workers=int(workers), threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        yield client
