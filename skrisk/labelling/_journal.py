"""Durable storage of a labelling session: an append-only journal and an atomic manifest.

A session folder holds

* ``session.json`` -- the manifest: inputs (paths, sizes, SHA-256), parameters and seed. It is
  written atomically (temporary file in the same folder, ``fsync``, ``os.replace``, ``fsync`` of
  the folder), so it is always either the old or the new version, never a torn one.
* ``journal.jsonl`` -- one JSON object per line, appended through an unbuffered descriptor and
  ``fsync``-ed before the next question is asked; an append that fails (full disk) is cut off
  again, so it leaves no trace. Events are ``batch`` (the pairs chosen for questioning, with what the
  labeller is shown), ``answer`` (yes / no / unsure for one pair) and ``undo`` (reverts the last
  answer still in force). Replaying the journal (:func:`replay`) gives the current labels.
* ``candidates.csv`` -- the candidate pairs, fixed at the start (atomic write), so a resumed
  session asks about exactly the same pairs.

A process killed between two answers therefore loses nothing; a process killed *while* appending
leaves at most a torn last line, which :class:`Journal` cuts off when it reopens the file. Every
event carries a sequence number; replaying an event whose number was already seen is a no-op, so
no answer can be counted twice.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

from .._fileio import LinkError, append_durably, atomic_write_bytes, open_append, read_jsonl
from ..exceptions import DataError, SkriskError

__all__ = [
    "ANSWERS",
    "Journal",
    "SessionState",
    "SessionWriteError",
    "read_events",
    "repair_journal",
    "replay",
]

#: Answers a labeller can give, as stored in the journal.
ANSWERS = ("yes", "no", "unsure")
#: The kinds of journal event, and the phases of a batch.
EVENTS = ("batch", "answer", "undo")
PHASES = ("initial", "risk", "audit")

PairKey = tuple[str, str]


class SessionWriteError(SkriskError, OSError):
    """Writing to the session folder failed; the message names the file and the fix."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _write_error(path: Path, exc: OSError) -> SessionWriteError:
    return SessionWriteError(
        f"Cannot write {path}: {exc.strerror or exc}. Make the folder {path.parent} writable (and "
        "check the disk is not full), or start the session in another folder with --session. "
        "Nothing already saved was changed."
    )


def _check_event(ev: Any) -> None:
    """Raise ``ValueError`` unless ``ev`` is a well-formed journal event."""
    if not isinstance(ev, dict) or "event" not in ev or "seq" not in ev:
        raise ValueError("not an event object")
    if isinstance(ev["seq"], bool) or not isinstance(ev["seq"], int) or ev["seq"] < 0:
        raise ValueError(f"its seq {ev['seq']!r} is not a non-negative integer")
    kind = ev["event"]
    if kind == "answer":
        for key in ("left_id", "right_id"):
            if not isinstance(ev.get(key), str):
                raise ValueError(f"its {key} {ev.get(key)!r} is not a text id")
        if ev.get("answer") not in ANSWERS:
            raise ValueError(f"its answer {ev.get('answer')!r} is not one of {', '.join(ANSWERS)}")
    elif kind == "undo":
        if isinstance(ev.get("target"), bool) or not isinstance(ev.get("target"), int):
            raise ValueError(f"its target {ev.get('target')!r} is not a sequence number")
    elif kind == "batch":
        _check_batch(ev)
    else:
        raise ValueError(f"its event kind {kind!r} is not one of {', '.join(EVENTS)} (a line of a newer skrisk, "
                         "or edited)")


def _is_number(v: Any, low: float = -math.inf, high: float = math.inf) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) and low <= v <= high


