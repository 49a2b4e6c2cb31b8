"""Text from untrusted tables, made safe for a terminal and for a spreadsheet.

* :func:`visible` -- what ``skrisk label`` prints: terminal control characters (C0, DEL, C1, the
  escape character that starts ANSI/OSC sequences), bidirectional overrides and isolates,
  zero-width and other invisible format characters, and line/paragraph separators are shown as
  ``\\x1b``-style escapes, so a cell can neither drive the terminal nor hide or reorder text.
* :func:`visible_short` -- the same, cut to a few dozen characters with a marker (ids in prompts).
* :func:`display_width` / :func:`wrap_to_width` -- columns a text takes in a terminal (wide East
  Asian characters take two), so tables of CJK text stay aligned.
* :func:`spreadsheet_safe` / :func:`spreadsheet_safe_frame` -- the OWASP rule against CSV
  ("formula") injection, applied to every CSV file skrisk exports, also behind leading
  whitespace and control characters.
* :func:`csv_text` -- the one CSV writer: neutralised cells, CRLF rows so that a CR or LF inside
  a cell is always quoted (``write_csv_export`` writes it to a file and
  :func:`skrisk.utils.read_csv_export` gives back the exact values).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Callable

import numpy as np
import pandas as pd

__all__ = [
    "csv_text",
    "map_text",
    "display_width",
    "spreadsheet_safe",
    "spreadsheet_safe_frame",
    "visible",
    "visible_short",
    "wrap_to_width",
]

# format characters that are printable on purpose in some scripts; everything else of category
# Cf (bidi marks, overrides and isolates, zero-width space/joiners, BOM, soft hyphen,...) is escaped
_HIDDEN_CATEGORIES = ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn")


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: object) -> str:
    """``text`` with every character that is not visible printable text shown as an escape.

    Control characters (C0 including tab and newline, DEL, C1), bidirectional overrides and
    isolates (U+202A-U+202E, U+2066-U+2069), zero-width and other format characters, line and
    paragraph separators, surrogates, private-use and unassigned code points become ``\\x1b``,
    ``\\u202e`` or ``\\U000e0001``. Printable text of any script (accents, CJK, Arabic, emoji) is
    kept. The result holds no character that a terminal interprets.

    Parameters
    ----------
    text : object
        Converted with ``str``.

    Returns
    -------
    str

    Examples
    --------
    >>> visible("Caf\\u00e9 \\x1b]0;pwned\\x07ok")
    'Café \\\\x1b]0;pwned\\\\x07ok'
    >>> visible("abc\\u202egpj.exe")
    'abc\\\\u202egpj.exe'
    """
    s = str(text)
    if s.isprintable():  # fast path: no character of a hidden category
        return s
    return "".join(_escape(ch) if unicodedata.category(ch) in _HIDDEN_CATEGORIES else ch for ch in s)


def visible_short(text: object, limit: int = 60) -> str:
    """:func:`visible` of at most ``limit`` characters of ``text``; a longer text ends with a marker.

    For ids and names in prompts and messages: a 100,000-character id takes one line, not
    hundreds. Only the display is cut; stored values stay whole.

    Examples
    --------
    >>> visible_short("a" * 100, limit=10)
    'aaaaaaaaaa [... 90 more characters]'
    """
    s = str(text)
    if len(s) > limit:
        s = f"{s[:limit]} [... {len(s) - limit} more characters]"
    return visible(s)


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes (wide East Asian characters 2, combining marks 0).

    Examples
    --------
    >>> display_width("abc"), display_width("東京"), display_width("e\\u0301")
    (3, 4, 1)
    """
    if text.isascii():
        return len(text)
    return sum(_char_width(ch) for ch in text)


def wrap_to_width(text: str, width: int) -> list[str]:
    """Break ``text`` into lines of at most ``width`` terminal columns (at spaces when possible).

    Unlike :func:`textwrap.wrap` it counts display columns, so wide characters do not overflow.

    Examples
    --------
    >>> wrap_to_width("東京都 千代田区", 6)
    ['東京都', '千代田', '区']
    """
    width = max(int(width), 2)
    out: list[str] = []
    line, w = "", 0
    for word in text.split(" "):
        ww = display_width(word)
        if line and w + 1 + ww <= width:
            line, w = f"{line} {word}", w + 1 + ww
            continue
        if line or w:
            out.append(line)
            line, w = "", 0
        while ww > width:  # a word longer than the line: cut it by columns
            cut, cw = 0, 0
            while cut < len(word) and cw + _char_width(word[cut]) <= width:
                cw += _char_width(word[cut])
                cut += 1
            cut = max(cut, 1)
            out.append(word[:cut])
            word = word[cut:]
            ww = display_width(word)
        line, w = word, ww
    if line or not out:
        out.append(line)
    return out


