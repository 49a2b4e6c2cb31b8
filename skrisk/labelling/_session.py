"""An interactive labelling session over two CSV tables, driven by risk sampling.

The session blocks the tables (or takes given candidate pairs), asks about a few pairs of high and
low average similarity until both matches and non-matches are known, then trains a
:class:`~skrisk.matchers.FeatureMatcher` and asks about the pairs risk sampling picks, showing the
two records side by side, the matcher's prediction, the risk and LearnRisk's explanation.
Everything is stored in a session folder (see :mod:`skrisk.labelling._journal`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import textwrap
import warnings
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Any, Callable, TextIO

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.utils.validation import check_is_fitted

from .. import __version__
from ..exceptions import DataError
from ._journal import Journal, SessionState, atomic_write_text, replay

__all__ = ["LabellingSession", "SessionConfig", "export_session"]

MANIFEST = "session.json"
JOURNAL = "journal.jsonl"
CANDIDATES = "candidates.csv"
LABELS_CSV = "labels.csv"
PREDICTED_CSV = "predicted_matches.csv"
_FORMAT = "skrisk-labelling-session"

_HELP = (
    "Answers: y = same entity (match), n = different entities, u = unsure (kept, not used for "
    "training, not asked again), z = undo the last answer, e = export labels.csv and "
    "predicted_matches.csv now, q = quit (everything answered is saved; run the same command to "
    "resume)."
)
_PROMPT = "Same entity? [y]es [n]o [u]nsure [z] undo [e]xport [q]uit [h]elp: "
_ANSWER_WORDS = {
    "y": "yes", "yes": "yes", "n": "no", "no": "no", "u": "unsure", "unsure": "unsure",
    "z": "undo", "undo": "undo", "q": "quit", "quit": "quit", "exit": "quit",
    "e": "export", "export": "export", "h": "help", "help": "help", "?": "help",
}


@dataclass
class SessionConfig:
    """Parameters of a session (stored in the manifest).

    Attributes
    ----------
    batch : int
        Pairs chosen by risk sampling per round (the matcher is retrained between rounds).
    n_initial : int
        Labels (both classes) gathered by similarity before the first matcher is trained.
    max_pool : int
        Unlabelled pairs risk sampling considers per round (a seeded random subset when there
        are more), which bounds the time per round.
    seed : int
        Seeds the matcher, LearnRisk, the pool subsets and tie-breaks.
    epochs : int
        LearnRisk training epochs per round.
    """

    batch: int = 10
    n_initial: int = 6
    max_pool: int = 3000
    seed: int = 0
    epochs: int = 200

    def check(self) -> None:
        for name in ("batch", "n_initial", "max_pool", "epochs"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}.")
        if self.n_initial < 2:
            raise ValueError(f"n_initial must be at least 2 (one match, one non-match), got {self.n_initial}.")


class _CrossFitMatcher(ClassifierMixin, BaseEstimator):
    """A FeatureMatcher whose probabilities for its own labelled pairs are out-of-fold.

    Input is a mapping with ``features`` (similarity features) and ``row`` (candidate position).
    A forest fits its training pairs perfectly, so in-sample probabilities would tell LearnRisk
    that the matcher never errs; the labelled pairs therefore get cross-validated probabilities,
    every other pair the full model's.
    """

    def __init__(self, cv: int = 5, random_state: int | None = None) -> None:
        self.cv = cv
        self.random_state = random_state

    def fit(self, X: dict, y: Any) -> "_CrossFitMatcher":
        from ..matchers._feature import FeatureMatcher

        F, rows = np.asarray(X["features"]), np.asarray(X["row"])
        y = np.asarray(y).astype(np.int64)
        base = FeatureMatcher(random_state=self.random_state)
        self.matcher_ = clone(base).fit(F, y)
        k = min(self.cv, int(np.bincount(y, minlength=2).min()))
        if k >= 2:
            folds = StratifiedKFold(k, shuffle=True, random_state=self.random_state)
            oof = cross_val_predict(clone(base), F, y, cv=folds, method="predict_proba")[:, 1]
        else:
            oof = self.matcher_.predict_proba(F)[:, 1]
        order = np.argsort(rows, kind="stable")
        self.oof_rows_, self.oof_proba_ = rows[order], oof[order]
        self.classes_ = np.array([0, 1])
        return self

    def predict_proba(self, X: dict) -> np.ndarray:
        check_is_fitted(self)
        P = self.matcher_.predict_proba(np.asarray(X["features"])).copy()
        rows = np.asarray(X["row"])
        at = np.searchsorted(self.oof_rows_, rows).clip(max=max(len(self.oof_rows_) - 1, 0))
        hit = self.oof_rows_[at] == rows if len(self.oof_rows_) else np.zeros(len(rows), bool)
        P[hit, 1] = self.oof_proba_[at[hit]]
        P[hit, 0] = 1.0 - P[hit, 1]
        return P

    def predict(self, X: dict) -> np.ndarray:
        return (self.predict_proba(X)[:, 1] > 0.5).astype(np.int64)

    def represent(self, X: dict) -> np.ndarray:
        check_is_fitted(self)
        return self.matcher_.represent(np.asarray(X["features"]))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _file_info(path: str | os.PathLike | None) -> dict | None:
    if path is None:
        return None
    p = Path(path).expanduser().resolve()
    if not p.is_file():
        raise FileNotFoundError(f"{p} does not exist: check the path.")
    return {"path": str(p), "sha256": _sha256(p), "bytes": p.stat().st_size}


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    return " ".join(str(value).split())


class LabellingSession:
    """One labelling session stored in a folder; :meth:`open` starts or resumes it.

    Parameters
    ----------
    folder : path-like
        The session folder.
    dataset : PairDataset
        The tables and the candidate pairs (labels of pre-labelled candidates are used for
        training and never asked).
    config : SessionConfig
    journal : Journal
    input_fn : callable, optional
        Reads one answer (given the prompt); ``EOFError`` ends the session cleanly. Default: the
        builtin :func:`input` (looked up at each call).
    out : text stream, default=sys.stdout
    """

    def __init__(
        self,
        folder: Path,
        dataset: Any,
        config: SessionConfig,
        journal: Journal,
        *,
        input_fn: Callable[[str], str] | None = None,
        out: TextIO | None = None,
    ) -> None:
        self.folder = folder
        self.dataset = dataset
        self.config = config
        self.journal = journal
        self.input_fn = input_fn if input_fn is not None else (lambda prompt: input(prompt))
        self.out = out if out is not None else sys.stdout
        try:
            self.echo = input_fn is None and not sys.stdin.isatty()
        except (AttributeError, ValueError):
            self.echo = False
        self.state: SessionState = replay(journal.events)
        pairs = dataset.pairs
        self.keys = list(zip(pairs["left_id"].tolist(), pairs["right_id"].tolist()))
        self.position = {k: i for i, k in enumerate(self.keys)}
        lab = pairs["label"].to_numpy()
        self.given = {self.keys[i]: int(lab[i]) for i in np.flatnonzero(lab >= 0)}
        unknown = [k for k in self.state.answers if k not in self.position]
        if unknown:
            raise DataError(
                f"{journal.path} has answers for pairs that are not candidates of this session, e.g. "
                f"{unknown[0]}: the session folder's {CANDIDATES} was changed. Restore it, or start a "
                "new session folder."
            )
        self._features: np.ndarray | None = None

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        folder: str | os.PathLike,
        *,
        left: str | os.PathLike | None = None,
        right: str | os.PathLike | None = None,
        pairs: str | os.PathLike | None = None,
        id_column: str | None = None,
        config: SessionConfig | None = None,
        overrides: dict | None = None,
        input_fn: Callable[[str], str] | None = None,
        out: TextIO | None = None,
    ) -> "LabellingSession":
        """Start a session in ``folder`` or resume the one stored there.

        On a new session ``left`` and ``right`` are required; on a resumed one they may be left
        out (the manifest's paths are used) and must be the same files (checked by SHA-256) when
        given. ``overrides`` (e.g. ``{"batch": 5}``) change parameters of a resumed session.
        """
        from ..data import load_csv_tables

        folder = Path(folder).expanduser()
        out = out if out is not None else sys.stdout
        manifest_path = folder / MANIFEST
        if manifest_path.is_file():
            try:
                manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
                if manifest.get("format") != _FORMAT:
                    raise ValueError(f"format is {manifest.get('format')!r}")
            except ValueError as exc:
                raise DataError(
                    f"{manifest_path} is not a skrisk session manifest ({exc}): pass a new folder to "
                    "--session, or restore the file."
                ) from exc
            inputs = manifest["inputs"]
            for side, given in (("left", left), ("right", right), ("pairs", pairs)):
                stored = inputs.get(side)
                if given is None:
                    continue
                info = _file_info(given)
                if stored is None or info["sha256"] != stored["sha256"]:  # type: ignore[index]
                    what = "no such file" if stored is None else f"{stored['path']}"
                    raise DataError(
                        f"--{side} {given} is not the file this session started with ({what}): the "
                        "contents differ. Resume with the original file (or leave the argument out "
                        f"to use the stored path), or start a new session in another folder."
                    )
            for side in ("left", "right"):
                p = Path(inputs[side]["path"])
                if not p.is_file():
                    raise FileNotFoundError(
                        f"The session's {side} table {p} is gone: pass its new location with --{side}."
                    )
            lpath = Path(left).expanduser() if left is not None else Path(inputs["left"]["path"])
            rpath = Path(right).expanduser() if right is not None else Path(inputs["right"]["path"])
            for side, p in (("left", lpath), ("right", rpath)):
                if _sha256(p) != inputs[side]["sha256"]:
                    raise DataError(
                        f"The {side} table {p} changed since the session started. Restore it, or "
                        "start a new session in another folder."
                    )
            params = dict(manifest["params"])
            for k, v in (overrides or {}).items():
                if v is not None and k in ("batch", "max_pool", "epochs"):
                    params[k] = v
            cfg = SessionConfig(**{k: params[k] for k in SessionConfig.__dataclass_fields__ if k in params})
            cfg.check()
            cand = folder / CANDIDATES
            if not cand.is_file():
                raise DataError(f"{cand} is missing: the session folder is damaged; start a new one.")
            dataset = load_csv_tables(
                lpath, rpath, pairs_csv=cand, id_column=manifest.get("id_column", "id"), split=None,
                name=manifest.get("name"),
            )
            if params != manifest["params"]:
                manifest["params"] = params
                atomic_write_text(manifest_path, json.dumps(manifest, indent=2) + "\n")
            journal = Journal(folder / JOURNAL).open()
            session = cls(folder, dataset, cfg, journal, input_fn=input_fn, out=out)
            n = len(session.state.answers)
            print(f"Resuming the session in {folder}: {n} answer(s) so far.", file=out, flush=True)
            return session

        if left is None or right is None:
            raise DataError(
                f"{folder} holds no session yet: start one with --left A.csv --right B.csv "
                "[--pairs candidates.csv]."
            )
        cfg = config or SessionConfig()
        cfg.check()
        id_column = id_column or "id"
        inputs = {"left": _file_info(left), "right": _file_info(right), "pairs": _file_info(pairs)}
        print("Reading the tables" + (" and candidate pairs" if pairs else " and blocking") + "...",
              file=out, flush=True)
        dataset = load_csv_tables(left, right, pairs_csv=pairs, id_column=id_column, split=None)
        if len(dataset) == 0:  # pragma: no cover - load_csv_tables raises first
            raise DataError("There is no candidate pair to label: give --pairs, or tables that share values.")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DataError(
                f"Cannot create the session folder {folder}: {exc.strerror or exc}. Choose a writable "
                "place for --session."
            ) from exc
        cand = dataset.pairs[["left_id", "right_id"]].copy()
        lab = dataset.pairs["label"].to_numpy()
        cand["label"] = pd.Series(np.where(lab >= 0, lab, -1)).map(lambda v: "" if v < 0 else str(v)).to_numpy()
        atomic_write_text(folder / CANDIDATES, cand.to_csv(index=False))
        # the same candidate order on resume: read back the file we just wrote
        dataset = load_csv_tables(left, right, pairs_csv=folder / CANDIDATES, id_column=id_column, split=None,
                                  name=dataset.name)
        journal = Journal(folder / JOURNAL).open()  # fails early on a read-only folder
        manifest = {
            "format": _FORMAT,
            "version": 1,
            "skrisk_version": __version__,
            "created": pd.Timestamp.now(tz="UTC").isoformat(timespec="seconds"),
            "name": dataset.name,
            "id_column": id_column,
            "inputs": inputs,
            "candidates": {"file": CANDIDATES, "pairs": len(dataset)},
            "params": {
                "batch": cfg.batch, "n_initial": cfg.n_initial, "max_pool": cfg.max_pool,
                "seed": cfg.seed, "epochs": cfg.epochs,
            },
        }
        atomic_write_text(manifest_path, json.dumps(manifest, indent=2) + "\n")
        print(
            f"New session in {folder}: {len(dataset)} candidate pairs between {len(dataset.left)} "
            f"left and {len(dataset.right)} right records; attributes {dataset.attributes}.",
            file=out, flush=True,
        )
        return cls(folder, dataset, cfg, journal, input_fn=input_fn, out=out)

    # ------------------------------------------------------------------ helpers
    def _print(self, *lines: str) -> None:
        for line in lines:
            print(line, file=self.out)
        self.out.flush()

    @property
    def features(self) -> np.ndarray:
        if self._features is None:
            from ..data import SimilarityFeatures

            self._print(f"Computing similarity features of {len(self.keys)} pairs...")
            sf = SimilarityFeatures()
            self._features = np.asarray(sf.fit_transform(self.dataset.to_frame()), dtype=np.float64)
            self._feature_names = [str(n) for n in sf.get_feature_names_out()]
        return self._features

    def _named(self, text: str) -> str:
        """Rule texts name features ``x<j>`` (LearnRisk sees an array): use the feature names."""
        names = getattr(self, "_feature_names", [])

        def repl(m: re.Match) -> str:
            j = int(m.group(1))
            return names[j] if j < len(names) else m.group(0)

        return re.sub(r"\bx(\d+)\b", repl, text)

    def labels(self) -> dict[tuple[str, str], int]:
        """Training labels in force: given ones, then the yes/no answers (answers win)."""
        return {**self.given, **self.state.labels()}

    def _asked(self) -> set[tuple[str, str]]:
        return set(self.given) | set(self.state.answers) | set(self.state.reask)

    def _avg_similarity(self) -> np.ndarray:
        F = self.features
        sim = np.where(F >= 0, F, np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=RuntimeWarning)
            s = np.nanmean(sim, axis=1)
        return np.nan_to_num(s, nan=0.0)

    # ------------------------------------------------------------------ choosing pairs
    def _next_batch(self) -> dict | None:
        labels = self.labels()
        n_yes = sum(v == 1 for v in labels.values())
        n_no = len(labels) - n_yes
        asked = self._asked()
        free = [i for i, k in enumerate(self.keys) if k not in asked]
        if not free:
            return None
        round_no = len(self.state.batches)
        if n_yes == 0 or n_no == 0 or len(labels) < self.config.n_initial:
            return self._seed_batch(free, n_yes, n_no, len(labels), round_no)
        return self._risk_batch(free, labels, round_no)

    def _seed_batch(self, free: list[int], n_yes: int, n_no: int, n_lab: int, round_no: int) -> dict:
        s = self._avg_similarity()
        free_arr = np.asarray(free)
        order = free_arr[np.argsort(-s[free_arr], kind="stable")]  # most similar first
        size = max(2, self.config.n_initial - n_lab)
        if n_yes == 0 and n_no > 0:
            picks = [(i, "high") for i in order[:size]]
        elif n_no == 0 and n_yes > 0:
            picks = [(i, "low") for i in order[::-1][:size]]
        else:
            picks, lo, hi = [], 0, len(order) - 1
            while len(picks) < size and lo <= hi:
                picks.append((order[lo], "high"))
                lo += 1
                if len(picks) < size and lo <= hi:
                    picks.append((order[hi], "low"))
                    hi -= 1
        items = []
        for i, side in picks:
            left_id, right_id = self.keys[int(i)]
            items.append(
                {
                    "left_id": left_id, "right_id": right_id, "similarity": round(float(s[i]), 4),
                    "explanation": (
                        f"A starting pair, picked for its {'high' if side == 'high' else 'low'} average "
                        f"similarity ({s[i]:.2f}): the matcher is trained once matches and non-matches "
                        "are both labelled."
                    ),
                }
            )
        return {"phase": "initial", "round": round_no, "items": items}

    def _risk_batch(self, free: list[int], labels: dict, round_no: int) -> dict:
        from ..active import ActiveLearner
        from ..strategies import RiskSampler

        cfg = self.config
        F = self.features
        rows = np.arange(len(self.keys))
        lab_pos = np.array([self.position[k] for k in labels], dtype=np.intp)
        y_lab = np.array(list(labels.values()), dtype=np.int64)
        rng = np.random.RandomState(cfg.seed * 7919 + round_no)
        pool = np.asarray(free, dtype=np.intp)
        if len(pool) > cfg.max_pool:
            pool = np.sort(rng.choice(pool, size=cfg.max_pool, replace=False))

        def take(pos: np.ndarray) -> dict:
            return {"features": F[pos], "row": rows[pos]}

        self._print(
            f"Training the matcher on {len(y_lab)} labels and choosing {min(cfg.batch, len(pool))} "
            f"pairs among {len(pool)} by risk sampling..."
        )
        sampler = RiskSampler(
            take(lab_pos), y_lab, risk_params={"epochs": cfg.epochs}, random_state=cfg.seed + round_no,
            device="cpu",
        )
        matcher = _CrossFitMatcher(random_state=cfg.seed)
        learner = ActiveLearner(matcher, sampler, X_training=take(lab_pos), y_training=y_lab)
        X_pool = take(pool)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            picked, risks = sampler(learner, X_pool, n_instances=min(cfg.batch, len(pool)),
                                    random_state=cfg.seed * 1009 + round_no)
        fallback = sampler.risk_model_ is None
        proba = matcher.predict_proba(take(pool[picked]))[:, 1]
        R = np.column_stack([F[pool[picked]], proba])
        items = []
        for j, (i, risk, p) in enumerate(zip(pool[picked], risks, proba)):
            left_id, right_id = self.keys[int(i)]
            if fallback:
                why = (
                    "LearnRisk is not trained yet: the cross-validated matcher labels all "
                    f"{len(y_lab)} labelled pairs correctly, so there is no mistake to learn from. "
                    f"The risk is the matcher's uncertainty min(p, 1 - p) = {risk:.3f}, spread over "
                    "the pairs by weighted k-medoids."
                )
            else:
                why = self._named(str(sampler.risk_model_.explain(R, j)))
            items.append(
                {
                    "left_id": left_id, "right_id": right_id, "probability": round(float(p), 4),
                    "prediction": int(p > 0.5), "risk": round(float(risk), 4), "explanation": why,
                }
            )
        notes = [str(w.message) for w in caught if not fallback or "LearnRisk" not in str(w.message)]
        return {"phase": "risk", "round": round_no, "n_labels": int(len(y_lab)), "items": items,
                "notes": notes[:3]}

    # ------------------------------------------------------------------ showing pairs
    def _render(self, key: tuple[str, str], position: tuple[int, int, str]) -> list[str]:
        item = self.state.items.get(key, {})
        width = max(60, min(shutil.get_terminal_size((100, 24)).columns, 140))
        ds = self.dataset
        lrec, rrec = ds.left.loc[key[0]], ds.right.loc[key[1]]
        attrs = ds.attributes
        aw = min(max(len("attribute"), *(len(a) for a in attrs)), 24)
        cw = max(16, (width - aw - 7) // 2)
        counts = self.state.counts()
        n_yes = counts["yes"] + sum(v == 1 for k, v in self.given.items() if k not in self.state.answers)
        n_no = counts["no"] + sum(v == 0 for k, v in self.given.items() if k not in self.state.answers)
        k, n, phase = position
        lines = [
            "=" * width,
            f"{phase}, question {k} of {n}   |   so far: {n_yes} match(es), {n_no} non-match(es), "
            f"{counts['unsure']} unsure",
            "-" * width,
        ]

        def row(a: str, lv: str, rv: str, mark: str) -> list[str]:
            lw = textwrap.wrap(lv, cw) or [""]
            rw = textwrap.wrap(rv, cw) or [""]
            out = []
            for t, (x, y) in enumerate(zip_longest(lw, rw, fillvalue="")):
                out.append(f"{(a[:aw] if t == 0 else ''):<{aw}} {mark if t == 0 else ' '} {x:<{cw}} | {y}")
            return out

        lines += row("attribute", f"left record {key[0]}", f"right record {key[1]}", " ")
        lines.append("-" * width)
        for a in attrs:
            lv, rv = _cell(lrec[a]), _cell(rrec[a])
            mark = "=" if lv.lower() == rv.lower() and lv else ("?" if not lv or not rv else "~")
            lines += row(a, lv, rv, mark)
        lines.append("-" * width)
        lines.append("(= same value, ~ different, ? missing on one side)")
        if "probability" in item:
            verdict = "MATCH" if item["prediction"] == 1 else "NON-MATCH"
            lines.append(
                f"Matcher says {verdict} with p(match) = {item['probability']:.3f}; "
                f"risk that this label is wrong = {item['risk']:.3f}"
            )
            lines.append("Why risk sampling picked it (LearnRisk):")
        for t in str(item.get("explanation", "")).splitlines():
            lines += textwrap.wrap(t, width, initial_indent="  ", subsequent_indent="      ") or [""]
        return lines

    # ------------------------------------------------------------------ the loop
    def _read(self) -> str:
        while True:
            raw = self.input_fn(_PROMPT)
            if self.echo:  # answers piped in do not show: echo them so the transcript reads well
                self._print(raw.strip())
            word = raw.strip().lower()
            if not word:
                continue
            ans = _ANSWER_WORDS.get(word)
            if ans == "help":
                self._print(_HELP)
                continue
            if ans is None:
                self._print(f"Unknown answer {raw.strip()!r}. {_HELP}")
                continue
            return ans

    def run(self) -> str:
        """Ask questions until the user quits, stdin ends or every candidate is answered.

        Returns
        -------
        str
            ``"quit"``, ``"eof"`` or ``"done"``.
        ``KeyboardInterrupt`` propagates (everything answered is already on disk).
        """
        while True:
            pending = self.state.pending()
            if not pending:
                batch = self._next_batch()
                if batch is None:
                    labels = self.labels()
                    self._print(f"Every candidate pair is answered ({len(self.state.answers)} answers).")
                    if len(set(labels.values())) < 2:
                        self._print("The labels hold a single class: no matcher can be trained from them.")
                    return "done"
                ev = self.journal.append("batch", **batch)
                self.state.apply(ev)
                for note in batch.get("notes", []):
                    self._print(f"note: {note}")
                continue
            key = pending[0]
            batch = self._batch_of(key)
            batch_keys = [(str(i["left_id"]), str(i["right_id"])) for i in batch["items"]] if batch else [key]
            k = batch_keys.index(key) + 1 if key in batch_keys else 1
            phase = (
                f"Starting pairs (round {batch['round'] + 1})" if batch and batch["phase"] == "initial"
                else f"Risk sampling round {batch['round'] + 1 if batch else '?'}"
            )
            if key in self.state.reask:
                phase += " [asked again after undo]"
            self._print("", *self._render(key, (k, len(batch_keys), phase)))
            try:
                ans = self._read()
            except EOFError:
                self._print("", "End of input: the session is saved; run the same command to resume.")
                return "eof"
            if ans == "quit":
                self._print("Quit: the session is saved; run the same command to resume.")
                return "quit"
            if ans == "export":
                self.export()
                continue
            if ans == "undo":
                last = self.state.last_answer()
                if last is None:
                    self._print("Nothing to undo.")
                    continue
                ev = self.journal.append(
                    "undo", target=int(last["seq"]), left_id=last["left_id"], right_id=last["right_id"]
                )
                self.state.apply(ev)
                self._print(f"Undone: your {last['answer']!r} for pair ({last['left_id']}, {last['right_id']}).")
                continue
            ev = self.journal.append(
                "answer", left_id=key[0], right_id=key[1], answer=ans,
                round=batch["round"] if batch else None,
            )
            self.state.apply(ev)

    def _batch_of(self, key: tuple[str, str]) -> dict | None:
        for b in reversed(self.state.batches):
            if any((str(i["left_id"]), str(i["right_id"])) == key for i in b["items"]):
                return b
        return None

    # ------------------------------------------------------------------ export
    def export(self) -> tuple[Path, Path]:
        """Write ``labels.csv`` and ``predicted_matches.csv`` into the session folder (atomically)."""
        return export_session(self)

    def close(self) -> None:
        self.journal.close()


def export_session(session: LabellingSession) -> tuple[Path, Path]:
    """Export a session's labels and predicted matches as CSV files in its folder.

    ``labels.csv``: one row per answer in force (and per pre-labelled candidate): ``left_id``,
    ``right_id``, ``label`` (1, 0, empty for unsure), ``answer`` (yes/no/unsure/given),
    ``answered_at``, then ``left_<attr>``/``right_<attr>`` values.

    ``predicted_matches.csv``: every candidate that is a match, by label (``source`` =
    ``labelled``) or by the matcher trained on all labels (``source`` = ``predicted``,
    ``probability`` > 0.5), sorted by probability; pairs labelled "no" are never listed.
    """
    ds, st = session.dataset, session.state
    rows = []
    for k, v in session.given.items():
        if k not in st.answers:
            rows.append({"left_id": k[0], "right_id": k[1], "label": v, "answer": "given", "answered_at": ""})
    for ev in st.answered_events():
        lab = {"yes": 1, "no": 0}.get(ev["answer"])
        rows.append({"left_id": ev["left_id"], "right_id": ev["right_id"], "label": lab,
                     "answer": ev["answer"], "answered_at": ev.get("t", "")})
    labels_df = pd.DataFrame(rows, columns=["left_id", "right_id", "label", "answer", "answered_at"])
    labels_df["label"] = labels_df["label"].astype("Int64")
    if len(labels_df):
        lrec = ds.left.loc[labels_df["left_id"]].reset_index(drop=True).add_prefix("left_")
        rrec = ds.right.loc[labels_df["right_id"]].reset_index(drop=True).add_prefix("right_")
        labels_df = pd.concat([labels_df.reset_index(drop=True), lrec, rrec], axis=1)
    labels = session.labels()
    keys = session.keys
    lab_arr = np.array([labels.get(k, -1) for k in keys])
    proba = np.where(lab_arr == 1, 1.0, 0.0)
    note = ""
    if (lab_arr == 1).any() and (lab_arr == 0).any():
        from ..matchers._feature import FeatureMatcher

        F = session.features
        known = lab_arr >= 0
        matcher = FeatureMatcher(random_state=session.config.seed).fit(F[known], lab_arr[known])
        proba = matcher.predict_proba(F)[:, 1]
    else:
        note = " (only labelled matches: the labels hold one class, no matcher was trained)"
    source = np.where(lab_arr == 1, "labelled", "predicted")
    is_match = (lab_arr == 1) | ((lab_arr == -1) & (proba > 0.5))
    pred = pd.DataFrame(
        {
            "left_id": [k[0] for k in keys],
            "right_id": [k[1] for k in keys],
            "probability": np.round(proba, 4),
            "source": source,
        }
    )[is_match]
    pred = pred.sort_values(["source", "probability"], ascending=[True, False], kind="stable")
    out_labels = session.folder / LABELS_CSV
    out_pred = session.folder / PREDICTED_CSV
    atomic_write_text(out_labels, labels_df.to_csv(index=False))
    atomic_write_text(out_pred, pred.to_csv(index=False))
    session._print(
        f"Exported {len(labels_df)} label(s) to {out_labels} and {len(pred)} match(es) to {out_pred}{note}."
    )
    return out_labels, out_pred