def _check_batch(ev: dict) -> None:
    """The fields of a ``batch`` event that skrisk writes, with their types and ranges (what a
    forged line can be told by without a signature: see SECURITY.md). The audit draws are checked
    where they are used, against the candidates (:mod:`skrisk.labelling._status`)."""
    if "phase" in ev and ev["phase"] not in PHASES:
        raise ValueError(f"its phase {ev['phase']!r} is not one of {', '.join(PHASES)}")
    for key in ("round", "n_labels"):
        if key in ev and (isinstance(ev[key], bool) or not isinstance(ev[key], int) or ev[key] < 0):
            raise ValueError(f"its {key} {ev[key]!r} is not a non-negative integer")
    items = ev.get("items")
    if not isinstance(items, list) or not all(
        isinstance(it, dict) and isinstance(it.get("left_id"), str) and isinstance(it.get("right_id"), str)
        for it in items
    ):
        raise ValueError("its items are not a list of pairs with text left_id and right_id")
    for it in items:
        pair = f"the item of pair ({it['left_id']!r}, {it['right_id']!r})"
        p = it.get("probability")
        if "probability" in it and not _is_number(p, 0.0, 1.0):
            raise ValueError(f"{pair}: probability {p!r} is not a number in [0, 1]")
        for key in ("risk", "similarity"):
            if key in it and not _is_number(it[key]):
                raise ValueError(f"{pair}: {key} {it[key]!r} is not a finite number")
        if "prediction" in it:
            d = it["prediction"]
            if isinstance(d, bool) or d not in (0, 1):
                raise ValueError(f"{pair}: prediction {d!r} is not 0 or 1")
            # the prediction is p > 0.5 of the unrounded probability; the stored one has 4 decimals
            if "probability" in it and d != int(p > 0.5) and abs(p - 0.5) > 1e-4:
                raise ValueError(f"{pair}: prediction {d!r} disagrees with its probability {p!r} (p > 0.5)")
        if "explanation" in it and not isinstance(it["explanation"], str):
            raise ValueError(f"{pair}: explanation {it['explanation']!r} is not a text")
        reasons = it.get("reasons", [])  # its entries are shown as text or skipped, never trusted
        if not isinstance(reasons, list):
            raise ValueError(f"{pair}: reasons {reasons!r} are not a list")
    if "status" in ev and not isinstance(ev["status"], dict):
        raise ValueError(f"its status {ev['status']!r} is not an object")


_FIX = ("correct or delete that line, or run the same skrisk label command with --repair-journal to move "
        "it to journal.rejected.jsonl (nothing is deleted)")


def _line_error(path: Any, line_no: int, text: str) -> DataError:
    err = DataError(f"{path}, line {line_no}, {text}")
    err.line = line_no  # type: ignore[attr-defined]
    return err


def _check_sequence(path: Any, lines: list[tuple[int, dict[str, Any]]], session: str | None) -> None:
    """Refuse lines that do not continue the journal they are in (see ``read_events``)."""
    state = SessionState()
    owner: str | None = None  # the session identity of the lines read so far
    last: tuple[int, int] | None = None  # (line, seq) of the last identified event
    for line_no, ev in lines:
        sid = ev.get("session")
        if sid is None:
            if owner is not None:
                raise _line_error(path, line_no, (
                    f"has no session identity but follows lines of session {owner}: it was added by hand or "
                    f"copied from an older journal. {_FIX[0].upper()}{_FIX[1:]}."))
        else:
            if not isinstance(sid, str) or (session is not None and sid != session):
                mine = f"this session is {session}" if session is not None else "the lines before differ"
                raise _line_error(path, line_no, (
                    f"was written by another session ({sid!r}; {mine}): it was copied from another session "
                    f"folder, and its answer may not be about these tables. {_FIX[0].upper()}{_FIX[1:]}."))
            if owner is not None and sid != owner:
                raise _line_error(path, line_no, f"belongs to session {sid!r}, the lines before to {owner!r}. "
                                                 f"{_FIX[0].upper()}{_FIX[1:]}.")
            owner = sid
            if last is not None and ev["seq"] <= last[1]:
                raise _line_error(path, line_no, (
                    f"claims sequence number {ev['seq']}, but line {last[0]} already has {last[1]}: the line "
                    f"was repeated, moved or inserted by hand. {_FIX[0].upper()}{_FIX[1:]}."))
            if ev["event"] == "answer":
                key = (ev["left_id"], ev["right_id"])
                if key in state.answers:
                    raise _line_error(path, line_no, (
                        f"answers pair {key} {ev['answer']!r}, but that pair is already answered "
                        f"{state.answers[key]!r} (event {state.answer_seq[key]}) and no undo came between: "
                        f"the line was added by hand. Undo the answer in the session instead, and "
                        f"{_FIX}."))
            last = (line_no, ev["seq"])
        try:
            state.apply(ev)
        except DataError as exc:
            raise _line_error(path, line_no, f"{exc}") from None


