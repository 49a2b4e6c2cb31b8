"""Library docstrings and comments describe behaviour, never measured history (issue #45, item 3).

What a benchmark measured, on which dataset, and which issue changed a default belong to the
results pages of ``benchmarks/`` and the documentation; a docstring that reports them has to be
edited whenever a default or a benchmark changes. Every ``.py`` under ``skrisk/`` is read (never
imported): its docstrings and other bare string statements (attribute docstrings) with ``ast``,
its comments with ``tokenize``. Each block is searched with its line breaks read as spaces, so a
phrase split over two lines is found, and a hit names the file and the line.

The patterns catch the forms that history took in the library: a path into ``benchmarks/`` or
its ``RESULTS.md``, an issue number, a measured-score word (AULC, area under the learning curve,
within noise, measurement, points of F1), a result "in simulation" or "on" a named benchmark
dataset, a results page. Ordinary behaviour words (``measured by pairwise_scores``, "gain",
"simulated oracle") are left alone.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKRISK = ROOT / "skrisk"

#: The benchmark datasets by the names their results are reported under.
_DATASETS = (r"Abt-Buy|DBLP-Scholar|DBLP-GoogleScholar|DBLP-ACM|Amazon-Google|Walmart-Amazon"
             r"|iTunes-Amazon|Fodors-Zagats?")

#: ``(what, pattern)``: the history a docstring or comment must not hold; spaces match any run of
#: whitespace, line breaks included.
PATTERNS: tuple[tuple[str, str], ...] = (
    ("a path into benchmarks/", r"\bbenchmarks/"),
    ("the results file", r"\bRESULTS\.md\b"),
    ("an issue reference", r"\bissues? #?\d+|\(issue\b|(?<![\w&#])#\d{1,3}\b(?!\w)"),
    # the upper-case score only: ``aulc`` is the name of a function
    ("a learning-curve score", r"(?-i:\bAULCs?\b)|\bareas? under (the )?learning curves?"),
    ("a measured comparison", r"\bwithin (the )?noise\b|\bpoints? of F1\b"),
    ("a measurement", r"\bmeasurements?\b|\(measured\b|\bmeasured (as|useless|on the|in ``)"),
    ("a simulated result", r"\b(in|on) simulat(ion|ed sessions?)\b"),
    ("a result on a benchmark dataset", rf"\b(on|for|at) ({_DATASETS})\b|\b({_DATASETS})'s\b"),
    ("a results page", r"\b(results|ablations?|active-learning) page\b"),
    ("a measured change", r"\b(raised|lowered) (its|the) (true )?(area|AULC|F1)\b"),
)
_COMPILED = tuple((what, re.compile(pat.replace(" ", r"\s+"), re.IGNORECASE))
                  for what, pat in PATTERNS)


def _docstring_blocks(source: str) -> list[tuple[int, str]]:
    """``(first line, text)`` of every bare string statement (docstrings, attribute docstrings)."""
    lines = source.splitlines()
    out = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            # the source lines, so that a hit's line is the file's line whatever the escapes
            out.append((node.lineno, "\n".join(lines[node.lineno - 1:node.end_lineno])))
    return out


def _comment_blocks(source: str) -> list[tuple[int, str]]:
    """``(first line, text)`` of every run of comments on consecutive lines, ``#`` marks removed."""
    blocks: list[tuple[int, list[str]]] = []
    last = -2
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        text = tok.string.lstrip("#:!").strip()
        if tok.start[0] == last + 1 and blocks:
            blocks[-1][1].append(text)
        else:
            blocks.append((tok.start[0], [text]))
        last = tok.start[0]
    return [(start, "\n".join(texts)) for start, texts in blocks]


def find_history(root: Path = SKRISK) -> list[str]:
    """Every history mention in the docstrings and comments under ``root``: ``file:line: what``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for start, text in _docstring_blocks(source) + _comment_blocks(source):
            for what, pattern in _COMPILED:
                for m in pattern.finditer(text):
                    line = start + text.count("\n", 0, m.start())
                    found.append(f"{path.relative_to(root.parent)}:{line}: {what}: {m.group(0)!r}")
    return sorted(set(found))


def test_library_docstrings_and_comments_hold_no_history():
    found = find_history()
    assert not found, (
        "Library docstrings and comments describe behaviour; measured history, dataset results and "
        "issue numbers belong to the benchmarks' results pages (point at 'the benchmarks in the "
        "documentation' instead):\n" + "\n".join(found))


def test_the_patterns_catch_history_and_spare_behaviour(tmp_path):
    pkg = tmp_path / "skrisk"
    pkg.mkdir()
    (pkg / "history.py").write_text(
        '"""Preselection raised its area under the\n'
        'learning curve on Abt-Buy (``benchmarks/RESULTS.md``)."""\n'
        "\n"
        "X = 1  # the format before issue #20; within\n"
        "# noise of uncertainty (about 100 of 17,000 pool pairs, measured in ``bench.py``)\n"
        "\n"
        "\n"
        "def f():\n"
        '    """The default (#27), measured on the active-learning page."""\n'
        "    return '#2a7a2a benchmarks/ measured'  # a string literal is code, not prose\n",
        encoding="utf-8")
    (pkg / "behaviour.py").write_text(
        '"""Clusters measured by pairwise_scores; the simulated oracle reveals labels.\n'
        "\n"
        "Preselection waits for the first batch: from a seed set the riskiest pairs are mostly\n"
        'mispredicted ones (see the benchmarks in the documentation)."""\n'
        "COLOR = '#2a7a2a'  # F1 gained by the last labels, on the audit\n",
        encoding="utf-8")
    found = find_history(pkg)
    assert all(f.startswith("skrisk/history.py:") for f in found), found
    assert {f.split(":")[1] for f in found} == {"1", "2", "4", "5", "9"}, found
    kinds = {f.split(": ")[1] for f in found}
    assert kinds >= {"a path into benchmarks/", "the results file", "an issue reference",
                     "a learning-curve score", "a measured comparison", "a measurement",
                     "a result on a benchmark dataset", "a results page"}, kinds
