"""The simulated-oracle active-learning loop behind the benchmarks, ``skrisk run`` and ``skrisk demo``."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
from sklearn.metrics import f1_score, precision_score, recall_score
from sklearn.utils import check_random_state

from .._rows import num_rows, take_rows
from ..active import ActiveLearner, unpack_query

__all__ = ["ALTask", "run_active_learning", "initial_labelled_set", "read_results"]


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


def read_results(path: str | os.PathLike) -> list[dict]:
    """Records of a results file (JSON lines); a torn last line (a killed run) is ignored."""
    path = Path(path)
    if not path.exists():
        return []
    out = []
    with path.open() as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                break
    return out


def recorded_rounds(path: str | os.PathLike, strategy: str, seed: int) -> list[dict]:
    """The rounds of one (strategy, seed) run recorded in ``path``, in order; a round recorded
    twice (a run extended to more rounds reruns its last one) counts once, the later record."""
    by_round = {r["round"]: r for r in read_results(path) if r.get("strategy") == strategy and r.get("seed") == seed}
    return [by_round[r] for r in sorted(by_round)]


def _append(path: Path, record: dict) -> None:
    with path.open("a") as fh:
        fh.write(json.dumps(record) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def run_active_learning(
    task: ALTask,
    strategy: Callable[..., Any],
    make_matcher: Callable[[int], Any],
    *,
    n_seed: int = 100,
    batch_size: int = 100,
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
    strategy) on the labelled set, scores it on the test split, then queries ``batch_size``
    pool pairs with ``strategy`` and labels them from ``task.y``. The initial labelled set
    depends only on ``seed``, so every strategy starts from the same one.

    With ``results_file`` every round is appended (and fsynced) as a JSON line holding the
    labelled positions, and a rerun resumes after the last complete round.

    Returns
    -------
    list of dict
        Keys: dataset, strategy, seed, round, n_labelled, f1, precision, recall,
        batch_mispredicted (share of the queried batch the matcher mispredicted), fit_s, query_s.
    """
    name = strategy_name or getattr(strategy, "__name__", type(strategy).__name__)
    y_pool = task.y[task.pool]
    done: list[dict] = []
    path = Path(results_file) if results_file is not None else None
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        done = recorded_rounds(path, name, seed)
    if done and done[-1]["round"] >= n_rounds - 1:
        return [r for r in done if r["round"] < n_rounds]
    if done and done[-1].get("next_labelled") is None:
        # the earlier run stopped at its last round: rerun that round (same labelled set, same
        # matcher seed) to query from it, so a longer run extends a shorter one
        if len(done[-1]["labelled"]) >= len(task.pool):
            return done
        last = done.pop()
        labelled, start = np.asarray(last["labelled"], dtype=np.intp), last["round"]
    elif done:
        labelled = np.asarray(done[-1]["next_labelled"], dtype=np.intp)
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
    for r in rounds:
        t0 = time.perf_counter()
        matcher = make_matcher(seed)
        learner = ActiveLearner(
            matcher, strategy, X_training=task.rows(task.pool[labelled]), y_training=y_pool[labelled], **extra_fit
        )
        fit_s = time.perf_counter() - t0
        rec = {
            "dataset": task.name,
            "strategy": name,
            "seed": seed,
            "round": r,
            "n_labelled": int(len(labelled)),
            **_metrics(y_test, learner.predict(X_test)),
            "valid_f1": _metrics(y_valid, learner.predict(X_valid))["f1"],
            "fit_s": round(fit_s, 3),
        }
        unlabelled = np.setdiff1d(np.arange(len(task.pool)), labelled)
        next_labelled = None
        if r < n_rounds - 1 and len(unlabelled) > 0:
            n_q = min(batch_size, len(unlabelled))
            X_unl = task.rows(task.pool[unlabelled])
            t1 = time.perf_counter()
            result = strategy(learner, X_unl, n_instances=n_q, random_state=seed * 10007 + r, **(query_kwargs or {}))
            pos, _ = unpack_query(result, num_rows(X_unl))
            rec["query_s"] = round(time.perf_counter() - t1, 3)
            picked = unlabelled[pos]
            pred = learner.predict(take_rows(X_unl, pos))
            rec["batch_mispredicted"] = float(np.mean(np.asarray(pred) != y_pool[picked]))
            rec["batch_positive"] = float(np.mean(y_pool[picked] == 1))
            next_labelled = np.sort(np.concatenate([labelled, picked]))
        rec["labelled"] = labelled.tolist()
        rec["next_labelled"] = None if next_labelled is None else next_labelled.tolist()
        records.append(rec)
        if path is not None:
            _append(path, rec)
        if next_labelled is None:
            break
        labelled = next_labelled
    return records
