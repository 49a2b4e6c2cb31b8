"""The store of a labelling session: its folder, locked to one process, the manifest, the journal
and the answers replayed from it, the exports and the model of the last round.

:meth:`SessionStore.open` starts a session folder or resumes the one there (checking the tables
by SHA-256, the manifest and the journal); the round (:mod:`skrisk.labelling._round`) and the
views read and write the session only through the store, so the console and the notebook
labeller share it. An export never silently drops answers of the ``labels.csv`` already there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pandas as pd

from .. import __version__
from .._fileio import FolderLock, atomic_write_text, check_not_link, read_csv_export, write_csv_export
from .._safetext import visible
from ..data._rules_json import blocking_rules_from_json, blocking_rules_to_json
from ..exceptions import DataError, SkriskError
from ._config import SessionConfig
from ._journal import Journal, SessionState, _write_error, repair_journal, replay
from ._manifest import (
    _FORMAT,
    _SESSION_FILES,
    CANDIDATES,
    JOURNAL,
    LABELS_CSV,
    MANIFEST,
    PREDICTED_CSV,
    _check_encoding,
    _file_info,
    _new_session_id,
    _read_manifest,
    _sha256,
    _table_word,
)

__all__ = ["SessionStore"]


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




def _reads_back_as_is(dataset: Any) -> bool:
    """Whether ``candidates.csv`` written from ``dataset`` reads back (as a resumed session reads it)
    to the same pairs in the same order, so that a new session need not read it back.

    The ids round-trip exactly (``write_csv_export``) and a dedup pair is
    already stored once, ``left_id < right_id``; the file has no ``split`` column, so each pair
    reads back in split ``"train"`` (labelled) or ``"pool"``, labelled pairs first. Pairs given
    with other splits (a ``split`` column in ``--pairs``) are read back from the file.
    """
    has = dataset.pairs["label"].to_numpy() >= 0
    split = dataset.pairs["split"].to_numpy(dtype=object)
    return bool((split == np.where(has, "train", "pool")).all() and not (has[1:] & ~has[:-1]).any())

class SessionStore:
    """A session folder, open and locked: its manifest, its journal and the answers replayed from it.

    Parameters
    ----------
    folder : Path
    manifest : dict
        The manifest as read (or as written for a new session); exports record their journal
        position in it.
    journal : Journal
        The open journal.
    lock : FolderLock, optional
        The folder's lock, released by :meth:`close`.
    force : bool, default=False
        Go on although the journal holds fewer answers than the last export (that export is then
        kept as a backup at the next export).
    """

    def __init__(self, folder: Path, manifest: dict, journal: Journal, *, lock: FolderLock | None = None,
                 force: bool = False) -> None:
        self.folder = folder
        self.manifest = manifest
        self.journal = journal
        self.force = force
        self._lock = lock
        try:
            self.state: SessionState = replay(journal.events)
        except DataError as exc:
            raise DataError(f"{journal.path}: {exc}") from exc

    @property
    def locked(self) -> bool:
        """Whether this store holds the folder's lock."""
        return self._lock is not None

    def append(self, event: str, **fields: Any) -> dict:
        """Journal an event (on disk before this returns) and apply it to :attr:`state`."""
        ev = self.journal.append(event, **fields)
        self.state.apply(ev)
        return ev

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, folder: str | os.PathLike, *, out: TextIO, **options: Any) -> tuple["SessionStore", Any, SessionConfig]:
        """Lock ``folder`` and start or resume the session there.

        ``options`` are the keyword arguments of :meth:`skrisk.labelling.LabellingSession.open`
        but ``input_fn`` (``left``, ``right``, ``table``, ``pairs``, ``id_column``, ``encoding``,
        ``config``, ``overrides``, ``force``, ``blocking``, ``repair``), which documents them;
        messages go to ``out``.

        Returns
        -------
        store : SessionStore
        dataset : PairDataset
            The tables and the candidate pairs, in the order of ``candidates.csv``.
        config : SessionConfig
            The session's parameters (a resumed session's stored ones, with ``overrides``).
        """
        config, encoding = options.get("config"), options.get("encoding")
        folder = Path(folder).expanduser()
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
            opened = cls._resume if (folder / MANIFEST).exists() or (folder / MANIFEST).is_symlink() else cls._start
            return opened(folder, lock, out=out, **options)
        except BaseException:
            lock.release()
            if created:
                _remove_if_only_lock(folder)
            raise

    @classmethod
    def _resume(
        cls, folder: Path, lock: FolderLock, *, out: TextIO, left: Any = None, right: Any = None, table: Any = None,
        pairs: Any = None, overrides: dict | None = None, force: bool = False, repair: bool = False, **fixed: Any,
    ) -> tuple["SessionStore", Any, SessionConfig]:
        """Resume the session stored in ``folder``; ``fixed`` (``id_column``, ``encoding``, ``config``,
        ``blocking``) are fixed when a session starts: the stored ones are used."""
        from ..datasets import load_csv_tables

        manifest_path = folder / MANIFEST
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
        store = cls(folder, manifest, journal, lock=lock, force=force)
        n = len(store.state.answers)
        print(visible(f"Resuming the session in {folder}: {n} answer(s) so far."), file=out, flush=True)
        return store, dataset, cfg

    @classmethod
    def _start(
        cls, folder: Path, lock: FolderLock, *, out: TextIO, left: Any = None, right: Any = None, table: Any = None,
        pairs: Any = None, id_column: str | None = None, encoding: str | None = None,
        config: SessionConfig | None = None, blocking: Any = None, force: bool = False, types: Any = None,
        **unused: Any,
    ) -> tuple["SessionStore", Any, SessionConfig]:
        """Start a session in ``folder`` (``unused``: ``overrides`` and ``repair``, which only a
        resumed session reads)."""
        from ..datasets import load_csv_tables

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
        from ..data import read_table
        from ..data._typed_blocking import describe_types, person_rules, table_types

        column_types = None
        if Path(left).is_file() and (right is None or Path(right).is_file()):  # else load_csv_tables says why
            enc_l, _, enc_r = encoding.partition(",")
            left_t = read_table(left, id_column=id_column, encoding=enc_l)
            right_t = None if dedup else read_table(right, id_column=id_column, encoding=enc_r or enc_l)
            column_types = table_types(left_t, right_t, "auto" if types is None else types, where="--types")
            del left_t, right_t
            print(visible(f"Column types (override with --types COL=TYPE,...): {describe_types(column_types)}."),
                  file=out, flush=True)
        match_rules = None
        if blocking is None and pairs is None:
            # a person table: the model matches with typed passes; the session's pool adds the
            # tokens rule's nearest records, so that the questions meet non-matches too
            match_rules = None if column_types is None else person_rules(column_types)
            if match_rules is not None:
                blocking = match_rules + [("tokens", None, {})]
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
            "types": column_types,
            "match_blocking": blocking_rules_to_json(match_rules),
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
        return cls(folder, manifest, journal, lock=lock, force=force), dataset, cfg

    # ------------------------------------------------------------------ writing
    def save_model(self, dataset: Any, features: Any, matcher: Any, risk_model: Any,
                   threshold: float | None = None) -> Path:
        """Save the model of this round (``MODEL_FILE``, atomically) for ``skrisk match``."""
        from ..matching._model import MODEL_FILE
        from ..matching import MatchModel
        from ..matchers._base import MATCH_THRESHOLD

        manifest = self.manifest or {}
        # the manifest keeps the JSON form; a person table's session blocked its pool more widely
        # than the model matches (match_blocking)
        rules = blocking_rules_from_json(manifest.get("match_blocking") or manifest.get("blocking"))
        model = MatchModel(
            attributes=list(dataset.attributes), features=features, matcher=matcher,
            risk_model=risk_model,
            threshold=float(threshold if threshold is not None else manifest.get("threshold", MATCH_THRESHOLD)),
            task=dataset.task, blocking=rules,
            id_column=manifest.get("id_column", "id"),
        )
        path = self.folder / MODEL_FILE
        try:
            return model.save(path)
        except OSError as exc:
            raise _write_error(path, exc) from exc

    def check_no_shrink(self, path: Path, given: dict) -> Path | None:
        """Refuse an export that would drop answers of the ``labels.csv`` already there.

        Every answered pair in the existing file must still be known to the journal (answered, or
        answered and undone): otherwise the journal lost answers since that export. With
        :attr:`force` the old file is kept as a backup instead, whose path is returned.
        """
        if not path.exists():
            return None
        known = {(str(e["left_id"]), str(e["right_id"])) for e in self.journal.events if e["event"] == "answer"}
        known |= set(given)
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
                        f"it holds {len(lost)} answer(s) that {self.journal.path} no longer has (e.g. pair "
                        f"{sorted(lost)[0]}; {len(keys)} answer(s) in the file, {len(self.state.answers)} "
                        "in the journal): the journal was emptied, cut or replaced"
                    )
        except (OSError, ValueError) as exc:
            problem = f"it cannot be read as a labels file ({exc})"
        if not problem:
            return None
        if not self.force:
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

    def write_exports(self, labels_df: pd.DataFrame, pred: pd.DataFrame, given: dict) -> tuple[Path, Path, Path | None]:
        """Write ``labels.csv`` and ``predicted_matches.csv`` (after :meth:`check_no_shrink`) and record the
        export's journal position in the manifest; returns both paths and the old labels' backup (or None)."""
        out_labels = self.folder / LABELS_CSV
        out_pred = self.folder / PREDICTED_CSV
        backup = self.check_no_shrink(out_labels, given)
        write_csv_export(out_labels, labels_df, on_error=_write_error)
        write_csv_export(out_pred, pred, on_error=_write_error)
        manifest = self.manifest
        if manifest:  # the export's journal position: a journal that later shrinks is refused
            manifest["exported"] = {"last_seq": self.journal.next_seq - 1, "labels": int(len(labels_df))}
            atomic_write_text(self.folder / MANIFEST, json.dumps(manifest, indent=2) + "\n", on_error=_write_error)
        return out_labels, out_pred, backup

    def close(self) -> None:
        """Close the journal and release the session folder's lock."""
        try:
            self.journal.close()
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None
