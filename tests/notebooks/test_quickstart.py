"""CI executes the quickstart notebook on small settings, so it never rots."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"


def test_quickstart_notebook_runs(monkeypatch, data_home):
    monkeypatch.setenv("SKRISK_NOTEBOOK_QUICK", "1")
    monkeypatch.setenv("SKRISK_DATA", str(data_home))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    text = "\n".join(
        out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])
    )
    assert "picked" in text and "best:" in text
    assert "Matcher says" in text  # the risk explanation was printed
