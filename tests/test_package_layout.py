"""The package's shape (issue #45): no test helper in the wheel, one lazy-import mechanism, and a
selection path whose functions take few keyword arguments."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

SKRISK = Path(__file__).resolve().parents[1] / "skrisk"


def test_no_test_helper_ships_in_the_package():
    assert not [str(p) for p in SKRISK.rglob("conftest.py")]
    assert not [str(p) for p in SKRISK.rglob("test_*.py")]


def test_one_lazy_import_mechanism():
    """Every package's lazy names go through skrisk/_lazy.py; no package writes its own."""
    own = []
    for init in SKRISK.rglob("__init__.py"):
        text = init.read_text(encoding="utf-8")
        if "import_module" in text:
            own.append(str(init.relative_to(SKRISK)))
    assert not own, own


def _keyword_counts(path: Path) -> dict[str, int]:
    out = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            n = len(args.kwonlyargs) + len(args.args) - (1 if args.args and args.args[0].arg in ("self", "cls") else 0)
            out[f"{path.name}:{node.name}"] = n
    return out


def test_the_selection_path_takes_few_arguments():
    """RiskSampler has at most 8 parameters and no function of the selection path takes more
    than 10 arguments."""
    from skrisk import RiskSampler

    assert len(inspect.signature(RiskSampler).parameters) <= 8
    paths = [SKRISK / "strategies" / f for f in ("_risk.py", "_batch.py", "_selection.py")]
    paths += [SKRISK / "pools" / f for f in ("_select.py", "_stream.py", "_dask.py")]
    counts = {}
    for p in paths:
        counts.update(_keyword_counts(p))
    assert {k: v for k, v in counts.items() if v > 10} == {}
