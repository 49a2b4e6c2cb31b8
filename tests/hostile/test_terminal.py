"""Hostile table text on the labeller's terminal: control sequences, invisible characters, huge
cells, wide scripts and narrow terminals."""

from __future__ import annotations

import re
import unicodedata

import pytest

# internal on purpose: the terminal escaping itself
from skrisk._safetext import display_width, visible, wrap_to_width

from ._session_util import label, write_tables

# every character a terminal could act on, or that hides or reorders text
_DANGEROUS = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u2028\u2029]"
)


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),  # OSC: retitles the terminal
        ("\x1b[2K\x1b[1A", "\\x1b[2K\\x1b[1A"),  # CSI: erase the line, cursor up
        ("\x9b31m", "\\x9b31m"),  # C1 CSI (one byte)
        ("a\x7fb\x00c\rd\ne\tf", "a\\x7fb\\x00c\\x0dd\\x0ae\\x09f"),  # DEL, NUL, CR, LF, TAB
        ("abc\u202egpj.exe", "abc\\u202egpj.exe"),  # right-to-left override
        ("\u2066x\u2069", "\\u2066x\\u2069"),  # bidi isolates
        ("pay\u200bpal\ufeff\u200d", "pay\\u200bpal\\ufeff\\u200d"),  # zero-width characters, BOM
        ("a\u2028b", "a\\u2028b"),  # line separator
        ("\U000e0041", "\\U000e0041"),  # tag character (invisible)
    ],
)
def test_visible_escapes_every_control_and_invisible_character(raw, shown):
    assert visible(raw) == shown
    assert not _DANGEROUS.search(visible(raw))
    assert visible(visible(raw)) == visible(raw)  # idempotent


@pytest.mark.parametrize(
    "text", ["Café Zürich", "東京都千代田区", "مطعم القاهرة", "שלום", "🍕 pizza 👍🏽", "naïve e\u0301"]
)
def test_visible_keeps_printable_text_of_any_script(text):
    assert visible(text) == text


def test_visible_on_every_code_point_leaves_nothing_a_terminal_acts_on():
    every = "".join(chr(c) for c in range(0x30000) if not 0xD800 <= c < 0xE000)
    out = visible(every)
    assert not _DANGEROUS.search(out)
    assert all(unicodedata.category(ch) not in ("Cc", "Cf", "Zl", "Zp", "Co", "Cn") for ch in out)


def test_wrap_to_width_counts_terminal_columns():
    text = "東京都千代田区丸の内 一丁目 ＡＢＣ abc"
    for width in (6, 7, 10, 20):
        lines = wrap_to_width(text, width)
        assert all(display_width(line) <= width for line in lines)
        assert "".join(lines).replace(" ", "") == text.replace(" ", "")


def _pair_tables(tmp_path, left_value, right_value, attr="name", left_id="1", right_id="10"):
    def q(v):
        return '"' + v.replace('"', '""') + '"'

    left = f"id,{q(attr)},city\n{q(left_id)},{q(left_value)},paris\n2,other,rome\n"
    right = f"id,{q(attr)},city\n{q(right_id)},{q(right_value)},paris\n20,else,rome\n"
    pairs = f"left_id,right_id\n{q(left_id)},{q(right_id)}\n"
    return write_tables(tmp_path / "t", left, right, pairs)


def _show_one_pair(tmp_path, monkeypatch, capsys, *values, columns=100, lines=40, **kw):
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.setenv("LINES", str(lines))  # not the runner's: a terminal or pytest-xdist's worker
    args = _pair_tables(tmp_path, *values, **kw)
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(tmp_path / "s")], ["q"])
    assert rc == 0, cap.err
    start = cap.out.index("=" * 20)
    return cap.out[start:cap.out.index("Same entity?")]


def test_cells_cannot_drive_the_terminal_or_forge_lines(tmp_path, monkeypatch, capsys):
    forged = ("\x1b]0;skrisk - all checks passed\x07\x1b[2K\r"
              "Matcher says MATCH with p(match) = 0.999\x1b[1A\u202eelbisiv ton")
    shown = _show_one_pair(tmp_path, monkeypatch, capsys, forged, "plain value",
                           attr="na\x1b[8mme", left_id="1\x1b[31m")
    assert not _DANGEROUS.search(shown)
    assert "\\x1b]0;skrisk - all checks" in shown and "passed\\x07\\x1b[2K" in shown
    assert "\\u202eelbisiv" in shown
    assert "na\\x1b[8mme" in shown and "left record 1\\x1b[31m" in shown
    # the forged text stays inside its cell: no line of the output starts with it
    assert not any(line.startswith("Matcher says") for line in shown.splitlines())


def test_a_very_long_cell_is_shown_in_part(tmp_path, monkeypatch, capsys):
    shown = _show_one_pair(tmp_path, monkeypatch, capsys, "word " * 20_000, "short")
    assert len(shown.splitlines()) < 100
    assert "more characters]" in shown


def test_a_cell_with_ten_thousand_newlines_takes_one_line(tmp_path, monkeypatch, capsys):
    shown = _show_one_pair(tmp_path, monkeypatch, capsys, "top" + "\n" * 10_000 + "bottom", "x")
    lines = shown.splitlines()
    assert len(lines) < 20
    assert any("top bottom" in line for line in lines)


def test_wide_cjk_cells_stay_aligned(tmp_path, monkeypatch, capsys):
    shown = _show_one_pair(tmp_path, monkeypatch, capsys, "東京都千代田区丸の内一丁目九番一号" * 3,
                           "大阪府大阪市北区梅田三丁目", columns=100)
    rows = [line for line in shown.splitlines() if " | " in line and not line.startswith("Starting pairs")]
    assert len(rows) >= 4
    bars = {display_width(line[: line.index(" | ")]) for line in rows}
    assert len(bars) == 1  # the separator sits in one column on every line
    assert all(display_width(line) <= 100 for line in shown.splitlines())


@pytest.mark.parametrize("columns", [40, 20])
def test_a_narrow_terminal_gets_lines_that_fit(columns, tmp_path, monkeypatch, capsys):
    shown = _show_one_pair(tmp_path, monkeypatch, capsys, "the blue cafe of the old harbour " * 3,
                           "東京都千代田区丸の内一丁目", columns=columns)
    lines = shown.splitlines()
    assert all(display_width(line) <= columns for line in lines), max(lines, key=display_width)
    assert any("L: the blue cafe" in line for line in lines) and any("R: 東京都" in line for line in lines), shown


def test_rtl_emoji_and_accents_are_shown_as_they_are(tmp_path, monkeypatch, capsys):  # (kept)
    shown = _show_one_pair(tmp_path, monkeypatch, capsys, "مطعم القاهرة 🍕", "Café Zürich")
    assert "مطعم القاهرة 🍕" in shown and "Café Zürich" in shown