def read_events(
    path: str | os.PathLike, *, repair: bool = False, session: str | None = None
) -> list[dict[str, Any]]:
    """The events of a journal file, in order.

    Read by ``read_jsonl``: only a last line *without* its newline can be the
    trace of a process killed while appending: when it is not a valid event it is dropped (with
    ``repair=True``, moved to ``journal.jsonl.torn`` and cut off the file); a complete last event
    saved without its newline is kept. Any other bad line (not JSON, a missing or mistyped field,
    an unknown event kind, a batch item's number out of range, an unknown answer, two different
    events with one sequence number) -- the last complete line included -- means the file was edited or damaged: :class:`DataError` names the line and the
    fix, and nothing is cut (:func:`repair_journal` moves such lines out when the user asks).

    Events written since session identities exist carry the session's id (``"session"``). They
    must continue the journal they are in: each with a larger sequence number than the line
    before, the same session id (``session``, when given, the one of the manifest), after no
    line without one, and no answer to a pair whose answer is in force with no undo between --
    a line added by hand or copied from another session folder is a :class:`DataError` naming
    the line. Lines without an id (journals of older skrisk versions) are read as before.
    """
    lines = read_jsonl(path, repair=repair, what="journal", check=_check_event, on_error=_write_error, fix=_FIX)
    events: list[dict[str, Any]] = []
    by_seq: dict[int, tuple[int, dict[str, Any]]] = {}
    for line_no, ev in lines:
        first = by_seq.get(ev["seq"])
        if first is not None and first[1] != ev:
            raise _line_error(
                path, line_no,
                f"holds a different event with the sequence number {ev['seq']} of line {first[0]} (lines "
                f"{first[0]} and {line_no} hold two different events with the same sequence number): the "
                "journal was edited, or written by an older skrisk after a failed write. Keep the line with "
                "the answer you want and delete the other one (the answers on the other lines are kept).",
            )
        by_seq.setdefault(ev["seq"], (line_no, ev))
        events.append(ev)
    _check_sequence(path, lines, session)
    return events


def repair_journal(path: str | os.PathLike, *, session: str | None = None) -> list[tuple[int, str]]:
    """Move every line ``read_events`` refuses out of a journal, into ``journal.rejected.jsonl``.

    What ``skrisk label --repair-journal`` runs, once the user has read the error: lines are moved
    one at a time, the first refused one each time, until the journal reads cleanly. Each moved line is
    appended, unchanged, to ``journal.rejected.jsonl`` beside the journal before the journal is
    replaced (atomically) without it, so nothing is ever deleted.

    Returns
    -------
    list of (int, str)
        The line number (in the file as it was before the repair) and the reason of each moved line.
    """
    from .._fileio import append_durably, open_append

    path = Path(path)
    rejected = path.with_name("journal.rejected.jsonl")
    moved: list[tuple[int, str]] = []
    kept_numbers: list[int] | None = None
    for _ in range(100_000):
        try:
            read_events(path, repair=True, session=session)
            return moved
        except DataError as exc:
            line = getattr(exc, "line", None)
            if line is None:
                raise
            raw = path.read_bytes().split(b"\n")
            if kept_numbers is None:
                kept_numbers = list(range(1, len(raw) + 1))
            fd = open_append(rejected)
            try:
                append_durably(fd, raw[line - 1] + b"\n")
            finally:
                os.close(fd)
            moved.append((kept_numbers[line - 1], str(exc)))
            del raw[line - 1]
            del kept_numbers[line - 1]
            atomic_write_bytes(path, b"\n".join(raw), on_error=_write_error)
    raise DataError(f"{path}: too many damaged lines to repair; restore it from a backup.")  # pragma: no cover


