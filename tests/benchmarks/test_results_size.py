"""The tracked results stay small enough for a clone to carry, and the summary page short."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_BYTES = 5 * 1024 * 1024
MAX_FILES = 400


def _tracked(folder: str) -> list[Path]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", "-z", folder], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / p for p in out.decode().split("\0") if p]


def test_tracked_results_fit_in_5_mb_and_400_files():
    files = _tracked("benchmarks/results")
    present = [p for p in files if p.is_file()]  # a file removed but not yet committed counts as gone
    size = sum(p.stat().st_size for p in present)
    assert len(present) <= MAX_FILES, f"{len(present)} tracked files under benchmarks/results"
    assert size <= MAX_BYTES, f"{size / 2**20:.2f} MiB tracked under benchmarks/results"
    # the whole records stay out of the tree: no raw folder, no figure beyond the linked ones
    assert not [p for p in present if "raw" in p.relative_to(ROOT).parts]
    assert len([p for p in present if p.suffix == ".png"]) <= 3


def test_results_page_leads_with_the_strategy_and_matcher_tables():
    text = (ROOT / "benchmarks/RESULTS.md").read_text()
    assert len(text.splitlines()) <= 200
    blocks = re.findall(r"<!-- \{\{(\w+)(?::[^}]*)?\}\} -->", text)
    assert blocks[:2] == ["summary_table", "matcher_table"]
