"""The simulated-oracle active-learning loop behind the benchmarks, ``skrisk run`` and ``skrisk demo``."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
from sklearn.metrics import f1_score, precision_score, recall_score
from sklearn.utils import check_random_state

from .._fileio import LinkError, append_durably, open_append, read_jsonl
from .._rows import num_rows, take_rows
from ..active import ActiveLearner
from .._query import unpack_query
from ..exceptions import DataError, SkriskError

__all__ = [
    "ALTask",
    "RunWriteError",
    "format_record",
    "initial_labelled_set",
    "read_results",
    "recorded_rounds",
    "run_active_learning",
]


@dataclass
class ALTask:
    """Everything a simulated active-learning run needs, with pairs addressed by position.

    Parameters
    ----------
    X : pool-like
        Matcher input for every pair of the dataset (ndarray, SliceDict, DataFrame, ...).
    y : ndarray of int
        True labels of every pair (the simulated oracle).
    pool, valid, test : ndarray of int
        Positions into ``X`` of the unlabelled pool (the training split), the validation split
        (early stopping, LearnRisk ranking) and the test split.
    name : str
        Dataset name for the records.
    """

    X: Any
    y: np.ndarray
    pool: np.ndarray
    valid: np.ndarray
    test: np.ndarray
    name: str = "dataset"

    def rows(self, positions: np.ndarray) -> Any:
        return take_rows(self.X, positions)


def initial_labelled_set(y_pool: np.ndarray, n_seed: int, random_state: Any = None) -> np.ndarray:
    """A seeded random initial labelled set (positions into the pool) holding both classes."""
    rng = check_random_state(random_state)
    y_pool = np.asarray(y_pool)
    if n_seed < 2:
        raise ValueError(f"n_seed must be at least 2 (one pair of each class), got {n_seed}.")
    if n_seed > len(y_pool):
        raise ValueError(f"n_seed={n_seed} exceeds the pool of {len(y_pool)} pairs.")
    pos_idx, neg_idx = np.flatnonzero(y_pool == 1), np.flatnonzero(y_pool == 0)
    if len(pos_idx) == 0 or len(neg_idx) == 0:
        raise ValueError("The pool holds only one class: active learning needs matches and non-matches.")
    chosen = rng.choice(len(y_pool), size=n_seed, replace=False)
    if not (y_pool[chosen] == 1).any():  # guarantee one match, as a labeller would
        chosen[0] = rng.choice(pos_idx)
    if not (y_pool[chosen] == 0).any():
        chosen[0] = rng.choice(neg_idx)
    return np.unique(chosen).astype(np.intp)


def _metrics(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float]:
    return {
        "f1": float(f1_score(y_true, y_pred, zero_division=0)),
        "precision": float(precision_score(y_true, y_pred, zero_division=0)),
        "recall": float(recall_score(y_true, y_pred, zero_division=0)),
    }


#: Keys of a round's record that hold positions and provenance rather than results; the tables
#: (``*_rounds.csv``) leave them out. ``labelled`` and ``next_labelled`` are the old format's.
RECORD_ONLY_KEYS = ("seed_set", "batch", "scores", "env", "date", "names", "labelled", "next_labelled")

#: ``"names"`` of every record written since the benchmark records took the registry's strategy
#: names (``"risk"``: skrisk's default, ``"risk_paper"``: the paper's method). Records without it
#: name the paper's method ``risk`` and the default ``risk_pre2w``; the benchmarks' record-renaming
#: tool renames them (once: it skips lines that carry this mark).
NAMES_MARK = "registry"

_FIX = ("restore it from a backup, or delete that line and the lines after it of the same strategy "
        "and seed (those rounds are rerun)")


class RunWriteError(SkriskError, OSError):
    """Writing a run's records or outputs failed; the message names the file and the fix."""


def _write_error(path: Path, exc: OSError) -> RunWriteError:
    err = RunWriteError(
        f"Cannot write {path}: {exc.strerror or exc}. Free disk space or make {path.parent} writable, "
        "then run the same command again to resume (the rounds already recorded are kept), or pass "
        "another output folder."
    )
    return err


def _gaps(positions: np.ndarray) -> list[int]:
    """Sorted positions as the first one and the differences (small numbers: compact records)."""
    pos = np.sort(np.asarray(positions, dtype=np.int64))
    return np.diff(pos, prepend=0).tolist()


