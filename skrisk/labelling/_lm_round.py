"""The rounds of a labelling session whose matcher is a language model (``matcher="lm"``).

Scoring every candidate with a cross-encoder before each question is what makes a person wait on
a CPU, so a round of :class:`LMRounds`:

- scores a bounded shortlist: the ``max_pool`` free candidates most plausible by the last score
  each had from the language model (or, never scored, by a random forest on the similarity
  features trained on the same labels: the first stage), three quarters of it, and a seeded
  uniform sample of the others, the rest; the labelled pairs are scored too (LearnRisk reads their
  probabilities);
- keeps each candidate's latest language-model probability; the round's probability of a
  candidate is that one where it has one, else the first stage's (what the round's estimates,
  audit draws and stopping advice read);
- queries with the matcher trained in the background while the person answered the last batch
  (:meth:`LMRounds.train_next`: one warm epoch on the labels of the round before, at most
  :data:`TRAIN_PAIRS` of them, the newest first): the first round, and a resumed session's first,
  train in the foreground. Every fit starts from the same weights and labels
  whatever the timing, so a session is the same from one run to the next; training writes
  nothing, so killing the session while it trains loses no answer (they are journaled as given).
"""

from __future__ import annotations

import copy
import ctypes
import queue
import sys
import threading
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .._rows import take_rows
from ..exceptions import DataError

__all__ = ["LMRounds", "new_lm", "release_memory", "saved_lm"]

#: Share of the shortlist taken by plausibility; the rest is a uniform sample of the other free pairs.
TOP_SHARE = 0.75

#: Training batches between two :func:`release_memory` calls of a background fit: the batches'
#: activations differ in size (each is padded to its longest pair), so the C allocator would
#: otherwise keep what they freed, growing through the fit.
TRIM_EVERY = 4

#: Labelled pairs a background fit trains on (one warm epoch): the labels the last fit did not
#: have, then a seeded sample of the others; so a round's training time stays bounded.
TRAIN_PAIRS = 768


