"""The console view of a labelling session: one pair shown side by side, fitted to the terminal,
and the answers read from the keyboard.

Pure functions of what the session knows (the pair's values and the item its batch stored), so the
console and the notebook labeller (:mod:`skrisk.labelling._widget`) show the same reasons and
summaries. Everything taken from the tables is shown through :func:`~skrisk._safetext.visible`
(no cell can drive the terminal).
"""

from __future__ import annotations

import os
import shutil
from itertools import zip_longest
from typing import Any, Callable

from .._safetext import display_width, visible, visible_short, wrap_to_width
from ._status import AUDIT_HELP

__all__ = ["item_reasons", "reasons_lines", "render_pair", "read_answer", "screen_size", "short_reasons",
           "undone_text"]

_MAX_CELL = 2000  # characters of one cell shown in the console (the rest is summarised)

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


def screen_size(out: Any) -> tuple[int, int]:
    """Terminal columns (20-140) and lines (at least 20; 40 when unknown, e.g. piped).

    A terminal's own size wins over ``COLUMNS`` / ``LINES`` (often stale: a shell exports
    them once, then the window is resized); output that is not a terminal reads them.
    """
    size = None
    try:
        if out.isatty():
            size = os.get_terminal_size(out.fileno())
    except (AttributeError, OSError, ValueError):
        size = None
    if size is None or size.columns <= 0 or size.lines <= 0:
        size = shutil.get_terminal_size((100, 40))
    return max(20, min(size.columns, 140)), max(20, size.lines)

def _cut(lines: list[str], keep: int, w: int, v: str) -> list[str]:
    """The first ``keep`` lines of the cell ``v`` wrapped to ``w`` columns; a cut ends with how
    many characters are hidden."""
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


def _guard(lines: list[str], width: int) -> list[str]:
    """Every line made visible and wrapped: nothing wider than the terminal."""
    out: list[str] = []
    for line in lines:
        line = visible(line)
        out += [line] if display_width(line) <= width else wrap_to_width(line, width)
    return out


def _verdict_and_reasons(item: dict, width: int, full: bool) -> list[str]:
    """The lines under a pair: the matcher's prediction and risk, then the reasons (at most three
    of distinct attributes, two lines each, unless ``full``) or the explanation."""
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
    return tail


def render_pair(key: tuple[str, str], values: list[tuple[str, str, str]], item: dict, counts: str,
                position: tuple[int, int, str], size: tuple[int, int], *, full: bool = False) -> list[str]:
    """The lines showing one pair; no line is wider than the terminal, no cell can drive it.

    The question fits the terminal's height (40 lines when unknown) together with the prompt:
    long cells are wrapped and cut to their share of the lines (the cut says how many
    characters are hidden; ``f`` shows the records whole), and at most three reasons are shown
    (``r`` shows them all). With ``full=True`` every cell is shown whole (up to ``_MAX_CELL``
    characters) and every reason.

    ``values`` are the pair's ``(attribute, left value, right value)``, ``item`` what its batch
    stored about it, ``counts`` the answers so far in words and ``size`` the terminal's columns
    and lines (:func:`screen_size`).

    Every text from the tables (ids, attribute names, cells, explanations) goes through
    :func:`~skrisk._safetext.visible`; widths are counted in terminal columns (wide CJK
    characters take two). Terminals narrower than 72 columns get one value per line.
    """
    width, height = size
    narrow = width < 72
    names = [visible(a) for a, _, _ in values]
    aw = min(max(len("attribute"), *(display_width(a) for a in names)), 24) if names else len("attribute")
    cw = max(16, (width - aw - 7) // 2)
    k, n, phase = position
    head = [
        "=" * width,
        f"{phase}, question {k} of {n} | {counts}",
        "-" * width,
    ]

    def cell_lines(v: str, w: int) -> list[str]:
        return wrap_to_width(_shown(v), w) if v else [""]

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

    tail = _verdict_and_reasons(item, width, full)
    legend = "(= same value, ~ different, ? missing on one side"
    legend += ")" if full else "; [f] shows long values whole)"
    head, tail, legend_lines = _guard(head, width), _guard(tail, width), _guard([legend], width)
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
                body += row(visible(a), _cut(lw, kl, vw, lv), _cut(rw, kr, vw, rv), mark)
            else:
                body += row(visible(a), _cut(lw, m, vw, lv), _cut(rw, m, vw, rv), mark)
        if n_fit < len(wrapped):
            body.append(f"... {len(wrapped) - n_fit} more attribute(s): [f] shows them")
    return _guard(head + lines_id + ["-" * width] + body + ["-" * width] + legend_lines + tail, width)


def read_answer(input_fn: Callable[[str], str], echo: bool, say: Callable[..., None]) -> str:
    """Read answers until one is understood (help is shown, unknown words are named); its word."""
    while True:
        raw = input_fn(_PROMPT)
        if echo:  # answers piped in do not show: echo them so the transcript reads well
            say(raw.strip())
        word = raw.strip().lower()
        if not word:
            continue
        ans = _ANSWER_WORDS.get(word)
        if ans == "help":
            say(_HELP)
            continue
        if ans is None:
            say(f"Unknown answer {raw.strip()!r}. {_HELP}")
            continue
        return ans


def reasons_lines(item: dict, width: int) -> list[str]:
    """Every reason of a question and the full explanation (the console's ``r``)."""
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