def _ungap(gaps: Any, where: str) -> np.ndarray:
    if not isinstance(gaps, list) or not all(isinstance(g, int) and not isinstance(g, bool) for g in gaps):
        raise DataError(f"{where}: the positions must be a list of integers (first position, then gaps).")
    if gaps and (gaps[0] < 0 or min(gaps[1:], default=1) < 1):
        raise DataError(f"{where}: a position is negative or repeated (the gaps after the first must be >= 1).")
    return np.cumsum(np.asarray(gaps, dtype=np.int64)).astype(np.intp)


def _decode(rec: dict, where: str) -> dict:
    """A stored round (this format or the old one with full labelled lists) as an in-memory record."""
    for key, kind in (("strategy", str), ("seed", int), ("round", int), ("n_labelled", int)):
        if not isinstance(rec.get(key), kind) or isinstance(rec.get(key), bool):
            raise DataError(f"{where}: {key!r} is missing or not of type {kind.__name__} ({rec.get(key)!r}).")
    if rec["round"] < 0:
        raise DataError(f"{where}: round {rec['round']} is negative.")
    out = {k: v for k, v in rec.items() if k not in ("seed_set_gaps", "batch_gaps", "labelled", "next_labelled")}
    if "labelled" in rec or "next_labelled" in rec:  # the older format (whole position lists)
        try:
            lab = np.asarray(rec["labelled"], dtype=np.int64)
            nxt = None if rec.get("next_labelled") is None else np.asarray(rec["next_labelled"], dtype=np.int64)
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{where}: unreadable labelled / next_labelled lists ({exc}).") from exc
        if rec["round"] == 0:
            out["seed_set"] = np.sort(lab).tolist()
        out["batch"] = None if nxt is None else np.setdiff1d(nxt, lab).tolist()
        return out
    if rec["round"] == 0:
        if "seed_set_gaps" not in rec:
            raise DataError(f"{where}: round 0 holds no seed_set_gaps (the initial labelled set).")
        out["seed_set"] = _ungap(rec["seed_set_gaps"], where).tolist()
    batch = rec.get("batch_gaps")
    out["batch"] = None if batch is None else _ungap(batch, where).tolist()
    if out.get("scores") is not None and (
        not isinstance(out["scores"], list) or out["batch"] is None or len(out["scores"]) != len(out["batch"])
    ):
        raise DataError(f"{where}: scores must be a list with one score per batch position.")
    return out


def _encode(rec: dict) -> dict:
    """The stored form of an in-memory record: positions as gaps, compact."""
    out = {k: v for k, v in rec.items() if k not in ("seed_set", "batch")}
    if rec.get("seed_set") is not None:
        out["seed_set_gaps"] = _gaps(rec["seed_set"])
    out["batch_gaps"] = None if rec.get("batch") is None else _gaps(rec["batch"])
    return out


def _read(path: Path, *, repair: bool = False) -> list[tuple[int, dict]]:
    """(line, decoded record) of every round in ``path``; ``env`` and ``date`` carried forward
    (a process records them on the first line it writes)."""
    out = []
    env: dict[str, Any] = {}
    for line, rec in read_jsonl(path, repair=repair, what="results file", fix=_FIX, on_error=_write_error):
        dec = _decode(rec, f"{path}, line {line}")
        for key in ("env", "date"):
            if key in dec:
                env[key] = dec[key]
            elif key in env:
                dec[key] = env[key]
        out.append((line, dec))
    return out


def read_results(path: str | os.PathLike, *, repair: bool = False) -> list[dict]:
    """The round records of a results file (JSON lines), in file order.

    Each record holds the round's results (``dataset``, ``strategy``, ``seed``, ``round``,
    ``n_labelled``, ``f1``, ...), ``batch`` (the pool positions queried in that round, sorted; None
    after the last round), ``scores`` (the strategy's scores of those positions, rounded, when it
    gives them), ``seed_set`` (round 0: the initial labelled set), ``env`` / ``date`` (the
    machine, library versions and day of the process that ran it) and ``names`` (``"registry"``:
    the strategy is named as in :data:`~skrisk.experiments.STRATEGIES`; absent in records
    written before the records took those names).

    Parameters
    ----------
    path : path-like
        A ``results.jsonl`` of ``skrisk run`` or a raw record file of the benchmark scripts;
        a missing file reads as empty.
    repair : bool, default=False
        Cut a torn last line (a killed run) off the file; without it the line is only skipped.

    Raises
    ------
    DataError
        A damaged line other than the last, or a record that is not a round; names file and line.
    """
    return [rec for _, rec in _read(Path(path), repair=repair)]