class LMRounds:
    """The language model's rounds: the matcher to query with, the shortlist, the kept scores.

    Parameters
    ----------
    n_candidates : int
        Candidate pairs of the session.
    make_matcher : callable
        ``make_matcher() -> LMMatcher``: an unfitted matcher with ``warm_start=True``.
    saved_matcher : callable, optional
        ``saved_matcher() -> LMMatcher or None``: the matcher the session saved last (a resumed
        session continues from it), or None.

    Attributes
    ----------
    scores : ndarray of shape (n_candidates,)
        Each candidate's latest match probability from the language model (NaN: never scored).
    trained_on : int
        Labels the matcher returned by the last :meth:`matcher` call was trained on.
    """

    def __init__(self, n_candidates: int, make_matcher: Callable[[], Any],
                 saved_matcher: Callable[[], Any] | None = None) -> None:
        self.scores = np.full(int(n_candidates), np.nan)
        self._make = make_matcher
        self._saved = saved_matcher
        self._matcher: Any = None
        self._job: dict | None = None
        self._queue: queue.Queue | None = None
        self.trained_on = 0

    def newest(self) -> Any:
        """The newest trained matcher (a background fit is waited for), else a new unfitted one."""
        job, self._job = self._job, None
        if job is not None:
            job["done"].wait()
            if job.get("error") is not None:
                raise job["error"]
            self._matcher, self.trained_on = job["matcher"].set_params(verbose=job["verbose"]), job["n"]
        return self._matcher if self._matcher is not None else self._make()

    def matcher(self, X_lab: Any, y_lab: np.ndarray, seed: int) -> Any:
        """The matcher to query with: the one :meth:`train_next` started (waited for), trained on
        the labels of the round before; the one before it when there was no new label to train
        on. Only when there is none it trains now: a resumed session from the matcher it saved
        last, as :meth:`train_next` trains (``seed``), else from the pretrained weights on
        ``(X_lab, y_lab)`` (the first round)."""
        self.newest()
        if self._matcher is None:
            saved = self._saved() if self._saved is not None else None
            if saved is not None:  # fitted as train_next fits, in place: it is nobody else's
                self.trained_on = 0
                X_fit, y_fit = self._fit_rows(X_lab, y_lab, seed)
                verbose = saved.get_params()["verbose"]
                self._matcher = saved.set_params(warm_epochs=1, verbose=0).fit(X_fit, y_fit).set_params(verbose=verbose)
            else:
                self._matcher = self._make().fit(X_lab, y_lab)
            self.trained_on = len(y_lab)
        return self._matcher

    def _fit_rows(self, X_lab: Any, y_lab: np.ndarray, seed: int) -> tuple[Any, np.ndarray]:
        """``(X, y)`` of the next fit: at most :data:`TRAIN_PAIRS` of the labelled pairs, those
        after the ones the current matcher was trained on (the newest answers come last), then a
        sample of the earlier ones (seeded by ``seed``); every label when the sample misses a class."""
        n = len(y_lab)
        rows = np.arange(n)
        if n > TRAIN_PAIRS:
            new = rows[self.trained_on:][-TRAIN_PAIRS:]
            old = rows[:n - len(new)]
            k = min(TRAIN_PAIRS - len(new), len(old))
            rows = np.sort(np.r_[np.random.RandomState(seed).choice(old, size=k, replace=False), new])
        X_fit, y_fit = take_rows(X_lab, rows), np.asarray(y_lab)[rows]
        if len(np.unique(y_fit)) < 2:  # a fit needs both classes
            return X_lab, np.asarray(y_lab)
        return X_fit, y_fit

    def train_next(self, X_lab: Any, y_lab: np.ndarray, seed: int) -> None:
        """Start the next round's fit in a background thread: one warm epoch on :meth:`_fit_rows`,
        from a copy of the current matcher (which keeps scoring until :meth:`matcher` returns the new one); nothing
        when there is no label the current matcher was not trained on."""
        n = len(y_lab)
        if self._matcher is None or self._job is not None or n <= self.trained_on:
            return
        X_fit, y_fit = self._fit_rows(X_lab, y_lab, seed)
        verbose = self._matcher.get_params()["verbose"]  # given back when the new matcher is adopted
        nxt = copy.deepcopy(self._matcher).set_params(warm_epochs=1, verbose=0)  # quiet under the questions
        cancel = threading.Event()
        batches = iter(range(1, 1 << 62))

        def between_batches() -> bool:  # LMMatcher._train calls it before each batch; True stops it
            if next(batches) % TRIM_EVERY == 0:
                release_memory()
            return cancel.is_set()

        nxt._batch_hook = between_batches
        job: dict = {"matcher": nxt, "n": n, "cancel": cancel, "error": None, "verbose": verbose,
                     "done": threading.Event()}

        def run() -> None:
            try:
                nxt.fit(X_fit, y_fit)
            except BaseException as exc:  # handed to the caller of matcher()
                job["error"] = exc
            finally:
                release_memory()
                job["done"].set()

        self._job = job
        self._worker().put(run)

    def _worker(self) -> queue.Queue:
        """The queue of the one background thread every fit of the session runs on (one thread,
        so that the memory a fit frees is reused by the next)."""
        if self._queue is None:
            self._queue = queue.Queue()
            jobs = self._queue

            def loop() -> None:
                while (job := jobs.get()) is not None:  # None: the session closed
                    job()

            threading.Thread(target=loop, name="skrisk-lm-training", daemon=True).start()
        return self._queue

    def needs_fit(self) -> bool:
        """Whether :meth:`matcher` trains in the foreground."""
        return self._job is None and self._matcher is None

    def training(self) -> bool:
        """Whether a background fit is running."""
        return self._job is not None and not self._job["done"].is_set()

    def cancel(self) -> None:
        """Stop a background fit and the thread (the session closes); its matcher is dropped."""
        job, self._job = self._job, None
        if job is not None:
            job["cancel"].set()
            job["done"].wait()
        if self._queue is not None:
            self._queue.put(None)
            self._queue = None

    def shortlist(self, free: np.ndarray, first: np.ndarray, size: int, rng: np.random.RandomState) -> np.ndarray:
        """The free candidates to score this round (sorted positions): all of them when they are
        at most ``size``, else the :data:`TOP_SHARE` most plausible (the kept score, else
        ``first``, the first stage's probability) and a uniform sample of the others."""
        free = np.asarray(free, dtype=np.intp)
        if len(free) <= size:
            return free
        kept = self.scores[free]
        prior = np.where(np.isnan(kept), first[free], kept)
        order = free[np.argsort(-prior, kind="stable")]
        n_top = int(round(size * TOP_SHARE))
        rest = order[n_top:]
        sample = rng.choice(rest, size=min(size - n_top, len(rest)), replace=False)
        return np.sort(np.r_[order[:n_top], sample])

    def keep(self, positions: np.ndarray, proba: np.ndarray) -> None:
        """Keep the language model's match probabilities of these candidates."""
        self.scores[np.asarray(positions, dtype=np.intp)] = np.asarray(proba, dtype=np.float64)

    def proba(self, first: np.ndarray) -> np.ndarray:
        """Every candidate's probability this round: the kept score, else ``first``'s."""
        return np.where(np.isnan(self.scores), np.asarray(first, dtype=np.float64), self.scores)


def release_memory() -> None:
    """Give the memory the C allocator holds free back to the system (glibc's ``malloc_trim``;
    nothing elsewhere): a fit's freed activations would otherwise stay in the process, round
    after round."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def new_lm(config: Any) -> Any:
    """The session's language model, unfitted: ``config.lm_model`` (or the offline
    all-MiniLM-L6-v2), warm-started round after round, seeded by the session."""
    from ..matchers import LMMatcher
    from ..matchers._lm_weights import OFFLINE_MODEL

    return LMMatcher(config.lm_model or OFFLINE_MODEL, warm_start=True, random_state=config.seed, verbose=1)


def saved_lm(folder: Path, config: Any, say: Callable[..., None]) -> Any:
    """The language model of the session's last saved round in ``folder`` (a resumed session
    continues from it), or None: none saved, another model, or a file that does not load (said)."""
    from ..matchers import LMMatcher
    from ..matchers._lm_weights import OFFLINE_MODEL
    from ..matching import load_model
    from ..matching._model import MODEL_FILE

    path = Path(folder) / MODEL_FILE
    if not path.is_file():
        return None
    try:
        matcher = load_model(path).matcher
    except (DataError, OSError, ValueError) as exc:
        say(f"The language model saved in {path} is not used ({exc}); training from the pretrained one.")
        return None
    if not isinstance(matcher, LMMatcher) or matcher.model_ != str(config.lm_model or OFFLINE_MODEL):
        return None
    return matcher.set_params(warm_start=True, random_state=config.seed, verbose=1)