_FORMULA_START = ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20")  # and their full-width forms
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
# what a spreadsheet skips or does not show before a cell's first visible character
_INVISIBLE_CATEGORIES = ("Cc", "Cf", "Zs", "Zl", "Zp")


def _leading_invisible(text: str) -> int:
    """How many characters at the start of ``text`` are whitespace, control or format characters."""
    i = 0
    while i < len(text) and (text[i].isspace() or unicodedata.category(text[i]) in _INVISIBLE_CATEGORIES):
        i += 1
    return i


def spreadsheet_safe(value: object) -> object:
    """Neutralise a CSV cell that a spreadsheet would run as a formula (OWASP CSV injection).

    A text gets a leading single quote ``'`` (the spreadsheet then shows it as text) when

    * its first *visible* character, after any leading whitespace, control or format characters
      (space, tab, CR, LF, vertical tab, escape, no-break space, zero-width space, byte-order
      mark, bidirectional overrides, ...), is ``=``, ``+``, ``-`` or ``@`` (or their full-width
      forms), unless the whole visible text is a plain number (``-5``, ``+1.5e3``);
    * it starts with a control or format character (tab, CR, ``\\x1b``, ``\\u202e``, ...);
    * it starts with ``'``: one more quote, so that the rule is reversible.

    Removing exactly one leading ``'`` from a cell that starts with one therefore always gives
    the original value back (:func:`skrisk.utils.read_csv_export` does it). Non-text values are
    left as they are.

    Parameters
    ----------
    value : object

    Returns
    -------
    object
        ``value`` or the quoted text.

    Examples
    --------
    >>> spreadsheet_safe('=HYPERLINK("http://x","y")')
    '\\'=HYPERLINK("http://x","y")'
    >>> spreadsheet_safe("-5"), spreadsheet_safe("-1+2"), spreadsheet_safe("plain")
    ('-5', "'-1+2", 'plain')
    >>> spreadsheet_safe("\\r=1+1"), spreadsheet_safe(" @SUM(A1)"), spreadsheet_safe("'a")
    ("'\\r=1+1", "' @SUM(A1)", "''a")
    """
    if not isinstance(value, str) or not value or value[0].isalnum():  # the common case, at once
        return value
    if value[0] == "'":
        return "'" + value
    skip = _leading_invisible(value)
    if skip and not value[0] == " ":
        return "'" + value  # a tab, CR, escape or format character first
    core = value[skip:]
    if core.startswith(_FORMULA_START) and not _NUMBER.fullmatch(core.rstrip()):
        return "'" + value
    return value


def _holds_nul(texts: np.ndarray) -> bool:
    """Whether a text among ``texts`` (str or missing) holds a NUL: pandas' factorize merges texts
    that differ after one (``"a"`` and ``"a\\x00b"``), so such a column is mapped cell by cell."""
    return "\x00" in "".join(texts[pd.notna(texts)])


def map_text(values: pd.Series, fn: Callable[[str], object]) -> pd.Series:
    """``values.map(fn, na_action="ignore")``, ``fn`` called once per distinct text.

    A column of 1.5 million candidate pairs' ids holds 200,000 distinct ones: the calls, not the
    gathering, are the cost. Columns holding anything but text (and missing values) are mapped
    cell by cell, since equal values of other types (``1``, ``1.0``, ``True``) are not the same
    cell.

    Examples
    --------
    >>> map_text(pd.Series(["a", None, "a", "b"]), str.upper).tolist()
    ['A', None, 'A', 'B']
    """
    def each(texts: np.ndarray) -> np.ndarray:
        out = np.empty(len(texts), dtype=object)
        out[:] = [fn(v) for v in texts]
        return out

    return _map_distinct(values, fn, each)


def _map_distinct(values: pd.Series, fn: Callable[[str], object],
                  distinct: Callable[[np.ndarray], np.ndarray | None]) -> pd.Series:
    """:func:`map_text` with the distinct texts mapped at once by ``distinct`` (None: none changes);
    cell by cell with ``fn`` where the column is not all text, or holds a NUL."""
    if pd.api.types.infer_dtype(values, skipna=True) != "string" or _holds_nul(values.to_numpy(dtype=object)):
        return values.map(fn, na_action="ignore")
    codes, uniq = pd.factorize(values, use_na_sentinel=True)
    out = distinct(np.asarray(uniq, dtype=object))
    if out is None:
        return values.astype(object)
    cells = out[codes]
    missing = codes < 0
    if missing.any():
        cells[missing] = values.to_numpy(dtype=object)[missing]
    return pd.Series(cells, index=values.index, name=values.name, dtype=object)


