"""An interactive labelling session over two CSV tables, driven by risk sampling.

The session blocks the tables (or takes given candidate pairs), asks about a few pairs of high and
low average similarity until both matches and non-matches are known, then trains a
:class:`~skrisk.matchers.FeatureMatcher` and asks about the pairs risk sampling picks, showing the
two records side by side, the matcher's prediction, the risk and LearnRisk's explanation.
Everything is stored in a session folder (see :mod:`skrisk.labelling._journal`), which an OS file
lock reserves to one process at a time. Everything taken from the tables is shown through
:func:`~skrisk._safetext.visible` (no cell can drive the terminal) and exported through
:func:`~skrisk._safetext.spreadsheet_safe_frame` (no cell runs as a spreadsheet formula); an
export never silently drops answers of the ``labels.csv`` already there.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import warnings
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Any, Callable, TextIO

import numpy as np
import pandas as pd

from .. import __version__
from .._fileio import FolderLock, atomic_write_text, check_not_link, read_csv_export, write_csv_export
from .._safetext import display_width, visible, visible_short, wrap_to_width
from ..data import blocking_rules_from_json, blocking_rules_to_json
from ..exceptions import DataError, SkriskError
from ..matchers._base import MATCH_THRESHOLD, match_labels
from ..risk import matcher_uncertainty
from ..risk._defaults import DEFAULT_EPOCHS
from ._journal import ANSWERS, Journal, SessionState, _write_error, repair_journal, replay
from ._status import AUDIT_HELP, audit_batch, audit_keys, export_threshold, round_status, status_lines

__all__ = ["LabellingSession", "Question", "SessionConfig", "export_session"]

MANIFEST = "session.json"
JOURNAL = "journal.jsonl"
CANDIDATES = "candidates.csv"
LABELS_CSV = "labels.csv"
PREDICTED_CSV = "predicted_matches.csv"
_FORMAT = "skrisk-labelling-session"
_MAX_SEED = 2**32 - 1
_MAX_CELL = 2000  # characters of one cell shown in the console (the rest is summarised)
#: every file a session writes in its folder (checked for links before anything is touched)
_SESSION_FILES = (MANIFEST, JOURNAL, CANDIDATES, LABELS_CSV, PREDICTED_CSV, "model.skrisk",
                  JOURNAL + ".torn", "journal.rejected.jsonl")

_HELP = (
    "Answers: y = same entity (match), n = different entities, u = unsure (kept, not used for "
    "training, not asked again), z = undo the last answer, r = all the reasons, f = the records "
    "whole (long values are cut to fit the screen), e = export labels.csv and "
    "predicted_matches.csv now, q = quit (everything answered is saved; run the same command to "
    "resume). " + AUDIT_HELP
)
_PROMPT = "Same entity? [y]es [n]o [u]nsure [z]undo [r]easons [f]ull [q]uit [h]elp: "
_ANSWER_WORDS = {
    "y": "yes", "yes": "yes", "n": "no", "no": "no", "u": "unsure", "unsure": "unsure",
    "z": "undo", "undo": "undo", "q": "quit", "quit": "quit", "exit": "quit",
    "e": "export", "export": "export", "h": "help", "help": "help", "?": "help",
    "r": "reasons", "reasons": "reasons", "f": "full", "full": "full",
}


@dataclass
class SessionConfig:
    """Parameters of a session (stored in the manifest).

    Attributes
    ----------
    n_instances : int
        Pairs chosen by risk sampling per round (the matcher is retrained between rounds); the
        CLI flag is ``--batch``. A manifest written before this name (``"batch"`` under
        ``"params"``) is read as ``n_instances``.
    n_initial : int
        Labels (both classes) gathered by similarity before the first matcher is trained.
    max_pool : int
        Unlabelled pairs risk sampling considers per round (a seeded random subset when there
        are more), which bounds the time per round.
    seed : int
        Seeds the matcher, LearnRisk, the pool subsets and tie-breaks.
    epochs : int
        LearnRisk training epochs per round.
    audit : int
        Audit pairs drawn after each risk round (0: none); their answers estimate precision and
        recall; one trains the matcher only if a later round picks that pair (then its answer is
        reused, not asked again; see :func:`skrisk.labelling._status.audit_keys`).
    target : str
        What the match threshold is chosen for, from the audit answers: ``"f1"`` (0.5 unless
        the audit shows another gives a higher F1), ``"precision=0.9"`` (the lowest threshold whose estimated precision is at
        least 0.9) or ``"recall=0.8"``; exports and the saved model use it.
    matcher : {"feature", "lm"}
        The matcher trained each round: a random forest on the similarity features, or
        :class:`~skrisk.matchers.LMMatcher` (a pretrained language model fine-tuned on the
        pairs, warm-started from the last round; needs ``skrisk[lm]``, and a GPU for large
        candidate sets: every round scores all candidates).
    lm_model : str
        ``matcher="lm"``: the model folder or Hub name ("": the offline all-MiniLM-L6-v2).
    """

    n_instances: int = 10
    n_initial: int = 6
    max_pool: int = 3000
    seed: int = 0
    epochs: int = DEFAULT_EPOCHS
    audit: int = 5
    target: str = "f1"
    matcher: str = "feature"
    lm_model: str = ""

    def check(self) -> None:
        """Raise :class:`DataError` (a ``ValueError``) naming the first invalid parameter."""
        for name in ("n_instances", "n_initial", "max_pool", "epochs"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise DataError(f"{name} must be a positive integer, got {v!r}.")
        if self.n_initial < 2:
            raise DataError(f"n_initial must be at least 2 (one match, one non-match), got {self.n_initial}.")
        a = self.audit
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)) or a < 0:
            raise DataError(f"audit must be a non-negative integer (0 turns audits off), got {a!r}.")
        parse_target(self.target)
        if self.matcher not in ("feature", "lm"):
            raise DataError(f"matcher must be 'feature' or 'lm', got {self.matcher!r}.")
        if self.lm_model and self.matcher != "lm":
            raise DataError(f"lm_model is the model of matcher 'lm', but matcher is {self.matcher!r}: pass --matcher lm.")
        s = self.seed
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or not 0 <= s <= _MAX_SEED:
            raise DataError(f"seed must be an integer from 0 to {_MAX_SEED}, got {s!r}: pass such a --seed.")


def parse_target(text: object) -> str | dict[str, float]:
    """A threshold target as :func:`skrisk.quality.choose_threshold` takes it, from its text form.

    ``"f1"``, ``"precision=X"`` or ``"recall=X"`` with X in (0, 1]; anything else is a
    :class:`DataError` that says what to write.

    Examples
    --------
    >>> parse_target("f1"), parse_target("precision=0.9")
    ('f1', {'precision': 0.9})
    """
    fix = 'write f1, precision=X or recall=X with X from 0 to 1 (e.g. --target precision=0.9)'
    if not isinstance(text, str):
        raise DataError(f"target must be a text, got {text!r}: {fix}.")
    t = text.strip().lower()
    if t == "f1":
        return "f1"
    name, sep, value = t.partition("=")
    try:
        x = float(value) if sep and name.strip() in ("precision", "recall") else None
    except ValueError:
        x = None
    if x is None or not 0.0 < x <= 1.0:
        raise DataError(f"target {text!r} is not understood: {fix}.")
    return {name.strip(): x}


def _round_seed(seed: int, round_no: int, purpose: int) -> int:
    """A seed in [0, 2**32) for one round and one purpose, valid for every valid session seed."""
    return int(np.random.SeedSequence([int(seed), int(round_no), int(purpose)]).generate_state(1)[0])


def _check_encoding(encoding: str) -> None:
    """One codec name, or two separated by a comma (the left table's, the right table's)."""
    import codecs

    parts = str(encoding).split(",")
    try:
        if len(parts) > 2:
            raise LookupError
        for part in parts:
            codecs.lookup(part.strip())
    except (LookupError, TypeError):
        raise DataError(
            f"Unknown text encoding {encoding!r}: pass a Python codec name to --encoding, e.g. utf-8, "
            "latin-1, cp1252 or utf-16, or two separated by a comma, one per table (utf-8,latin-1)."
        ) from None


def _remove_if_only_lock(folder: Path) -> None:
    """Remove a folder this call created when it holds nothing but the lock files."""
    try:
        names = {p.name for p in folder.iterdir()}
        if names <= {FolderLock.LOCK_NAME, FolderLock.OWNER_NAME}:
            for name in names:
                (folder / name).unlink()
            folder.rmdir()
    except OSError:
        pass


def _read_manifest(path: Path) -> dict:
    """Read and check ``session.json``; :class:`DataError` names what is wrong and the fix."""
    fix = "Restore session.json from a backup, or start a new session in another folder."
    if not path.is_file():
        raise DataError(f"{path} is not a file: the session's manifest must be a file. {fix}")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path} is not a skrisk session manifest ({exc}). {fix}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT:
        got = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise DataError(f"{path} is not a skrisk session manifest (format is {got!r}). {fix}")

    def bad(what: str) -> DataError:
        return DataError(f"{path} is damaged: {what}. {fix}")

    inputs = manifest.get("inputs")
    if not isinstance(inputs, dict):
        raise bad('it has no "inputs" (the tables the session started with)')
    task = manifest.get("task", "link")
    if task not in ("link", "dedup"):
        raise bad(f'"task" is {task!r}, not "link" or "dedup"')
    manifest["task"] = task
    tables = ("table",) if task == "dedup" else ("left", "right")
    for side in (*tables, "pairs"):
        info = inputs.get(side)
        if info is None and side == "pairs":
            continue
        if not isinstance(info, dict) or not all(isinstance(info.get(k), str) for k in ("path", "sha256")):
            raise bad(f'"inputs" has no valid "{side}" entry (with "path" and "sha256")')
    params = manifest.get("params")
    if isinstance(params, dict) and "batch" in params and "n_instances" not in params:
        params["n_instances"] = params.pop("batch")  # the name of manifests written before n_instances
    fields = SessionConfig.__dataclass_fields__
    # added later: older sessions lack them and get the defaults
    optional = ("audit", "target", "matcher", "lm_model")
    texts = ("target", "matcher", "lm_model")
    if not isinstance(params, dict) or not all(
        isinstance(params.get(k), str if k in texts else int) for k in fields if k not in optional or k in params
    ):
        raise bad('"params" lacks one of the integers ' + ", ".join(k for k in fields if k not in optional)
                  + ' (or its "target" is not a text)')
    if not isinstance(manifest.get("id_column", "id"), str):
        raise bad('"id_column" is not a text')
    manifest.setdefault("id_column", "id")
    if not isinstance(manifest.get("encoding", "utf-8"), str):
        raise bad('"encoding" is not a text')
    if manifest.get("exported") is not None and not isinstance(manifest["exported"], dict):
        raise bad('"exported" is not an object')
    if manifest.get("blocking") is not None:
        try:  # checked here, kept in its JSON form (the form every manifest write must keep)
            blocking_rules_from_json(manifest["blocking"])
        except (TypeError, ValueError, KeyError) as exc:
            raise bad(f'"blocking" is not a list of blocking rules ({exc})') from exc
    if manifest.get("session_id") is not None and not isinstance(manifest["session_id"], str):
        raise bad('"session_id" is not a text')
    return manifest


def _new_session_id() -> str:
    """A session's identity, carried by each of its journal lines (random: unique across folders)."""
    import uuid

    return uuid.uuid4().hex


