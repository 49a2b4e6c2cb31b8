"""The quickstart notebook: stored as its builder makes it, with outputs, and it runs (quick mode)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOK = NOTEBOOKS / "quickstart.ipynb"


def _builder():
    spec = importlib.util.spec_from_file_location("_build_quickstart", NOTEBOOKS / "_build_quickstart.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _outputs(nb, kind: str = "stdout") -> str:
    """The text of all code-cell outputs of one kind: a stream name or "result"."""
    parts = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.output_type == "stream" and out.name == kind:
                parts.append(out.text)
            elif kind == "result" and out.output_type in ("execute_result", "display_data"):
                parts.append(out.data.get("text/plain", ""))
    return "".join(parts)


def _has_png(nb) -> bool:
    return any(
        "image/png" in out.get("data", {})
        for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])
    )


def test_stored_notebook_is_the_builders_with_outputs():
    stored = nbformat.read(NOTEBOOK, as_version=4)
    built = _builder().build()
    assert [(c.cell_type, c.source) for c in stored.cells] == [(c.cell_type, c.source) for c in built.cells], (
        "notebooks/quickstart.ipynb differs from notebooks/_build_quickstart.py: run "
        "`.venv/bin/python notebooks/_build_quickstart.py` to rebuild and re-execute it."
    )
    code = [c for c in stored.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), "the notebook is stored unexecuted"
    assert not any(o.output_type == "error" for c in code for o in c.outputs)
    assert "QUICK=False" in _outputs(stored), "the stored outputs must come from the full settings"
    assert _has_png(stored), "the stored notebook has no learning-curve figure"
    assert NOTEBOOK.stat().st_size < 300_000


def test_notebook_does_not_silence_warnings():
    text = "\n".join(c.source for c in _builder().build().cells if c.cell_type == "code")
    assert not re.search(r"(filterwarnings|simplefilter)\(\s*[\"']ignore", text)
    assert "catch_warnings" not in text


def test_quickstart_notebook_runs(monkeypatch):
    monkeypatch.setenv("SKRISK_NOTEBOOK_QUICK", "1")
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend draws the figure
    nb = _builder().build()
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    out = _outputs(nb)
    assert "QUICK=True: 3 rounds of 10 pairs, 1 run(s)" in out
    # section 3: modAL's learner queries with RiskSampler (modAL is installed by `make setup`)
    assert "modAL's query picked pool positions" in out or "modAL is not installed" in out
    # section 4: the query -> oracle -> teach loop learns
    f1 = [float(v) for v in re.findall(r"round \d+: \d+ labels \(\d+ new matches\), test F1 (\d\.\d+)", out)]
    assert len(f1) == 3 and f1[-1] > 0.9, out
    # section 5: the risk's reasons, in words and with feature names
    assert "Matcher says" in out and re.search(r"(given_name|surname|suburb|address_1)_\w+ (<=|>) ", out), out
    assert re.search(r"^- .+ \(suggests (match|non-match)\)$", out, re.M), out
    assert not re.search(r"\bx\d+ (<=|>) ", out)
    # section 6: the Jupyter labeller, driven by the oracle's clicks, saved in the session's journal
    m = re.search(r"(\d+) answers in the journal", out)
    assert m and int(m.group(1)) >= 12, out
    # section 7: the learning curves, a figure and a table of three strategies
    assert _has_png(nb)
    assert all(name in _outputs(nb, "result") for name in ("risk sampling", "entropy", "random"))
    # section 8: the warning shown on purpose reaches the reader
    assert "UserWarning: risk_sampling: the matcher predicts correctly all" in _outputs(nb, "stderr")