def recorded_rounds(
    path: str | os.PathLike,
    strategy: str,
    seed: int,
    *,
    dataset: str | None = None,
    n_pool: int | None = None,
    n_seed: int | None = None,
    repair: bool = False,
) -> list[dict]:
    """The rounds of one (strategy, seed) run recorded in ``path``, in order, checked.

    A round recorded twice (a run extended to more rounds reruns its last one) counts once, the
    later record. The rounds must run 0, 1, 2, ... with no gap, every batch must hold pool
    positions not labelled before, and ``n_labelled`` must match; ``dataset``, ``n_pool`` and
    ``n_seed`` (when given) must match the records. Each record gets ``labelled``: the labelled
    pool positions it was trained on, rebuilt from the seed set and the batches.

    Raises
    ------
    DataError
        Names the file, the line and the fix.
    """
    path = Path(path)
    by_round: dict[int, tuple[int, dict]] = {}
    for line, rec in _read(path, repair=repair):
        if rec["strategy"] == strategy and rec["seed"] == seed:
            if dataset is not None and rec.get("dataset") != dataset:
                raise DataError(
                    f"{path}, line {line}: a round of dataset {rec.get('dataset')!r}, not {dataset!r}. The "
                    "file belongs to another run: pass another output folder (or results file)."
                )
            by_round[rec["round"]] = (line, rec)
    rounds = []
    labelled = np.empty(0, dtype=np.intp)
    for i, r in enumerate(sorted(by_round)):
        line, rec = by_round[r]
        where = f"{path}, line {line}"
        if r != i:
            raise DataError(
                f"{where}: round {r} of {strategy}, seed {seed} follows round {i - 1} (round {i} is "
                f"missing). {_FIX[0].upper() + _FIX[1:]}."
            )
        if r == 0:
            labelled = np.asarray(rec["seed_set"], dtype=np.intp)
            if n_seed is not None and len(labelled) != n_seed:
                raise DataError(
                    f"{where}: the run started from {len(labelled)} labelled pairs, not the {n_seed} asked "
                    "for. Pass the seed size of that run, or another output folder."
                )
        else:
            prev = rounds[-1]
            if prev["batch"] is None:
                raise DataError(
                    f"{where}: round {r} follows a round that queried nothing. {_FIX[0].upper() + _FIX[1:]}."
                )
            labelled = np.union1d(labelled, np.asarray(prev["batch"], dtype=np.intp))
        if n_pool is not None and len(labelled) and (labelled.min() < 0 or labelled.max() >= n_pool):
            raise DataError(
                f"{where}: a labelled position is outside the pool of {n_pool} pairs: the records belong "
                f"to another dataset or pool size. Pass another output folder, or {_FIX}."
            )
        if rec["n_labelled"] != len(labelled):
            raise DataError(
                f"{where}: n_labelled is {rec['n_labelled']} but the seed set and batches give "
                f"{len(labelled)} labelled pairs. {_FIX[0].upper() + _FIX[1:]}."
            )
        if rec["batch"] is not None:
            batch = np.asarray(rec["batch"], dtype=np.intp)
            if n_pool is not None and len(batch) and (batch.min() < 0 or batch.max() >= n_pool):
                raise DataError(
                    f"{where}: a queried position is outside the pool of {n_pool} pairs: the records "
                    f"belong to another dataset or pool size. Pass another output folder, or {_FIX}."
                )
            if np.isin(batch, labelled).any():
                raise DataError(f"{where}: the batch holds positions labelled before. {_FIX[0].upper() + _FIX[1:]}.")
        rounds.append({**rec, "labelled": labelled})
    return rounds


