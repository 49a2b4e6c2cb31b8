"""The README: its example runs as written, its first screen says how to start, its links hold, and
it stays on two screens (what moved to the documentation pages is checked there)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from _code_blocks import names, python_blocks

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MARKER = "<!-- The block below is run as written by tests/test_readme.py. -->"


def _text() -> str:
    return README.read_text(encoding="utf-8")


def _first_screen() -> str:
    """Everything above the README's first ``## `` section."""
    text = _text()
    return text[: text.index("\n## ")]


def _example() -> str:
    text = _text()
    assert MARKER in text, "the README lost the marker of its tested example"
    block = re.match(r"\s*```python\n(.*?)\n```", text[text.index(MARKER) + len(MARKER):], re.S)
    assert block, "the marker must be followed by a ```python block"
    return block.group(1)


def test_readme_example_runs_as_written(tmp_path):
    code = _example()
    assert 10 <= len([line for line in code.splitlines() if line.strip()]) <= 20
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    rounds = re.findall(r"^(\d+) labels: test F1 (\d\.\d+)$", proc.stdout, re.M)
    assert [int(n) for n, _ in rounds] == [20, 30, 40, 50], proc.stdout
    assert float(rounds[-1][1]) > 0.9, proc.stdout


def test_readme_example_uses_public_names_only():
    for module in re.findall(r"^from (\S+) import", _example(), re.M):
        assert not any(part.startswith("_") for part in module.split(".")), module


def test_first_screen_says_how_to_start():
    screen = _first_screen()
    assert "make demo" in screen and "make test" in screen
    assert "skrisk label --left" in screen  # how to run it on your own tables
    assert MARKER in screen and "risk sampling" in screen.lower()
    assert re.search(r"!\[[^\]]+\]\(benchmarks/results/al/\w+\.png\)", screen), "the learning-curve picture"
    for target in ("#command-line", "benchmarks/RESULTS.md", "notebooks/quickstart.ipynb", "#architecture",
                   "CONTRIBUTING.md"):
        assert f"]({target})" in screen, target
    assert len(screen.splitlines()) <= 60


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_links_and_paths_exist():
    text = _text()
    anchors = {_anchor(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://")):
            continue
        if target.startswith("#"):
            assert target[1:] in anchors, f"README links to a missing section {target}"
        else:
            assert (ROOT / target).exists(), f"README links to a missing file {target}"
    for path in set(re.findall(r"`((?:skrisk|benchmarks|notebooks)/[\w/.]+\.(?:py|md|ipynb|png))`", text)):
        assert (ROOT / path).exists(), f"README names a missing file {path}"
    assert (ROOT / "benchmarks/results/al/dblp_scholar_feature_compare.png").stat().st_size < 300_000


def test_sections_that_must_stay():
    text = _text()
    for heading in ("## Command line", "## Documentation", "## Architecture", "## Licence"):
        assert f"\n{heading}\n" in text, heading
    assert len(text.splitlines()) <= 150, "the README is two screens: move the details to docs/"


def test_moved_sections_live_in_the_docs():
    """What left the README is on its documentation page."""
    docs = ROOT / "docs"
    moved = {
        "user_guide/active_learning.md": "## What works with plain modAL, and what needs skrisk's learner",
        "user_guide/promises.md": "# What skrisk promises about your labels and files",
        "getting_started.md": "## Data",
        "architecture.md": "| Algorithm 1 (BUILD top-b, SWAP with fixed medoids) |",  # the paper-to-code table
    }
    for page, text in moved.items():
        assert text in (docs / page).read_text(encoding="utf-8"), (page, text)
    for target in re.findall(r"\]\((docs/[^)\s#]+)", _text()):
        assert (ROOT / target).exists(), f"README links to a missing docs page {target}"


def test_every_python_block_runs_or_says_what_it_needs(tmp_path):
    """Issue #29: the streaming and Dask examples used names they never defined (``left``, ``sf``,
    ``labelled_pairs``). A block runs as written, or its first line says what it continues from or
    needs ("# Continues from ..." / "# Needs ..."), and then reads no name that neither it nor an
    earlier block defines."""
    import builtins
    import os

    defined_before: set[str] = set()
    for code in python_blocks(_text()):
        defined, used = names(code)
        first = code.splitlines()[0]
        if first.startswith(("# Continues from ", "# Needs ")):
            compile(code, "<README block>", "exec")
            undefined = used - defined - defined_before - set(dir(builtins))
            assert not undefined, f"README block reads undefined names {sorted(undefined)}:\n{code}"
        elif code.strip() != _example().strip():  # the quick-start example has its own test
            if "load_deepmatcher(" in code and not os.environ.get("SKRISK_DATA"):
                continue  # the datasets are not here (the data tests skip too)
            proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                                  timeout=300)
            assert proc.returncode == 0, f"README block failed:\n{code}\n{proc.stderr[-2000:]}"
        defined_before |= defined


def test_readme_says_where_datasets_are_read_from_and_the_notebook_tools_are_installed():
    """Issue #29: the command-line section never said where ``skrisk run --dataset`` reads from,
    and nbconvert, which running the notebook needs, was missing from the ``dev`` extra."""
    import tomllib

    section = _text().split("\n## Command line\n", 1)[1].split("\n## ", 1)[0]
    assert "$SKRISK_DATA/NAME" in section and "~/skrisk_data/NAME" in section
    assert "../shared/data" in section and "development layout" in section
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    if "jupyter nbconvert" in _text():
        for extra in ("dev", "notebook"):
            assert any(r.startswith("nbconvert") for r in extras[extra]), extra