def _table_word(side: str) -> str:
    """``"left table"``, ``"right table"`` or ``"table"`` (the one table of a dedup session)."""
    return "table" if side == "table" else f"{side} table"


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
    """A cell as compared: whitespace runs (newlines included) become one space; no escaping."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    return " ".join(str(value).split())


def _shown(text: str) -> str:
    """A cell as shown: at most ``_MAX_CELL`` characters, control characters made visible."""
    if len(text) > _MAX_CELL:
        text = f"{text[:_MAX_CELL]} [... {len(text) - _MAX_CELL} more characters]"
    return visible(text)


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` terminal columns and padded to exactly that width."""
    kept, used = [], 0
    for ch in text:
        w = display_width(ch)
        if used + w > width:
            break
        kept.append(ch)
        used += w
    return "".join(kept) + " " * (width - used)


def item_reasons(item: dict) -> list[dict]:
    """The reasons a batch item stores, read defensively (a journal is a file a person may edit):
    each a dict with ``text``, ``direction``, ``weight`` (float) and ``rule`` (texts)."""
    raw = item.get("reasons") if isinstance(item, dict) else None
    out = []
    for r in raw if isinstance(raw, list) else []:
        if not isinstance(r, dict) or not str(r.get("text", "")).strip():
            continue
        try:
            weight = float(r.get("weight", 0.0))
        except (TypeError, ValueError):
            weight = 0.0
        out.append({"text": str(r["text"]), "direction": str(r.get("direction", "?")),
                    "weight": weight if weight == weight else 0.0, "rule": str(r.get("rule", "") or ""),
                    "attribute": str(r.get("attribute") or r.get("feature") or r["text"])})
    return out


def undone_text(last: dict) -> str:
    """What the console and the notebook labeller say after an undo (ids cut for the screen)."""
    return (f"Undone: your {last['answer']!r} for pair ({visible_short(last['left_id'])}, "
            f"{visible_short(last['right_id'])}).")


def short_reasons(reasons: list[dict], k: int = 3) -> list[dict]:
    """The ``k`` strongest reasons of distinct attributes (the console's short list; ``r`` shows all).

    Examples
    --------
    >>> rs = [{"attribute": a, "text": t} for a, t in [("name", "1"), ("name", "2"), ("city", "3")]]
    >>> [r["text"] for r in short_reasons(rs)]
    ['1', '3']
    """
    out, seen = [], set()
    for r in reasons:
        if r.get("attribute") not in seen:
            seen.add(r.get("attribute"))
            out.append(r)
        if len(out) == k:
            break
    return out


@dataclass(frozen=True)
class Question:
    """One pair the session asks about (:meth:`LabellingSession.next_question`).

    Attributes
    ----------
    left_id, right_id : str
        The pair.
    number, total : int
        Its place in its batch (1-based) and the batch's size.
    phase : str
        The batch's phase: ``"initial"`` (starting pairs picked by similarity) or ``"risk"``
        (picked by risk sampling) or ``"audit"`` (drawn to estimate the matcher's quality; never
        used for training).
    title : str
        The phase in words, as the console shows it.
    round : int or None
        The batch's round number (0-based).
    item : dict
        What the batch stored about the pair (``probability``, ``prediction``, ``risk``,
        ``reasons``, ``explanation``, ...).
    reask : bool
        Whether it is asked again after an undo.
    """

    left_id: str
    right_id: str
    number: int
    total: int
    phase: str
    title: str
    round: int | None
    item: dict
    reask: bool = False

    @property
    def key(self) -> tuple[str, str]:
        """``(left_id, right_id)``."""
        return (self.left_id, self.right_id)