def format_record(record: dict) -> str:
    """A round's record as the line a results file stores (compact JSON, positions as gaps).

    Parameters
    ----------
    record : dict
        A record of :func:`run_active_learning` or :func:`read_results` (``seed_set`` and
        ``batch`` as lists of pool positions).

    Returns
    -------
    str
        One JSON line, ending in a newline; :func:`read_results` reads it back.

    Examples
    --------
    >>> from skrisk.experiments._loop import format_record
    >>> line = format_record({"strategy": "random", "seed": 0, "round": 0, "n_labelled": 3,
    ...                       "seed_set": [4, 9, 2], "batch": [5, 7]})
    >>> print(line, end="")
    {"strategy":"random","seed":0,"round":0,"n_labelled":3,"seed_set_gaps":[2,2,5],"batch_gaps":[5,2]}
    """
    return json.dumps(_encode(record), separators=(",", ":")) + "\n"


def _append(path: Path, record: dict) -> None:
    """Append one record as a line, flushed and fsynced; a failed write leaves no partial line."""
    line = format_record(record).encode("utf-8")
    try:
        fd = open_append(path)  # never through a link
    except LinkError:
        raise
    except OSError as exc:
        raise _write_error(path, exc) from exc
    try:
        append_durably(fd, line)  # a torn line left behind (cut failed) is cut off by the next resume
    except OSError as exc:
        raise _write_error(path, exc) from exc
    finally:
        os.close(fd)


def _rounded(scores: Any, n: int) -> list | None:
    """A strategy's scores as 4-significant-digit floats (None for non-finite), or None."""
    if scores is None or np.ndim(scores) != 1 or len(scores) != n:
        return None
    try:
        arr = np.asarray(scores, dtype=float)
    except (TypeError, ValueError):
        return None
    return [float(f"{v:.4g}") if np.isfinite(v) else None for v in arr]