def spreadsheet_safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with :func:`spreadsheet_safe` applied to every text cell and column name.

    Use it on every table skrisk writes as CSV for people to open (through
    :func:`csv_text`, the one CSV writer).

    Examples
    --------
    >>> df = pd.DataFrame({"name": ["=1+1", "ok"], "n": [1, 2]})
    >>> spreadsheet_safe_frame(df)["name"].tolist()
    ["'=1+1", 'ok']
    """
    out = frame.copy()
    out.columns = [spreadsheet_safe(c) for c in out.columns]
    for j in range(out.shape[1]):
        col = out.iloc[:, j]
        if col.dtype == object or pd.api.types.is_string_dtype(col.dtype):
            out.isetitem(j, _map_distinct(col, spreadsheet_safe, _safe_texts).astype(object))
    return out


# a separator, then a first character that is not a letter or digit (``\W`` or ``_``): only such
# texts can change under spreadsheet_safe (zero-width, so that an empty text's separator is seen)
_MAYBE_UNSAFE = re.compile(r"\x00(?=\W|_)")


def _safe_texts(texts: np.ndarray) -> np.ndarray | None:
    """:func:`spreadsheet_safe` of distinct texts, or None when none changes.

    The texts are joined by NUL characters and one regular-expression pass finds those whose
    first character is not a letter or digit: only they are checked one by one (a NUL inside a
    text can only add a text to check, never hide one).
    """
    if not len(texts):
        return None
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    starts = np.cumsum(lengths + 1) - lengths  # where each text starts in the joined string
    at = np.fromiter((m.start() + 1 for m in _MAYBE_UNSAFE.finditer("\x00" + "\x00".join(texts))),
                     dtype=np.int64)
    if not len(at):
        return None
    check = np.unique(np.minimum(np.searchsorted(starts, at), len(texts) - 1))
    out = None
    for k in check:
        safe = spreadsheet_safe(texts[k])
        if safe is not texts[k]:
            if out is None:
                out = texts.copy()
            out[k] = safe
    return out


def _unwritable_cell(frame: pd.DataFrame) -> tuple[int, object, str] | None:
    """(row, column, why) of the first text cell no CSV file can carry, else None."""
    for j, name in enumerate(frame.columns):
        col = frame.iloc[:, j]
        if not (col.dtype == object or pd.api.types.is_string_dtype(col.dtype)):
            continue
        for i, v in enumerate(col.tolist()):
            if isinstance(v, str):
                if "\x00" in v:
                    return i, name, "a NUL character"
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    return i, name, "a lone surrogate (half of a UTF-16 pair)"
    return None


def csv_text(frame: pd.DataFrame, *, header: bool = True, first_row: int = 0) -> str:
    """The CSV text of ``frame`` as skrisk writes every CSV file: neutralised and round-trip safe.

    * every text cell and column name goes through :func:`spreadsheet_safe`;
    * rows end with CRLF (RFC 4180), so that a cell holding a carriage return or a line feed
      is always quoted: no CSV reader starts a row inside a cell;
    * no index column.

    Parameters
    ----------
    frame : pandas.DataFrame
    header : bool, default=True
        Start with the column names (False: the rows of a later part of a table).
    first_row : int, default=0
        The row number of ``frame``'s first row in the whole table, for messages.

    Raises
    ------
    DataError
        A text cell holds a NUL character or a lone surrogate, which no CSV reader gives back;
        the message names its row (0-based) and column.

    Examples
    --------
    >>> csv_text(pd.DataFrame({"id": ["a\\rb", "=1"]}))
    'id\\r\\n"a\\rb"\\r\\n\\'=1\\r\\n'
    """
    from .exceptions import DataError

    text = spreadsheet_safe_frame(frame).to_csv(index=False, lineterminator="\r\n", header=header)
    clean = "\x00" not in text  # checked on the whole text; the cell is looked for only when needed
    if clean:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            clean = False
    if not clean:
        bad = _unwritable_cell(frame)
        where = "a column name" if bad is None else f"row {first_row + bad[0]}, column {bad[1]!r}"
        why = "a NUL character or a lone surrogate" if bad is None else bad[2]
        raise DataError(
            f"Cannot write {where} as CSV: it holds {why}, which no CSV reader gives back. Remove that "
            "character from the value first."
        )
    return text
