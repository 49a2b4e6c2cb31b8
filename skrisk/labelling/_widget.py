"""Labelling in Jupyter: an ``ipywidgets`` labeller over the same session folder as ``skrisk label``.

:class:`JupyterLabeller` drives a :class:`~skrisk.labelling.LabellingSession` through its step
API (:meth:`~skrisk.labelling.LabellingSession.next_question`,
:meth:`~skrisk.labelling.LabellingSession.answer`, :meth:`~skrisk.labelling.LabellingSession.undo`),
the loop the console uses too: the answers go to the same journal, under the same folder lock, so a
session moves between the console and a notebook (close the one before opening the other).
"""

from __future__ import annotations

import html
import io
import os
from typing import Any

from .._safetext import visible, visible_short
from ._console import _shown, item_reasons, short_reasons, undone_text
from ._round import Question
from ._session import LabellingSession

__all__ = ["JupyterLabeller"]

_STYLE = (
    "<style>.skrisk-pair td{vertical-align:top;padding:2px 8px;text-align:left}"
    ".skrisk-pair th{text-align:left;padding:2px 8px}"
    ".skrisk-cell{max-height:9em;overflow:auto;white-space:pre-wrap;word-break:break-word}"
    ".skrisk-same{color:#2a7a2a}.skrisk-diff{color:#a05a00}</style>"
)


def _esc(text: Any) -> str:
    """Text from the tables as safe HTML: invisible and control characters shown as escapes, then
    HTML-escaped (no cell becomes markup, a script or a link)."""
    return html.escape(visible(str(text)), quote=True)