def run_active_learning(
    task: ALTask,
    strategy: Callable[..., Any],
    make_matcher: Callable[[int], Any],
    *,
    n_seed: int = 100,
    n_instances: int = 100,
    n_rounds: int = 8,
    seed: int = 0,
    strategy_name: str | None = None,
    fit_kwargs: Callable[[ALTask], dict] | None = None,
    results_file: str | os.PathLike | None = None,
    query_kwargs: dict | None = None,
    progress: bool = False,
) -> list[dict]:
    """Run one simulated active-learning session and return one record per round.

    Round r trains a fresh matcher (``make_matcher(seed)``: the same initialisation for every
    strategy) on the labelled set, scores it on the test split, then queries ``n_instances``
    pool pairs with ``strategy`` and labels them from ``task.y``. The initial labelled set
    depends only on ``seed``, so every strategy starts from the same one.

    With ``results_file`` every round is appended (and fsynced) as one JSON line holding its
    results, the pool positions it queried (and the strategy's scores, rounded), round 0 also
    the seed set, and the first line a process writes its machine and library versions. A rerun
    resumes after the last complete round, rebuilding the labelled set from the seed set and the
    batches; a torn last line (a killed run) is cut off first.

    Parameters
    ----------
    task : ALTask
        The pairs, labels (the simulated oracle) and pool/valid/test positions.
    strategy : callable
        ``strategy(learner, X_pool, n_instances=1, *, random_state=None, **kw) -> (positions,
        scores)``, e.g. ``make_strategy(name, task)``.
    make_matcher : callable
        ``seed -> fresh unfitted matcher`` (``make_matcher_factory``).
    n_seed : int, default=100
        Size of the initial random labelled set (both classes).
    n_instances : int, default=100
        Pairs queried per round.
    n_rounds : int, default=8
        Rounds, the first one training on the initial labels only.
    seed : int, default=0
        Seeds the initial labelled set, the matcher and the queries.
    strategy_name : str, optional
        The records' ``strategy`` (default: the strategy's name).
    fit_kwargs : callable, optional
        ``task -> dict`` of matcher fit arguments (``matcher_fit_kwargs``).
    results_file : path-like, optional
        Append every round there and resume from it.
    query_kwargs : dict, optional
        Extra keyword arguments of the strategy.
    progress : bool, default=False
        Show a progress bar over the rounds.

    Returns
    -------
    list of dict
        Keys: dataset, strategy, seed, round, n_labelled, f1, precision, recall, valid_f1,
        batch_mispredicted (share of the queried batch the matcher mispredicted), batch_positive,
        fit_s, query_s, batch (sorted pool positions queried, None after the last round), scores,
        seed_set (round 0), env and date; records read back from ``results_file`` also hold
        ``labelled`` (the positions the round trained on).

    Raises
    ------
    DataError
        ``results_file`` holds damaged records or records of another run (names file and line).
    RunWriteError
        A record cannot be written (full disk, read-only folder); the rounds before are kept.
    """
    name = strategy_name or getattr(strategy, "__name__", type(strategy).__name__)
    y_pool = task.y[task.pool]
    n_pool = len(task.pool)
    done: list[dict] = []
    path = Path(results_file) if results_file is not None else None
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        done = recorded_rounds(path, name, seed, dataset=task.name, n_pool=n_pool, n_seed=n_seed, repair=True)
    if done and done[-1]["round"] >= n_rounds - 1:
        return [r for r in done if r["round"] < n_rounds]
    if done and done[-1]["batch"] is None:
        # the earlier run stopped at its last round: rerun that round (same labelled set, same
        # matcher seed) to query from it, so a longer run extends a shorter one
        if len(done[-1]["labelled"]) >= n_pool:
            return done
        last = done.pop()
        labelled, start = np.asarray(last["labelled"], dtype=np.intp), last["round"]
    elif done:
        labelled = np.union1d(done[-1]["labelled"], np.asarray(done[-1]["batch"], dtype=np.intp))
        start = done[-1]["round"] + 1
    else:
        labelled = initial_labelled_set(y_pool, n_seed, random_state=seed)
        start = 0
    records = list(done)
    X_valid, y_valid = task.rows(task.valid), task.y[task.valid]
    X_test, y_test = task.rows(task.test), task.y[task.test]
    extra_fit = fit_kwargs(task) if fit_kwargs is not None else {}
    rounds: Iterable[int] = range(start, n_rounds)
    if progress:
        from tqdm.auto import tqdm

        rounds = tqdm(rounds, desc=f"{task.name}/{name}/seed{seed}", leave=False)
    from ._env import machine_line

    provenance = {"env": machine_line(), "date": date.today().isoformat()}
    first = True
    for r in rounds:
        t0 = time.perf_counter()
        matcher = make_matcher(seed)
        learner = ActiveLearner(
            matcher, strategy, X_training=task.rows(task.pool[labelled]), y_training=y_pool[labelled], **extra_fit
        )
        fit_s = time.perf_counter() - t0
        rec: dict[str, Any] = {
            "dataset": task.name,
            "strategy": name,
            "seed": seed,
            "round": r,
            "n_labelled": int(len(labelled)),
            **_metrics(y_test, learner.predict(X_test)),
            "valid_f1": _metrics(y_valid, learner.predict(X_valid))["f1"],
            "fit_s": round(fit_s, 3),
            "names": NAMES_MARK,
        }
        unlabelled = np.setdiff1d(np.arange(n_pool), labelled)
        picked = None
        if r < n_rounds - 1 and len(unlabelled) > 0:
            n_q = min(n_instances, len(unlabelled))
            X_unl = task.rows(task.pool[unlabelled])
            t1 = time.perf_counter()
            result = strategy(learner, X_unl, n_instances=n_q, random_state=seed * 10007 + r, **(query_kwargs or {}))
            pos, scores = unpack_query(result, num_rows(X_unl))
            rec["query_s"] = round(time.perf_counter() - t1, 3)
            picked = unlabelled[pos]
            pred = learner.predict(take_rows(X_unl, pos))
            rec["batch_mispredicted"] = float(np.mean(np.asarray(pred) != y_pool[picked]))
            rec["batch_positive"] = float(np.mean(y_pool[picked] == 1))
            order = np.argsort(picked, kind="stable")
            rounded = _rounded(scores, len(picked))
            if rounded is not None:
                rec["scores"] = [rounded[i] for i in order]
            picked = picked[order]
        if r == 0:
            rec["seed_set"] = labelled.tolist()
        rec["batch"] = None if picked is None else picked.tolist()
        if path is not None:  # env and date on the first line this process writes (readers carry them on)
            _append(path, {**rec, **provenance} if first else rec)
        first = False
        rec.update(provenance)
        records.append({**rec, "labelled": labelled})
        if picked is None:
            break
        labelled = np.union1d(labelled, picked)
    return records