class Journal:
    """Append-only JSON-lines event log; each :meth:`append` is written, fsynced, or undone.

    The file is written through an unbuffered ``O_APPEND`` descriptor: an append that fails
    (disk full, I/O error) is cut off again (the file is truncated back to its size before the
    append), so a failed event leaves no trace and can never resurface later under a reused
    sequence number.

    Parameters
    ----------
    path : path-like
        The journal file (created on first append; its folder must exist).
    session : str, optional
        The session's identity: every appended event carries it (``"session"``), and the lines
        read must continue this session's journal (see ``read_events``).

    Attributes
    ----------
    events : list of dict
        All events, the ones read at open time followed by the appended ones.
    """

    def __init__(self, path: str | os.PathLike, *, session: str | None = None) -> None:
        self.path = Path(path)
        self.session = session
        self.events = read_events(self.path, repair=True, session=session)
        self._fd: int | None = None
        self._broken: OSError | None = None

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def next_seq(self) -> int:
        return (max(int(e["seq"]) for e in self.events) + 1) if self.events else 0

    def open(self) -> "Journal":
        """Open the file for appending now (fails early on a read-only folder)."""
        if self._fd is None:
            try:
                self._fd = open_append(self.path)  # never through a link
            except LinkError:
                raise
            except OSError as exc:
                raise _write_error(self.path, exc) from exc
        return self

    def append(self, event: str, **fields: Any) -> dict[str, Any]:
        """Write one event durably and return it (with its ``seq`` and time ``t``).

        Raises
        ------
        SessionWriteError
            The write or the ``fsync`` failed; the journal is as it was before the call.
        """
        if self._broken is not None:  # a failed append could not be cut off: write nothing more
            raise _write_error(self.path, self._broken)
        self.open()
        fd = int(self._fd)  # type: ignore[arg-type]
        record = {"seq": self.next_seq, "t": _now(), "event": event, **fields}
        if self.session is not None:
            record["session"] = self.session
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        try:
            data = (text + "\n").encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (only from the Python API): written as \\ud800
            data = (json.dumps(record, separators=(",", ":")) + "\n").encode("ascii")
        try:
            append_durably(fd, data)
        except OSError as exc:
            if getattr(exc, "cut_failed", None) is not None:  # the failed append is still there
                self._broken = exc.cut_failed
            raise _write_error(self.path, exc) from exc
        self.events.append(record)
        return record

    def close(self) -> None:
        """Close the file (everything appended is already on disk)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError as exc:
                raise _write_error(self.path, exc) from exc


@dataclass
class SessionState:
    """What a journal's events add up to.

    Attributes
    ----------
    answers : dict of (left_id, right_id) to str
        The answer in force for every answered pair ("yes", "no" or "unsure").
    answer_seq : dict of (left_id, right_id) to int
        Sequence number of the event of the answer in force.
    stack : list of int
        Sequence numbers of the answers in force, oldest first (undo pops the last one).
    reask : list of (left_id, right_id)
        Pairs whose answer was undone and that were not answered since (asked again, the most
        recently undone first).
    batches : list of dict
        The ``batch`` events, in order.
    items : dict of (left_id, right_id) to dict
        The latest shown information (prediction, risk, explanation, ...) of every batched pair.
    seen_seq : set of int
        Sequence numbers replayed (a repeated one is ignored).
    """

    answers: dict[PairKey, str] = field(default_factory=dict)
    answer_seq: dict[PairKey, int] = field(default_factory=dict)
    stack: list[int] = field(default_factory=list)
    reask: list[PairKey] = field(default_factory=list)
    batches: list[dict[str, Any]] = field(default_factory=list)
    items: dict[PairKey, dict[str, Any]] = field(default_factory=dict)
    seen_seq: set[int] = field(default_factory=set)
    _by_seq: dict[int, dict[str, Any]] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ replay
    def apply(self, event: dict[str, Any]) -> None:
        """Apply one event (idempotent for an already applied ``seq``)."""
        seq = int(event["seq"])
        if seq in self.seen_seq:
            return
        kind = event["event"]
        if kind == "batch":
            self.batches.append(event)
            for item in event.get("items", []):
                self.items[(str(item["left_id"]), str(item["right_id"]))] = item
        elif kind == "answer":
            key = (str(event["left_id"]), str(event["right_id"]))
            if event.get("answer") not in ANSWERS:
                raise DataError(f"Journal event {seq} has an unknown answer {event.get('answer')!r}.")
            old = self.answer_seq.get(key)
            if old is not None and old in self.stack:  # re-answering replaces the old answer
                self.stack.remove(old)
            self.answers[key] = event["answer"]
            self.answer_seq[key] = seq
            self.stack.append(seq)
            self.reask = [k for k in self.reask if k != key]
            self._by_seq[seq] = event
        elif kind == "undo":
            target = int(event["target"])
            if not self.stack or self.stack[-1] != target:
                raise DataError(
                    f"Journal event {seq} undoes answer {target}, which is not the last answer in "
                    "force: the journal was edited or damaged. Delete the lines from that one on."
                )
            self.stack.pop()
            ans = self._by_seq[target]
            key = (str(ans["left_id"]), str(ans["right_id"]))
            del self.answers[key]
            del self.answer_seq[key]
            self.reask.append(key)
        else:
            raise DataError(f"Journal event {seq} is of an unknown kind {kind!r} (not one of {', '.join(EVENTS)}).")
        self.seen_seq.add(seq)

    # ------------------------------------------------------------------ views
    def last_answer(self) -> dict[str, Any] | None:
        """The answer event that :meth:`undo` would revert, or None."""
        return self._by_seq[self.stack[-1]] if self.stack else None

    def pending(self) -> list[PairKey]:
        """Pairs to ask next: undone ones (latest first), then the unanswered ones of the last batch."""
        out = list(reversed(self.reask))
        if self.batches:
            for item in self.batches[-1].get("items", []):
                key = (str(item["left_id"]), str(item["right_id"]))
                if key not in self.answers and key not in out:
                    out.append(key)
        return out

    def counts(self) -> dict[str, int]:
        """Number of answers in force per answer kind."""
        out = {a: 0 for a in ANSWERS}
        for a in self.answers.values():
            out[a] += 1
        return out

    def labels(self) -> dict[PairKey, int]:
        """1 / 0 for the pairs answered yes / no (unsure pairs are left out)."""
        return {k: int(a == "yes") for k, a in self.answers.items() if a != "unsure"}

    def answered_events(self) -> Iterator[dict[str, Any]]:
        """The answer events in force, oldest first."""
        for seq in self.stack:
            yield self._by_seq[seq]


def replay(events: Iterable[dict[str, Any]]) -> SessionState:
    """Replay journal events into a :class:`SessionState`.

    Examples
    --------
    >>> ev = [{"seq": 0, "event": "answer", "left_id": "a", "right_id": "b", "answer": "yes"},
    ...       {"seq": 1, "event": "answer", "left_id": "c", "right_id": "d", "answer": "no"},
    ...       {"seq": 2, "event": "undo", "target": 1},
    ...       {"seq": 2, "event": "undo", "target": 1}]          # a repeated line is ignored
    >>> st = replay(ev)
    >>> st.labels(), st.pending()
    ({('a', 'b'): 1}, [('c', 'd')])
    """
    state = SessionState()
    for ev in events:
        state.apply(ev)
    return state