class _Log(io.TextIOBase):
    """A text stream that keeps what the session prints (shown under the labeller)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._part = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._part += text
        *done, self._part = self._part.split("\n")
        self.lines += done
        del self.lines[:-200]
        return len(text)


def _import_widgets() -> Any:
    try:
        import ipywidgets
    except ImportError:  # pragma: no cover - ipywidgets is in the notebook and dev extras
        raise ImportError(
            "JupyterLabeller needs ipywidgets: pip install 'skrisk[notebook]' (or pip install ipywidgets)."
        ) from None
    return ipywidgets


class JupyterLabeller:
    """Label pairs in a notebook: the pair side by side, its reasons, yes / no / unsure / undo.

    Parameters
    ----------
    session : path-like or LabellingSession
        A session folder (started or resumed with :meth:`LabellingSession.open`; the folder is
        locked until :meth:`close`) or an open session (left open by :meth:`close`).
    **open_kwargs
        Passed to :meth:`LabellingSession.open` with a folder: ``left``, ``right``, ``pairs``,
        ``config``, ... (a new session needs ``left`` and ``right``).

    Attributes
    ----------
    session : LabellingSession
    question : Question or None
        The pair on show (None when every candidate is answered).
    widget : ipywidgets.VBox
        The labeller (a notebook cell shows it when the labeller is its last expression).
    buttons : dict of str to ipywidgets.Button
        ``"yes"``, ``"no"``, ``"unsure"``, ``"undo"``, ``"export"`` and ``"close"``; ``click()``
        drives them from Python.

    Notes
    -----
    Every text from the tables is escaped (:func:`html.escape` after
    ``skrisk._safetext.visible``): a cell cannot inject markup or scripts. Clicking a button
    while the matcher trains (a few seconds per round) queues the click in the kernel.

    Examples
    --------
    >>> from skrisk.labelling import JupyterLabeller            # doctest: +SKIP
    >>> labeller = JupyterLabeller("my_session", left="A.csv", right="B.csv")  # doctest: +SKIP
    >>> labeller                                                 # doctest: +SKIP
    """

    def __init__(self, session: str | os.PathLike | LabellingSession, **open_kwargs: Any) -> None:
        w = _import_widgets()
        self._log = _Log()
        if isinstance(session, LabellingSession):
            if open_kwargs:
                raise TypeError(
                    f"{sorted(open_kwargs)} only apply when the labeller opens the session from a folder."
                )
            self.session, self._owns = session, False
            self._old_out = session.redirect(self._log)
        else:
            self.session = LabellingSession.open(session, out=self._log, **open_kwargs)
            self._owns, self._old_out = True, None
        self.question: Question | None = None
        self.closed = False
        self.header = w.HTML()
        self.pair = w.HTML()
        self.verdict = w.HTML()
        self.reasons = w.HTML()
        self.all_reasons = w.HTML()
        self.more = w.Accordion(children=[self.all_reasons])
        self.more.set_title(0, "All reasons")
        self.more.selected_index = None
        self.status = w.HTML()
        self.log = w.HTML()
        self.buttons = {
            "yes": w.Button(description="Yes, same entity", button_style="success"),
            "no": w.Button(description="No, different", button_style="danger"),
            "unsure": w.Button(description="Unsure"),
            "undo": w.Button(description="Undo", icon="undo"),
            "export": w.Button(description="Export CSV"),
            "close": w.Button(description="Close session"),
        }
        for name in ("yes", "no", "unsure"):
            self.buttons[name].on_click(lambda _b, a=name: self.answer(a))
        self.buttons["undo"].on_click(lambda _b: self.undo())
        self.buttons["export"].on_click(lambda _b: self.export())
        self.buttons["close"].on_click(lambda _b: self.close())
        row1 = w.HBox([self.buttons[k] for k in ("yes", "no", "unsure", "undo")])
        row2 = w.HBox([self.buttons[k] for k in ("export", "close")])
        self.widget = w.VBox([self.header, self.pair, self.verdict, self.reasons, self.more, row1, row2,
                              self.status, self.log])
        self._advance()

    # ------------------------------------------------------------------ actions
    def answer(self, answer: str) -> None:
        """Answer the pair on show (``"yes"``, ``"no"`` or ``"unsure"``) and show the next one."""
        self._check_open()
        if self.question is None:
            self.session.say("Every candidate pair is answered: there is nothing to answer.")
        else:
            self.session.answer(self.question.key, answer)
        self._advance()

    def undo(self) -> None:
        """Undo the last answer (from the console or the notebook); its pair is asked again."""
        self._check_open()
        last = self.session.undo()
        if last is None:
            self.session.say("Nothing to undo.")
        else:
            self.session.say(undone_text(last))
        self._advance()

    def export(self) -> None:
        """Write ``labels.csv`` and ``predicted_matches.csv`` into the session folder."""
        self._check_open()
        self.session.export()
        self._show_log()

    def close(self) -> None:
        """Release the session folder (when the labeller opened it) and disable the buttons.

        The console (``skrisk label --session FOLDER``) can then resume the session.
        """
        if self.closed:
            return
        self.closed = True
        for b in self.buttons.values():
            b.disabled = True
        if self._owns:
            self.session.close()
        else:
            self.session.redirect(self._old_out)
        self._log.write(
            f"Closed: resume in the console with skrisk label --session {self.session.folder}, or here with "
            "a new JupyterLabeller.\n"
        )
        self._show_log()

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("This labeller is closed: make a new JupyterLabeller to go on.")

    # ------------------------------------------------------------------ showing
    def _advance(self) -> None:
        self.question = self.session.next_question()
        self._show()

    def _show(self) -> None:
        q = self.question
        self.header.value = f"<b>{_esc(q.title if q else 'Done')}</b>" + (
            f", question {q.number} of {q.total}" if q else ""
        ) + f" &nbsp;|&nbsp; {_esc(self.session.counts_text())}"
        for name in ("yes", "no", "unsure"):
            self.buttons[name].disabled = q is None or self.closed
        if q is None:
            self.pair.value = "<p>" + "<br>".join(_esc(t) for t in self.session.done_text()) + "</p>"
            self.verdict.value = self.reasons.value = self.all_reasons.value = ""
        else:
            self.pair.value = self._pair_html(q)
            self.verdict.value, self.reasons.value, self.all_reasons.value = self._reasons_html(q)
        self.status.value = self._status_html()
        self._show_log()

    def _pair_html(self, q: Question) -> str:
        rows = [
            f"<tr><th>attribute</th><th>left record {html.escape(visible_short(q.left_id))}</th><th></th>"
            f"<th>right record {html.escape(visible_short(q.right_id))}</th></tr>"
        ]
        for a, lv, rv in self.session.record_values(q.key):
            same = bool(lv) and lv.lower() == rv.lower()
            mark, cls = ("=", "skrisk-same") if same else (("?", "skrisk-diff") if not lv or not rv else ("~", "skrisk-diff"))
            rows.append(
                f"<tr><td><b>{_esc(a)}</b></td><td><div class='skrisk-cell'>{_esc(_shown(lv))}</div></td>"
                f"<td class='{cls}'>{mark}</td><td><div class='skrisk-cell'>{_esc(_shown(rv))}</div></td></tr>"
            )
        return _STYLE + "<table class='skrisk-pair'>" + "".join(rows) + "</table>"

    def _reasons_html(self, q: Question) -> tuple[str, str, str]:
        item = q.item
        verdict = ""
        if "probability" in item:
            word = "MATCH" if item.get("prediction") == 1 else "NON-MATCH"
            verdict = (f"Matcher says <b>{word}</b> with p(match) = {float(item['probability']):.3f}; "
                       f"risk that this label is wrong = <b>{float(item['risk']):.3f}</b>")
        reasons = item_reasons(item)
        if reasons:
            def li(r: dict) -> str:
                sign = "+" if r["weight"] > 0 else "&minus;"
                return f"<li>{sign} {_esc(r['text'])} <i>(suggests {_esc(r['direction'])})</i></li>"

            top = "<b>Why it was picked</b> (strongest reasons first; + raises the risk):<ul>"
            top += "".join(li(r) for r in short_reasons(reasons)) + "</ul>"
            full = "<ul>" + "".join(
                li(r)[:-5] + f" <code>{_esc(r['rule'])}</code></li>" for r in reasons
            ) + "</ul>"
            return verdict, top, full
        expl = str(item.get("explanation", "")).strip()
        return verdict, ("<p>" + _esc(expl).replace("\n", "<br>") + "</p>") if expl else "", ""

    def _status_html(self) -> str:
        lines = self._status_lines()
        return ("<p>" + "<br>".join(_esc(t) for t in lines) + "</p>") if lines else ""

    def _status_lines(self) -> list[str]:
        """The estimates and the stopping state of the latest round, when the session keeps them."""
        fn = getattr(self.session, "status_text", None)
        if callable(fn):
            return list(fn())
        return []

    def _show_log(self) -> None:
        tail = [t for t in self._log.lines[-6:] if t.strip()]
        self.log.value = ("<pre style='font-size:85%'>" + "\n".join(_esc(t) for t in tail) + "</pre>") if tail else ""

    def _ipython_display_(self) -> None:  # pragma: no cover - needs a notebook front end
        from IPython.display import display

        display(self.widget)

    def __repr__(self) -> str:
        q = self.question
        where = f"pair ({q.left_id}, {q.right_id})" if q else "done"
        return f"JupyterLabeller({str(self.session.folder)!r}, {where}{', closed' if self.closed else ''})"