def _reads_back_as_is(dataset: Any) -> bool:
    """Whether ``candidates.csv`` written from ``dataset`` reads back (as a resumed session reads it)
    to the same pairs in the same order, so that a new session need not read it back.

    The ids round-trip exactly (:func:`~skrisk.utils.write_csv_export`) and a dedup pair is
    already stored once, ``left_id < right_id``; the file has no ``split`` column, so each pair
    reads back in split ``"train"`` (labelled) or ``"pool"``, labelled pairs first. Pairs given
    with other splits (a ``split`` column in ``--pairs``) are read back from the file.
    """
    has = dataset.pairs["label"].to_numpy() >= 0
    split = dataset.pairs["split"].to_numpy(dtype=object)
    return bool((split == np.where(has, "train", "pool")).all() and not (has[1:] & ~has[:-1]).any())


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
        self.force = False
        self._manifest: dict = {}
        self._lock: FolderLock | None = None
        try:
            self.state: SessionState = replay(journal.events)
        except DataError as exc:
            raise DataError(f"{journal.path}: {exc}") from exc
        pairs = dataset.pairs
        self.keys = list(zip(pairs["left_id"].tolist(), pairs["right_id"].tolist()))
        self.position = {k: i for i, k in enumerate(self.keys)}
        lab = pairs["label"].to_numpy()
        self.given = {self.keys[i]: int(lab[i]) for i in np.flatnonzero(lab >= 0)}
        unknown = [k for k in self.state.answers if k not in self.position]
        unknown += [k for k in self.state.items if k not in self.position]
        if unknown:
            raise DataError(
                f"{journal.path} has answers or questions for pairs that are not candidates of this session, e.g. "
                f"{unknown[0]}: the session folder's {CANDIDATES} was changed. Restore it, or start a "
                "new session folder."
            )
        self._features: np.ndarray | None = None
        self._similarity: Any = None  # the fitted SimilarityFeatures (set with the features)
        self._lm: Any = None  # matcher "lm": the LMMatcher, warm-started round after round
        self._lm_pool: Any = None  # matcher "lm": serialize_pairs of every candidate, with the features

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
        encoding: str | None = None,
        config: SessionConfig | None = None,
        overrides: dict | None = None,
        force: bool = False,
        input_fn: Callable[[str], str] | None = None,
        out: TextIO | None = None,
        table: str | os.PathLike | None = None,
        blocking: Any = None,
        repair: bool = False,
    ) -> "LabellingSession":
        """Start a session in ``folder`` or resume the one stored there.

        The folder is locked (an OS file lock) until :meth:`close`: a second process on the same
        folder gets :class:`~skrisk._fileio.FolderInUseError` naming the holder's pid.

        On a new session ``left`` and ``right`` are required (linkage), or ``table`` alone
        (deduplication of one table: each unordered pair of distinct records is a candidate once;
        see :meth:`~skrisk.data.PairDataset.from_table`); on a resumed one they may be left
        out (the manifest's paths are used). ``blocking`` (rules for :func:`~skrisk.data.block`,
        ``None`` for the default ``tokens`` rule) makes the candidates of a new session without
        ``pairs``; the rules are stored in the manifest. When given, they must be the same files (checked by
        SHA-256); a table that moved is accepted at its new path, which the manifest then records.
        ``overrides`` (e.g. ``{"n_instances": 5}``) change parameters of a resumed session. ``force``
        resumes a session whose journal holds fewer events than at its last export (the old
        ``labels.csv`` is kept as a backup at the next export). ``repair`` moves the journal lines
        that cannot be read, or do not continue the session's journal, to
        ``journal.rejected.jsonl`` (see :func:`~skrisk.labelling.repair_journal`) before resuming:
        without it such a line is an error naming it, and nothing is changed.

        Every file the session writes is checked first: a symbolic link (or a journal with a
        second hard link) is refused before anything is read, cut or written.

        Raises
        ------
        DataError
            Bad options, tables, manifest or journal; the message names the file and the fix.
        FolderInUseError
            Another process has the session open.
        SessionWriteError
            The folder is not writable.
        """
        folder = Path(folder).expanduser()
        out = out if out is not None else sys.stdout
        if config is not None:
            config.check()  # every option is checked before anything is read or written
        if encoding is not None:
            _check_encoding(encoding)
        if folder.exists() and not folder.is_dir():
            raise DataError(
                f"The session folder {folder} is a file, not a folder: pass a folder path to --session "
                "(it is created when missing)."
            )
        created = not folder.exists()
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DataError(
                f"Cannot create the session folder {folder}: {exc.strerror or exc}. Choose a writable "
                "place for --session."
            ) from exc
        lock = FolderLock(folder, what="session", hint="pass another folder to --session")
        try:
            lock.acquire()
        except OSError as exc:
            if isinstance(exc, SkriskError):
                raise
            raise _write_error(folder / FolderLock.LOCK_NAME, exc) from exc
        try:
            for name in _SESSION_FILES:  # no write may go through a link planted in the folder
                check_not_link(folder / name, hard=name == JOURNAL)
            session = cls._open_locked(
                folder, left=left, right=right, pairs=pairs, id_column=id_column, encoding=encoding,
                config=config, overrides=overrides, force=force, input_fn=input_fn, out=out,
                table=table, blocking=blocking, repair=repair,
            )
        except BaseException:
            lock.release()
            if created:
                _remove_if_only_lock(folder)
            raise
        session._lock = lock
        return session

    @classmethod
    def _open_locked(
        cls, folder: Path, *, left: Any, right: Any, pairs: Any, id_column: str | None, encoding: str | None,
        config: SessionConfig | None, overrides: dict | None, force: bool,
        input_fn: Callable[[str], str] | None, out: TextIO, table: Any = None, blocking: Any = None,
        repair: bool = False,
    ) -> "LabellingSession":
        from ..data import load_csv_tables

        manifest_path = folder / MANIFEST
        if manifest_path.exists() or manifest_path.is_symlink():
            manifest = _read_manifest(manifest_path)
            inputs = manifest["inputs"]
            paths: dict[str, Path] = {}
            moved: list[str] = []
            dedup = manifest["task"] == "dedup"
            if dedup and (left is not None or right is not None):
                raise DataError(
                    f"The session in {folder} deduplicates one table ({inputs['table']['path']}): resume it "
                    "with --table (the same file) or without table arguments, not with --left/--right."
                )
            if not dedup and table is not None:
                raise DataError(
                    f"The session in {folder} links two tables ({inputs['left']['path']} and "
                    f"{inputs['right']['path']}): resume it with --left/--right or without table arguments, "
                    "not with --table."
                )
            sides = (("table", table),) if dedup else (("left", left), ("right", right))
            for side, given in sides:
                stored = inputs[side]
                if given is not None:
                    info = _file_info(given)
                    if info["sha256"] != stored["sha256"]:  # type: ignore[index]
                        raise DataError(
                            f"--{side} {given} is not the file this session started with "
                            f"({stored['path']}): the contents differ. Resume with the original file "
                            "(or leave the argument out to use the stored path), or start a new session "
                            "in another folder."
                        )
                    paths[side] = Path(info["path"])  # type: ignore[index]
                    if str(paths[side]) != stored["path"]:
                        moved.append(side)
                        inputs[side] = info
                    continue
                p = Path(stored["path"])
                if not p.is_file():
                    raise DataError(
                        f"The session's {_table_word(side)} {p} is gone: pass its new location with --{side} "
                        "(it must hold the same contents)."
                    )
                if _sha256(p) != stored["sha256"]:
                    raise DataError(
                        f"The {_table_word(side)} {p} changed since the session started. Restore it, or "
                        "start a new session in another folder."
                    )
                paths[side] = p
            if pairs is not None:
                stored = inputs.get("pairs")
                info = _file_info(pairs)
                if stored is None or info["sha256"] != stored["sha256"]:  # type: ignore[index]
                    what = "it started with blocking, no --pairs" if stored is None else stored["path"]
                    raise DataError(
                        f"--pairs {pairs} is not the file this session started with ({what}): the "
                        "contents differ. Resume without --pairs, or start a new session in another folder."
                    )
            params = dict(manifest["params"])
            for k, v in (overrides or {}).items():
                if v is not None and k in ("n_instances", "max_pool", "epochs", "audit", "target"):
                    params[k] = v
            cfg = SessionConfig(**{k: params[k] for k in SessionConfig.__dataclass_fields__ if k in params})
            try:
                cfg.check()
            except ValueError as exc:
                raise DataError(
                    f"{manifest_path}: {exc} Correct that value under \"params\" (or pass a valid --batch "
                    "/ --max-pool), then resume."
                ) from exc
            cand = folder / CANDIDATES
            if not cand.is_file():
                raise DataError(f"{cand} is missing: the session folder is damaged; start a new one.")
            cand_info = manifest.get("candidates")
            dataset = load_csv_tables(
                paths["table"] if dedup else paths["left"], None if dedup else paths["right"],
                pairs_csv=cand, id_column=manifest["id_column"], split=None,
                name=manifest.get("name"), encoding=manifest.get("encoding", "utf-8"), pairs_encoding="utf-8",
                pairs_exported=isinstance(cand_info, dict) and cand_info.get("neutralised") is True,
            )
            sid = manifest.get("session_id")
            migrated = sid is None  # a session of an older skrisk: its journal lines carry no identity
            if migrated:
                sid = manifest["session_id"] = _new_session_id()
            if repair:
                moved_lines = repair_journal(folder / JOURNAL, session=sid)
                for line, why in moved_lines:
                    print(visible(f"Moved journal line {line} to journal.rejected.jsonl: {why}"), file=out, flush=True)
                force = force or bool(moved_lines)  # the user chose to go on without those lines
                if moved_lines and manifest.get("exported"):
                    print(f"The {LABELS_CSV} exported before is kept as a backup at the next export.",
                          file=out, flush=True)
            journal = Journal(folder / JOURNAL, session=sid)
            exported = manifest.get("exported") or {}
            last_seq = journal.next_seq - 1
            if isinstance(exported.get("last_seq"), int) and last_seq < exported["last_seq"] and not force:
                n_now = len(replay(journal.events).answers) if journal.events else 0
                raise DataError(
                    f"{journal.path} holds events up to number {last_seq} ({n_now} answer(s)), but it held "
                    f"events up to number {exported['last_seq']} when {folder / LABELS_CSV} was exported "
                    f"with {exported.get('labels', '?')} label(s): the journal was emptied, cut or replaced, "
                    "and going on would lose answers. Restore journal.jsonl from a backup (labels.csv still "
                    "holds the exported answers), or pass --force to go on with the journal as it is (the "
                    "old labels.csv is then kept as a backup beside the new one)."
                )
            changed = params != manifest["params"] or moved or migrated
            if changed:
                manifest["params"] = params
                atomic_write_text(manifest_path, json.dumps(manifest, indent=2) + "\n", on_error=_write_error)
            for side in moved:
                print(visible(f"The {_table_word(side)} is now {paths[side]} (same contents, checked by SHA-256); "
                          "the session records its new place."), file=out, flush=True)
            journal.open()
            session = cls(folder, dataset, cfg, journal, input_fn=input_fn, out=out)
            session.force = force
            session._manifest = manifest
            n = len(session.state.answers)
            print(visible(f"Resuming the session in {folder}: {n} answer(s) so far."), file=out, flush=True)
            return session

        if (folder / JOURNAL).is_file() and (folder / JOURNAL).stat().st_size > 0:
            raise DataError(
                f"{folder} holds a journal of answers ({JOURNAL}) but no {MANIFEST}: the session's "
                f"manifest was deleted. Restore {MANIFEST} from a backup to resume, or start the new "
                "session in another folder (the answers in this one would be lost)."
            )
        dedup = table is not None
        if dedup and (left is not None or right is not None):
            raise DataError(
                "Give either one table to deduplicate (--table people.csv) or two tables to link "
                "(--left A.csv --right B.csv), not both."
            )
        if not dedup and (left is None or right is None):
            raise DataError(
                f"{folder} holds no session yet: start one with --left A.csv --right B.csv "
                "(or --table T.csv to deduplicate one table) [--pairs candidates.csv]."
            )
        if pairs is not None and blocking is not None:
            raise DataError(
                "Candidate pairs come either from --pairs or from blocking: leave out the blocking "
                "options when you give --pairs."
            )
        cfg = config or SessionConfig()
        cfg.check()
        id_column = id_column or "id"
        encoding = encoding or "utf-8"
        if dedup:
            left, right = table, None
            inputs = {"table": _file_info(table), "pairs": _file_info(pairs)}
        else:
            inputs = {"left": _file_info(left), "right": _file_info(right), "pairs": _file_info(pairs)}
        print("Reading the " + ("table" if dedup else "tables")
              + (" and candidate pairs" if pairs else " and blocking") + "...", file=out, flush=True)
        dataset, blocked = load_csv_tables(left, right, pairs_csv=pairs, id_column=id_column, split=None,
                                           encoding=encoding, blocking=blocking, return_blocking=True)
        if blocked is not None:
            print(visible(blocked.report()), file=out, flush=True)
        if len(dataset) == 0:  # pragma: no cover - load_csv_tables raises first
            raise DataError("There is no candidate pair to label: give --pairs, or tables that share values.")
        cand = dataset.pairs[["left_id", "right_id"]].copy()
        lab = dataset.pairs["label"].to_numpy()
        cand["label"] = pd.Series(np.where(lab >= 0, lab, -1)).map(lambda v: "" if v < 0 else str(v)).to_numpy()
        write_csv_export(folder / CANDIDATES, cand, on_error=_write_error)
        if not _reads_back_as_is(dataset):  # the same candidates in the same order as on resume
            dataset = load_csv_tables(left, right, pairs_csv=folder / CANDIDATES, id_column=id_column, split=None,
                                      name=dataset.name, encoding=encoding, pairs_encoding="utf-8",
                                      pairs_exported=True)
        sid = _new_session_id()
        journal = Journal(folder / JOURNAL, session=sid).open()  # fails early on a read-only folder
        manifest = {
            "format": _FORMAT,
            "version": 1,
            "skrisk_version": __version__,
            "created": pd.Timestamp.now(tz="UTC").isoformat(timespec="seconds"),
            "session_id": sid,
            "name": dataset.name,
            "id_column": id_column,
            "encoding": encoding,
            "task": dataset.task,
            "inputs": inputs,
            "blocking": blocking_rules_to_json(blocking) if pairs is None else None,
            "candidates": {"file": CANDIDATES, "pairs": len(dataset), "neutralised": True},
            "params": {
                "n_instances": cfg.n_instances, "n_initial": cfg.n_initial, "max_pool": cfg.max_pool,
                "seed": cfg.seed, "epochs": cfg.epochs, "audit": cfg.audit, "target": cfg.target,
                "matcher": cfg.matcher, "lm_model": cfg.lm_model,
            },
        }
        atomic_write_text(folder / MANIFEST, json.dumps(manifest, indent=2) + "\n", on_error=_write_error)
        where = (f"among the {len(dataset.left)} records of one table (each pair once)" if dedup else
                 f"between {len(dataset.left)} left and {len(dataset.right)} right records")
        print(
            visible(f"New session in {folder}: {len(dataset)} candidate pairs {where}; attributes "
                    f"{dataset.attributes}."),
            file=out, flush=True,
        )
        session = cls(folder, dataset, cfg, journal, input_fn=input_fn, out=out)
        session.force = force
        session._manifest = manifest
        return session

    # ------------------------------------------------------------------ helpers
    def _print(self, *lines: str) -> None:
        """Print lines, every character a terminal would interpret shown as an escape."""
        for line in lines:
            print(visible(line), file=self.out)
        self.out.flush()

    @property
    def features(self) -> np.ndarray:
        if self._features is None:
            from ..data import SimilarityFeatures

            self._print(f"Computing similarity features of {len(self.keys)} pairs...")
            sf = SimilarityFeatures(n_jobs=-1)  # every core (the values do not depend on it)
            self._features = np.asarray(sf.fit_transform(self.dataset), dtype=np.float64)  # tables encoded once
            self._similarity = sf  # the fitted features go into the saved model
            self._feature_names = [str(n) for n in sf.get_feature_names_out()]
        return self._features

    def matcher_input(self) -> Any:
        """What the session's matcher reads for every candidate: the similarity features, or (matcher
        "lm") the serialised records with those features (:func:`~skrisk.matchers.serialize_pairs`)."""
        F = self.features
        if self.config.matcher != "lm":
            return F
        if self._lm_pool is None:
            from ..matchers import serialize_pairs

            self._lm_pool = serialize_pairs(self.dataset.to_frame(), features=F)
        return self._lm_pool

    def new_matcher(self) -> Any:
        """The matcher of a round: a random forest, or the session's LMMatcher (warm after its first round)."""
        from ..matchers import FeatureMatcher

        if self.config.matcher != "lm":
            return FeatureMatcher(random_state=self.config.seed)
        if self._lm is None:
            from ..matchers import LMMatcher
            from ..matchers._lm_weights import OFFLINE_MODEL

            self._lm = LMMatcher(self.config.lm_model or OFFLINE_MODEL, warm_start=True, random_state=self.config.seed,
                                 verbose=1)
        return self._lm

    def labels(self) -> dict[tuple[str, str], int]:
        """Training labels in force: given ones, then the yes/no answers (answers win); not the answers
        of audited pairs that no training batch picked (see :func:`~skrisk.labelling._status.audit_keys`)."""
        audit = audit_keys(self)
        return {**self.given, **{k: v for k, v in self.state.labels().items() if k not in audit}}

    def _asked(self) -> set[tuple[str, str]]:
        return set(self.given) | set(self.state.answers) | set(self.state.reask)

    def _avg_similarity(self) -> np.ndarray:
        F = self.features
        s = np.empty(len(F))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=RuntimeWarning)
            for a in range(0, len(F), 65536):  # in row blocks: the same mean of each row, no matrix-sized temporaries
                block = F[a:a + 65536]
                s[a:a + 65536] = np.nanmean(np.where(block >= 0, block, np.nan), axis=1)
        return np.nan_to_num(s, nan=0.0)

    # ------------------------------------------------------------------ choosing pairs
    def _next_batch(self) -> dict | None:
        owed = audit_batch(self)  # the audit drawn with the last risk round, once that round is answered
        if owed is not None:
            return owed
        labels = self.labels()
        n_yes = sum(v == 1 for v in labels.values())
        n_no = len(labels) - n_yes
        asked = self._asked()
        # audited pairs answered yes/no stay in the pool: picked later, their answer is reused
        reusable = (audit_keys(self) & set(self.state.labels())) - set(self.state.reask)
        free = [i for i, k in enumerate(self.keys) if k not in asked or k in reusable]
        if not free or all(self.keys[i] in reusable for i in free):
            return None
        round_no = len(self.state.batches)
        if n_yes == 0 or n_no == 0 or len(labels) < self.config.n_initial:
            batch = self._seed_batch(free, n_yes, n_no, len(labels), round_no)
        else:
            batch = self._risk_batch(free, labels, round_no)
        reused = sum((str(i["left_id"]), str(i["right_id"])) in reusable for i in batch["items"])
        if reused:
            batch.setdefault("notes", []).append(
                f"{reused} of the pairs picked this round {'was' if reused == 1 else 'were'} answered in an audit: "
                "the answer is reused for training, not asked again."
            )
        return batch

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
        from .._rows import take_rows
        from ..active import ActiveLearner
        from ..strategies import RiskSampler

        cfg = self.config
        F = self.matcher_input()
        lab_pos = np.array([self.position[k] for k in labels], dtype=np.intp)
        y_lab = np.array(list(labels.values()), dtype=np.int64)
        rng = np.random.RandomState(_round_seed(cfg.seed, round_no, 0))
        pool = np.asarray(free, dtype=np.intp)
        if len(pool) > cfg.max_pool:
            pool = np.sort(rng.choice(pool, size=cfg.max_pool, replace=False))

        self._print(
            f"Training the matcher on {len(y_lab)} labels and choosing {min(cfg.n_instances, len(pool))} "
            f"pairs among {len(pool)} by risk sampling..."
        )
        # LearnRisk learns its rules and ranks its weights on out-of-fold probabilities of the
        # labelled pairs (a forest is always right on the pairs it was fitted on)
        sampler = RiskSampler(
            risk_params={"epochs": cfg.epochs}, random_state=_round_seed(cfg.seed, round_no, 1),
            device="cpu", feature_names=self._feature_names,
        )
        matcher = self.new_matcher()
        learner = ActiveLearner(matcher, sampler, X_training=take_rows(F, lab_pos), y_training=y_lab)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            picked, risks = sampler(learner, take_rows(F, pool), n_instances=min(cfg.n_instances, len(pool)),
                                    random_state=_round_seed(cfg.seed, round_no, 2))
        risk_model = sampler.last_query_.risk_model
        fallback = risk_model is None
        proba_all = matcher.predict_proba(F)[:, 1]
        risk_all = np.minimum(proba_all, 1 - proba_all) if fallback else risk_model.predict_risk(F)
        status, draws = round_status(self, proba_all, np.asarray(risk_all, dtype=np.float64),
                                     np.asarray(sampler.last_query_.risk, dtype=np.float64), len(free),
                                     round_no, _round_seed(cfg.seed, round_no, 3))
        status["lines"] = status_lines(self, status)  # kept for status_text() (the Jupyter labeller)
        self._print(*status["lines"])
        self._save_model(matcher, risk_model, threshold=status["threshold"])  # the round's chosen threshold
        chosen = take_rows(F, pool[picked])
        proba = matcher.predict_proba(chosen)[:, 1]
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
                reasons = []
            else:
                values = {a: (lv, rv) for a, lv, rv in self.record_values((left_id, right_id))}
                exp = risk_model.explain(chosen, j, pairs=values)
                why = str(exp)
                reasons = [
                    {"text": r.text, "direction": r.direction, "weight": round(r.weight, 4),
                     "feature": r.feature, "attribute": r.attribute or r.feature,
                     "rule": r.rules[0] if r.rules else ""}
                    for r in exp.reasons
                ]
            items.append(
                {
                    "left_id": left_id, "right_id": right_id, "probability": round(float(p), 4),
                    "prediction": int(match_labels([p])[0]), "risk": round(float(risk), 4),
                    "explanation": why, "reasons": reasons,
                }
            )
        notes = [str(w.message) for w in caught if not fallback or "LearnRisk" not in str(w.message)]
        return {"phase": "risk", "round": round_no, "n_labels": int(len(y_lab)), "items": items,
                "notes": notes[:3], "status": status, "audit_draws": draws}

    def _save_model(self, matcher: Any, risk_model: Any, threshold: float | None = None) -> Path:
        """Save the model of this round (:data:`~skrisk.matching.MODEL_FILE`, atomically) for ``skrisk match``."""
        from ..matching import MODEL_FILE, MatchModel
        from ..matchers._base import MATCH_THRESHOLD

        manifest = self._manifest or {}
        rules = blocking_rules_from_json(manifest.get("blocking"))  # the manifest keeps the JSON form
        model = MatchModel(
            attributes=list(self.dataset.attributes), features=self._similarity, matcher=matcher,
            risk_model=risk_model,
            threshold=float(threshold if threshold is not None else manifest.get("threshold", MATCH_THRESHOLD)),
            task=self.dataset.task, blocking=rules,
            id_column=manifest.get("id_column", "id"),
        )
        path = self.folder / MODEL_FILE
        try:
            return model.save(path)
        except OSError as exc:
            raise _write_error(path, exc) from exc

    # ------------------------------------------------------------------ showing pairs
    def record_values(self, key: tuple[str, str]) -> list[tuple[str, str, str]]:
        """``(attribute, left value, right value)`` of a pair, cells as compared (whitespace runs as
        one space, missing as ``""``); not escaped: every display escapes them its own way."""
        ds = self.dataset
        lrec, rrec = ds.left.loc[key[0]], ds.right.loc[key[1]]
        return [(str(a), _cell(lrec[a]), _cell(rrec[a])) for a in ds.attributes]

    def _counts_text(self) -> str:
        counts = self.state.counts()
        n_yes = counts["yes"] + sum(v == 1 for k, v in self.given.items() if k not in self.state.answers)
        n_no = counts["no"] + sum(v == 0 for k, v in self.given.items() if k not in self.state.answers)
        return f"so far: {n_yes} match(es), {n_no} non-match(es), {counts['unsure']} unsure"

    def _screen(self) -> tuple[int, int]:
        """Terminal columns (20-140) and lines (at least 20; 40 when unknown, e.g. piped).

        A terminal's own size wins over ``COLUMNS`` / ``LINES`` (often stale: a shell exports
        them once, then the window is resized); output that is not a terminal reads them.
        """
        size = None
        try:
            if self.out.isatty():
                size = os.get_terminal_size(self.out.fileno())
        except (AttributeError, OSError, ValueError):
            size = None
        if size is None or size.columns <= 0 or size.lines <= 0:
            size = shutil.get_terminal_size((100, 40))
        return max(20, min(size.columns, 140)), max(20, size.lines)

    def _render(self, key: tuple[str, str], position: tuple[int, int, str], *, full: bool = False) -> list[str]:
        """The lines showing one pair; no line is wider than the terminal, no cell can drive it.

        The question fits the terminal's height (40 lines when unknown) together with the prompt:
        long cells are wrapped and cut to their share of the lines (the cut says how many
        characters are hidden; ``f`` shows the records whole), and at most three reasons are shown
        (``r`` shows them all). With ``full=True`` every cell is shown whole (up to ``_MAX_CELL``
        characters) and every reason.

        Every text from the tables (ids, attribute names, cells, explanations) goes through
        :func:`~skrisk._safetext.visible`; widths are counted in terminal columns (wide CJK
        characters take two). Terminals narrower than 72 columns get one value per line.
        """
        item = self.state.items.get(key, {})
        width, height = self._screen()
        narrow = width < 72
        values = self.record_values(key)
        names = [visible(a) for a, _, _ in values]
        aw = min(max(len("attribute"), *(display_width(a) for a in names)), 24) if names else len("attribute")
        cw = max(16, (width - aw - 7) // 2)
        k, n, phase = position
        head = [
            "=" * width,
            f"{phase}, question {k} of {n} | {self._counts_text()}",
            "-" * width,
        ]

        def cell_lines(v: str, w: int) -> list[str]:
            return wrap_to_width(_shown(v), w) if v else [""]

        def cut(lines: list[str], keep: int, w: int, v: str) -> list[str]:
            """The first ``keep`` lines; a cut ends with how many characters are hidden."""
            if len(lines) <= keep:
                return lines
            kept = lines[:keep]
            hidden = len(v) - sum(len(t) + 1 for t in kept)  # each line break took one space
            tag = f" [... {max(hidden, 1)} more characters]"
            last = kept[-1]
            while last and display_width(last + tag) > w:
                last = last[:-1]
            kept[-1] = (last + tag) if display_width(last + tag) <= w else tag.strip()[:w]
            return kept

        def row(a: str, lv: list[str], rv: list[str], mark: str) -> list[str]:
            if narrow:
                out = [f"{mark} {a}"]
                for side, parts in (("L", lv), ("R", rv)):
                    out += [f"  {side}: {parts[0]}"] + [f"     {t}" for t in parts[1:]]
                return out
            out = []
            for t, (x, y) in enumerate(zip_longest(lv, rv, fillvalue="")):
                out.append(f"{_fit(a if t == 0 else '', aw)} {mark if t == 0 else ' '} {_fit(x, cw)} | {y}")
            return out

        lines_id = row("attribute", [f"left record {visible_short(key[0])}"],
                       [f"right record {visible_short(key[1])}"], " ")
        vw = width - 5 if narrow else cw
        wrapped = []
        for a, lv, rv in values:
            mark = "=" if lv.lower() == rv.lower() and lv else ("?" if not lv or not rv else "~")
            wrapped.append((a, lv, rv, mark, cell_lines(lv, vw), cell_lines(rv, vw)))

        # the tail: prediction, risk and the reasons
        tail: list[str] = []
        if "probability" in item:
            verdict = "MATCH" if item["prediction"] == 1 else "NON-MATCH"
            tail.append(f"Matcher says {verdict} with p(match) = {item['probability']:.3f}; "
                        f"risk that this label is wrong = {item['risk']:.3f}")
        reasons = item_reasons(item)
        if reasons:
            shown_r = reasons if full else short_reasons(reasons)
            more = "" if full or len(shown_r) == len(reasons) else f"; [r] shows all {len(reasons)}"
            tail.append(f"Why risk sampling picked it (strongest first{more}):")
            for r in shown_r:
                txt = visible(f"{r['text']} (suggests {r['direction']})")
                parts = wrap_to_width(txt, width - 4)
                if not full and len(parts) > 2:
                    parts = parts[:2]
                    parts[1] = _fit(parts[1], width - 8).rstrip() + " ..."
                tail += [("  - " if j == 0 else "    ") + w for j, w in enumerate(parts)]
        else:
            expl = [t for t in str(item.get("explanation", "")).splitlines() if t.strip()]
            if expl and "probability" in item:
                tail.append("Why risk sampling picked it (LearnRisk):")
            if expl and not full:
                expl_lines = []
                for t in expl:
                    expl_lines += wrap_to_width(visible(t), width - 6)
                if len(expl_lines) > 4:
                    expl_lines = expl_lines[:3] + ["[r] shows the whole explanation"]
                tail += ["  " + t for t in expl_lines]
            else:
                for t in expl:
                    tail += [("  " if j == 0 else "      ") + w
                             for j, w in enumerate(wrap_to_width(visible(t), width - 6))]
        legend = "(= same value, ~ different, ? missing on one side"
        legend += ")" if full else "; [f] shows long values whole)"
        def guard(lines: list[str]) -> list[str]:  # nothing wider than the terminal
            out: list[str] = []
            for line in lines:
                line = visible(line)
                out += [line] if display_width(line) <= width else wrap_to_width(line, width)
            return out

        head, tail, legend_lines = guard(head), guard(tail), guard([legend])
        prompt_lines = -(-display_width(_PROMPT) // width)
        # the blank line before, the rules around the records, the legend and the prompt
        fixed = 1 + len(head) + len(lines_id) + 2 + len(legend_lines) + len(tail) + prompt_lines
        body: list[str] = []
        if full:
            for a, _, _, mark, lw, rw in wrapped:
                body += row(visible(a), lw, rw, mark)
        else:
            budget = max(height - fixed, 1)
            least = 3 if narrow else 1  # lines an attribute takes at the least (narrow: name, L, R)
            n_fit = len(wrapped) if len(wrapped) * least <= budget else max(0, (budget - 1) // least)
            shown_rows = wrapped[:n_fit]
            if narrow:  # value lines of both sides, one line each at the least
                need = [len(lw) + len(rw) for *_, lw, rw in shown_rows]
                alloc = [2] * len(shown_rows)
            else:
                need = [max(len(lw), len(rw)) for *_, lw, rw in shown_rows]
                alloc = [1] * len(shown_rows)
            spare = budget - least * len(shown_rows)
            grew = True
            while spare > 0 and grew:  # water-filling: one more line to every row that needs it
                grew = False
                for i in range(len(shown_rows)):
                    if spare > 0 and alloc[i] < need[i]:
                        alloc[i] += 1
                        spare -= 1
                        grew = True
            for (a, lv, rv, mark, lw, rw), m in zip(shown_rows, alloc):
                if narrow:
                    kl = max(1, min(len(lw), m - min(len(rw), m // 2)))
                    kr = max(1, m - kl)
                    body += row(visible(a), cut(lw, kl, vw, lv), cut(rw, kr, vw, rv), mark)
                else:
                    body += row(visible(a), cut(lw, m, vw, lv), cut(rw, m, vw, rv), mark)
            if n_fit < len(wrapped):
                body.append(f"... {len(wrapped) - n_fit} more attribute(s): [f] shows them")
        return guard(head + lines_id + ["-" * width] + body + ["-" * width] + legend_lines + tail)

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

    # ------------------------------------------------------------------ the step API
    def next_question(self) -> Question | None:
        """The next pair to ask about, choosing (and journaling) a new batch when none is pending.

        The one question loop of skrisk: the console (:meth:`run`) and the Jupyter labeller
        (:class:`~skrisk.labelling.JupyterLabeller`) both ask what this returns and record the
        answer with :meth:`answer`, so a session moves freely between the two.

        Returns
        -------
        Question or None
            None when every candidate pair is answered (or asked and undecided: nothing is left).
        """
        while True:
            pending = self.state.pending()
            if pending:
                return self._question(pending[0])
            batch = self._next_batch()
            if batch is None:
                return None
            ev = self.journal.append("batch", **batch)
            self.state.apply(ev)
            for note in batch.get("notes", []):
                self._print(f"note: {note}")

    def _question(self, key: tuple[str, str]) -> Question:
        batch = self._batch_of(key)
        batch_keys = [(str(i["left_id"]), str(i["right_id"])) for i in batch["items"]] if batch else [key]
        k = batch_keys.index(key) + 1 if key in batch_keys else 1
        kind = batch["phase"] if batch else "risk"
        shown_no = self._round_number(batch) if batch else "?"
        title = (
            f"Starting pairs (round {shown_no})" if batch and kind == "initial"
            else f"Audit after round {shown_no} (for the estimate)" if batch and kind == "audit"
            else f"Risk sampling round {shown_no}"
        )
        reask = key in self.state.reask
        if reask:
            title += " [asked again after undo]"
        return Question(
            left_id=key[0], right_id=key[1], number=k, total=len(batch_keys), phase=kind, title=title,
            round=batch["round"] if batch else None, item=dict(self.state.items.get(key, {})), reask=reask,
        )

    def _round_number(self, batch: dict) -> int:
        """The round number shown (1-based): training batches count 1, 2, 3, ...; an audit batch
        shows the number of the round it audits. The journal's ``round`` (the batch's position,
        audits included, which seeds the round) is not changed, so old sessions replay as before."""
        n = 0
        for b in self.state.batches:
            if b.get("phase") != "audit":
                n += 1
            if b is batch:
                return max(n, 1)
        return n + (batch.get("phase") != "audit")

    def answer(self, key: tuple[str, str], answer: str) -> dict:
        """Record the answer to a pair that is waiting for one (see :meth:`next_question`).

        Parameters
        ----------
        key : (left_id, right_id)
            The pair; it must be pending (asked and unanswered), else :class:`DataError`.
        answer : {"yes", "no", "unsure"}

        Returns
        -------
        dict
            The journal event (already on disk).
        """
        key = (str(key[0]), str(key[1]))
        if answer not in ANSWERS:
            raise DataError(f"Unknown answer {answer!r}: give one of {', '.join(ANSWERS)}.")
        if key not in self.state.pending():
            raise DataError(
                f"Pair ({visible_short(key[0])}, {visible_short(key[1])}) is not waiting for an answer (answered already, or never asked): answer "
                "the pair next_question() returns."
            )
        batch = self._batch_of(key)
        ev = self.journal.append(
            "answer", left_id=key[0], right_id=key[1], answer=answer, round=batch["round"] if batch else None,
        )
        self.state.apply(ev)
        return ev

    def undo(self) -> dict | None:
        """Undo the last answer in force (journaled); the pair is asked again next.

        Returns
        -------
        dict or None
            The answer event that was undone, or None when there is nothing to undo.
        """
        last = self.state.last_answer()
        if last is None:
            return None
        ev = self.journal.append(
            "undo", target=int(last["seq"]), left_id=last["left_id"], right_id=last["right_id"]
        )
        self.state.apply(ev)
        return last

    def status_text(self) -> list[str]:
        """The estimate, the chosen threshold and the stopping advice of the latest risk round, as
        printed after its training (empty before the first risk round)."""
        for b in reversed(self.state.batches):
            st = b.get("status")
            if b.get("phase") == "risk" and isinstance(st, dict):
                lines = st.get("lines")
                return [str(t) for t in lines] if isinstance(lines, list) else []
        return []

    def done_text(self) -> list[str]:
        """The lines said when every candidate pair is answered."""
        out = [f"Every candidate pair is answered ({len(self.state.answers)} answers)."]
        if len(set(self.labels().values())) < 2:
            out.append("The labels hold a single class: no matcher can be trained from them.")
        return out

    def _reasons_text(self, q: Question) -> list[str]:
        """Every reason of a question and the full explanation (the console's ``r``)."""
        width, _ = self._screen()
        item = q.item
        lines = []
        reasons = item_reasons(item)
        if reasons:
            lines.append(f"All {len(reasons)} reason(s), strongest first (+ raises the risk, - supports the matcher):")
            for r in reasons:
                sign = "+" if r["weight"] > 0 else "-"
                txt = f"{sign} {r['text']} (suggests {r['direction']})"
                if r["rule"]:
                    txt += f"  [rule: {r['rule']}]"
                lines += [("  " if j == 0 else "    ") + w for j, w in enumerate(wrap_to_width(visible(txt), width - 4))]
        expl = str(item.get("explanation", "")).strip()
        if expl and not reasons:
            for t in expl.splitlines():
                lines += [("  " if j == 0 else "      ") + w for j, w in enumerate(wrap_to_width(visible(t), width - 6))]
        if not lines:
            lines.append("No reasons for this pair: it was picked before the matcher was trained.")
        return lines

    # ------------------------------------------------------------------ the console loop
    def run(self) -> str:
        """Ask questions until the user quits, stdin ends or every candidate is answered.

        Returns
        -------
        str
            ``"quit"``, ``"eof"`` or ``"done"``.
        ``KeyboardInterrupt`` propagates (everything answered is already on disk).
        """
        while True:
            q = self.next_question()
            if q is None:
                self._print(*self.done_text())
                return "done"
            position = (q.number, q.total, q.title)
            self._print("", *self._render(q.key, position))
            try:
                while True:
                    ans = self._read()
                    if ans == "reasons":
                        self._print("", *self._reasons_text(q))
                    elif ans == "full":
                        self._print("", *self._render(q.key, position, full=True))
                    else:
                        break
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
                last = self.undo()
                if last is None:
                    self._print("Nothing to undo.")
                else:
                    self._print(undone_text(last))
                continue
            self.answer(q.key, ans)

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
        """Close the journal and release the session folder's lock."""
        try:
            self.journal.close()
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None


def _check_no_shrink(session: LabellingSession, path: Path) -> Path | None:
    """Refuse an export that would drop answers of the ``labels.csv`` already there.

    Every answered pair in the existing file must still be known to the journal (answered, or
    answered and undone): otherwise the journal lost answers since that export. With
    ``session.force`` the old file is kept as a backup instead, whose path is returned.
    """
    if not path.exists():
        return None
    known = {(str(e["left_id"]), str(e["right_id"])) for e in session.journal.events if e["event"] == "answer"}
    known |= set(session.given)
    problem = ""
    try:
        old = read_csv_export(path)
        if not {"left_id", "right_id", "answer"} <= set(old.columns):
            problem = "it lacks the left_id, right_id and answer columns skrisk writes"
        else:
            old = old[old["answer"] != "given"]
            keys = set(zip(old["left_id"], old["right_id"]))
            lost = keys - known
            if lost:
                problem = (
                    f"it holds {len(lost)} answer(s) that {session.journal.path} no longer has (e.g. pair "
                    f"{sorted(lost)[0]}; {len(keys)} answer(s) in the file, {len(session.state.answers)} "
                    "in the journal): the journal was emptied, cut or replaced"
                )
    except (OSError, ValueError) as exc:
        problem = f"it cannot be read as a labels file ({exc})"
    if not problem:
        return None
    if not session.force:
        raise DataError(
            f"Not overwriting {path}: {problem}. Restore journal.jsonl from a backup and resume, or pass "
            "--force to export anyway (the old labels.csv is then kept as a backup)."
        )
    stamp = pd.Timestamp.now(tz="UTC").strftime("%Y%m%dT%H%M%S")
    backup = path.with_name(f"labels.before-{stamp}.csv")
    try:
        os.replace(path, backup)
    except OSError as exc:
        raise _write_error(backup, exc) from exc
    return backup


def export_session(session: LabellingSession) -> tuple[Path, Path]:
    """Export a session's labels and predicted matches as CSV files in its folder.

    ``labels.csv``: one row per answer in force (and per pre-labelled candidate): ``left_id``,
    ``right_id``, ``label`` (1, 0, empty for unsure), ``answer`` (yes/no/unsure/given),
    ``answered_at``, ``purpose`` (``training``, ``audit`` or ``given``), then
    ``left_<attr>``/``right_<attr>`` values.

    ``predicted_matches.csv``: every candidate that is a match, by an answer (``source`` =
    ``labelled``, audit answers included) or by the matcher trained on all training labels
    (``source`` = ``predicted``, ``probability`` above the threshold chosen from the audit answers
    for the session's target, by default F1 with the no-harm rule of
    :func:`skrisk.quality.choose_threshold`: 0.5 unless the audit shows another is better; 0.5 while
    there are too few), sorted by probability; pairs
    answered "no" are never listed.

    Both files are written by :func:`skrisk.utils.write_csv_export`: every text cell is
    neutralised against spreadsheet formula injection (a leading ``'`` when the first visible
    character, after any whitespace or control characters, is ``=``, ``+``, ``-`` or ``@``, or when
    the text starts with a control character or ``'``), and a CR or LF inside a cell is quoted;
    :func:`skrisk.utils.read_csv_export` reads the exact values back. An export never silently shrinks: when the ``labels.csv`` already there holds
    answers the journal no longer has, :class:`DataError` is raised (with ``session.force`` the old
    file is kept as ``labels.before-<time>.csv``).
    """
    ds, st = session.dataset, session.state
    audit = audit_keys(session)
    rows = []
    for k, v in session.given.items():
        if k not in st.answers:
            rows.append({"left_id": k[0], "right_id": k[1], "label": v, "answer": "given", "answered_at": "",
                         "purpose": "given"})
    for ev in st.answered_events():
        lab = {"yes": 1, "no": 0}.get(ev["answer"])
        key = (str(ev["left_id"]), str(ev["right_id"]))
        rows.append({"left_id": ev["left_id"], "right_id": ev["right_id"], "label": lab,
                     "answer": ev["answer"], "answered_at": ev.get("t", ""),
                     "purpose": "audit" if key in audit else "training"})
    labels_df = pd.DataFrame(rows, columns=["left_id", "right_id", "label", "answer", "answered_at", "purpose"])
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
        from .._rows import take_rows

        F = session.matcher_input()
        known = np.flatnonzero(lab_arr >= 0)
        matcher = session.new_matcher().fit(take_rows(F, known), lab_arr[known])
        proba = matcher.predict_proba(F)[:, 1]
        threshold, note = export_threshold(session, proba)
        note = f" ({note})"
    else:
        threshold = MATCH_THRESHOLD
        note = " (only labelled matches: the labels hold one class, no matcher was trained)"
    answers = {**session.given, **st.labels()}  # training and audit answers alike
    ans_arr = np.array([answers.get(k, -1) for k in keys])
    source = np.where(ans_arr == 1, "labelled", "predicted")
    is_match = (ans_arr == 1) | ((ans_arr == -1) & (match_labels(proba, threshold) == 1))
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
    backup = _check_no_shrink(session, out_labels)
    write_csv_export(out_labels, labels_df, on_error=_write_error)
    write_csv_export(out_pred, pred, on_error=_write_error)
    manifest = session._manifest
    if manifest:  # the export's journal position: a journal that later shrinks is refused
        manifest["exported"] = {"last_seq": session.journal.next_seq - 1, "labels": int(len(labels_df))}
        atomic_write_text(session.folder / MANIFEST, json.dumps(manifest, indent=2) + "\n", on_error=_write_error)
    if backup is not None:
        session._print(f"The previous {LABELS_CSV} is kept as {backup}.")
    session._print(
        f"Exported {len(labels_df)} label(s) to {out_labels} and {len(pred)} match(es) to {out_pred}{note}."
    )
    return out_labels, out_pred
