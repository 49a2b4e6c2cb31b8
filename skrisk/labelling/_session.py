"""An interactive labelling session over two CSV tables, driven by risk sampling.

The session blocks the tables (or takes given candidate pairs), asks about a few pairs of high and
low average similarity until both matches and non-matches are known (when the first of them hold no
match, the pairs most similar on one similarity feature each, the features in turn), then trains a
:class:`~skrisk.matchers.FeatureMatcher` and asks about the pairs risk sampling picks, showing the
two records side by side, the matcher's prediction, the risk and LearnRisk's explanation.

:class:`LabellingSession` joins three parts: the store (:mod:`skrisk.labelling._store`: the
folder, locked to one process, its manifest, journal and exports), the round
(:mod:`skrisk.labelling._round` and :mod:`skrisk.labelling._status`: training, risk sampling,
audits, estimates and stopping advice) and the views (:mod:`skrisk.labelling._console` and the
notebook labeller, :mod:`skrisk.labelling._widget`), which ask through its step API
(:meth:`~LabellingSession.next_question`, :meth:`~LabellingSession.answer`,
:meth:`~LabellingSession.undo`). Everything taken from the tables is shown through
:func:`~skrisk._safetext.visible` (no cell can drive the terminal) and exported through
:func:`~skrisk._safetext.spreadsheet_safe_frame` (no cell runs as a spreadsheet formula); an
export never silently drops answers of the ``labels.csv`` already there.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable, TextIO

import numpy as np

from .._safetext import visible, visible_short
from ..exceptions import DataError
from ._config import SessionConfig
from ._console import read_answer, reasons_lines, render_pair, screen_size, undone_text
from ._journal import ANSWERS, Journal, SessionState
from ._round import Question, SessionRound
from ._store import SessionStore

__all__ = ["LabellingSession", "export_session"]


class LabellingSession:
    """One labelling session stored in a folder; :meth:`open` starts or resumes it.

    Parameters
    ----------
    store : SessionStore
        The open session folder (its manifest, journal and lock), as :meth:`open` opens it.
    dataset : PairDataset
        The tables and the candidate pairs (labels of pre-labelled candidates are used for
        training and never asked).
    config : SessionConfig
    input_fn : callable, optional
        Reads one answer (given the prompt); ``EOFError`` ends the session cleanly. Default: the
        builtin :func:`input` (looked up at each call).
    out : text stream, default=sys.stdout

    Attributes
    ----------
    store : SessionStore
        The folder, the manifest, the journal and the answers replayed from it.
    round : SessionRound
        The candidates, the labels in force and the choice of the next batch.
    """

    def __init__(
        self,
        store: SessionStore,
        dataset: Any,
        config: SessionConfig,
        *,
        input_fn: Callable[[str], str] | None = None,
        out: TextIO | None = None,
    ) -> None:
        self.store = store
        self.dataset = dataset
        self.config = config
        self.input_fn = input_fn if input_fn is not None else (lambda prompt: input(prompt))
        self.out = out if out is not None else sys.stdout
        try:
            self.echo = input_fn is None and not sys.stdin.isatty()
        except (AttributeError, ValueError):
            self.echo = False
        self.round = SessionRound(dataset, config, store, self.say)

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
        types: dict | None = None,
    ) -> "LabellingSession":
        """Start a session in ``folder`` or resume the one stored there.

        The folder is locked (an OS file lock) until :meth:`close`: a second process on the same
        folder gets ``skrisk._fileio.FolderInUseError`` naming the holder's pid.

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
        without it such a line is an error naming it, and nothing is changed. ``types`` (a mapping of
        column to column type, see :class:`~skrisk.data.SimilarityFeatures`) overrides the types a new
        session infers from the tables; the types decide how values are standardised and compared,
        and on a person table (a name beside a date, postcode, phone or e-mail) the default blocking
        (``typed`` passes of exact standardised keys instead of ``tokens``).

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
        out = out if out is not None else sys.stdout
        store, dataset, cfg = SessionStore.open(
            folder, out=out, left=left, right=right, table=table, pairs=pairs, id_column=id_column,
            encoding=encoding, config=config, overrides=overrides, force=force, blocking=blocking, repair=repair,
            types=types,
        )
        try:
            return cls(store, dataset, cfg, input_fn=input_fn, out=out)
        except BaseException:
            store.close()
            raise

    # ------------------------------------------------------------------ what the parts know
    @property
    def folder(self) -> Path:
        """The session folder."""
        return self.store.folder

    @property
    def journal(self) -> Journal:
        """The session's answer journal."""
        return self.store.journal

    @property
    def state(self) -> SessionState:
        """The answers and batches replayed from the journal."""
        return self.store.state

    @property
    def force(self) -> bool:
        """Whether the session goes on although its journal holds fewer answers than the last export."""
        return self.store.force

    @property
    def keys(self) -> list[tuple[str, str]]:
        """Every candidate pair, in the order of ``candidates.csv``."""
        return self.round.keys

    @property
    def position(self) -> dict[tuple[str, str], int]:
        """A candidate pair's index in :attr:`keys`."""
        return self.round.position

    @property
    def given(self) -> dict[tuple[str, str], int]:
        """The labels of pre-labelled candidates."""
        return self.round.given

    @property
    def features(self) -> np.ndarray:
        """The similarity features of every candidate (computed once, on first use)."""
        return self.round.features

    def matcher_input(self) -> Any:
        """What the session's matcher reads for every candidate (see ``SessionRound.matcher_input``)."""
        return self.round.matcher_input()

    def new_matcher(self) -> Any:
        """The matcher of a round (see ``SessionRound.new_matcher``)."""
        return self.round.new_matcher()

    def labels(self) -> dict[tuple[str, str], int]:
        """Training labels in force (see ``SessionRound.labels``)."""
        return self.round.labels()

    def record_values(self, key: tuple[str, str]) -> list[tuple[str, str, str]]:
        """``(attribute, left value, right value)`` of a pair (see ``SessionRound.record_values``)."""
        return self.round.record_values(key)

    def counts_text(self) -> str:
        """The answers so far, in words."""
        return self.round.counts_text()

    def say(self, *lines: str) -> None:
        """Print lines where the session prints (``out``), every character a terminal would interpret
        shown as an escape."""
        for line in lines:
            print(visible(line), file=self.out)
        self.out.flush()

    def redirect(self, out: TextIO | None) -> TextIO:
        """Print to ``out`` from now on (``None``: ``sys.stdout``); returns the stream printed to before."""
        old, self.out = self.out, out if out is not None else sys.stdout
        return old

    def render(self, key: tuple[str, str], position: tuple[int, int, str], *, full: bool = False) -> list[str]:
        """The console lines showing one pair (see ``skrisk.labelling._console.render_pair``)."""
        return render_pair(key, self.record_values(key), self.state.items.get(key, {}), self.counts_text(),
                           position, screen_size(self.out), full=full)

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
            batch = self.round.next_batch()
            if batch is None:
                return None
            self.store.append("batch", **batch)
            for note in batch.get("notes", []):
                self.say(f"note: {note}")

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
        return self.store.append(
            "answer", left_id=key[0], right_id=key[1], answer=answer, round=batch["round"] if batch else None,
        )

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
        self.store.append("undo", target=int(last["seq"]), left_id=last["left_id"], right_id=last["right_id"])
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
                self.say(*self.done_text())
                return "done"
            position = (q.number, q.total, q.title)
            self.say("", *self.render(q.key, position))
            try:
                while True:
                    ans = read_answer(self.input_fn, self.echo, self.say)
                    if ans == "reasons":
                        self.say("", *reasons_lines(q.item, screen_size(self.out)[0]))
                    elif ans == "full":
                        self.say("", *self.render(q.key, position, full=True))
                    else:
                        break
            except EOFError:
                self.say("", "End of input: the session is saved; run the same command to resume.")
                return "eof"
            if ans == "quit":
                self.say("Quit: the session is saved; run the same command to resume.")
                return "quit"
            if ans == "export":
                self.export()
                continue
            if ans == "undo":
                last = self.undo()
                if last is None:
                    self.say("Nothing to undo.")
                else:
                    self.say(undone_text(last))
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
        """Stop a background fit of the language model, close the journal and release the session
        folder's lock."""
        try:
            if getattr(self, "round", None) is not None:
                self.round.close()
        finally:
            self.store.close()


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

    Both files are written by ``write_csv_export``: every text cell is
    neutralised against spreadsheet formula injection (a leading ``'`` when the first visible
    character, after any whitespace or control characters, is ``=``, ``+``, ``-`` or ``@``, or when
    the text starts with a control character or ``'``), and a CR or LF inside a cell is quoted;
    :func:`skrisk.utils.read_csv_export` reads the exact values back. An export never silently shrinks: when the ``labels.csv`` already there holds
    answers the journal no longer has, :class:`DataError` is raised (with ``force`` at :meth:`~LabellingSession.open` the old
    file is kept as ``labels.before-<time>.csv``).
    """
    labels_df, pred, note = session.round.export_frames()
    out_labels, out_pred, backup = session.store.write_exports(labels_df, pred, session.given)
    if backup is not None:
        session.say(f"The previous {out_labels.name} is kept as {backup}.")
    session.say(
        f"Exported {len(labels_df)} label(s) to {out_labels} and {len(pred)} match(es) to {out_pred}{note}."
    )
    return out_labels, out_pred
