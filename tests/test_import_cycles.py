"""No import cycle between the modules of one package folder of ``skrisk/`` (issue #28).

Read with ``ast``, never imported. Every import counts: at the top of a module, inside a function
(a lazy import), and under ``if TYPE_CHECKING:`` (an arrow of the architecture drawing all the
same). An arrow goes from a module to each module of the *same folder* it imports
(``from ._journal import ...``, ``from . import _journal``, ``import skrisk.labelling._journal``);
importing the folder's ``__init__`` or another folder is not an arrow here.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKRISK = ROOT / "skrisk"


def _dotted(path: Path) -> str:
    """``skrisk.labelling._session`` for skrisk/labelling/_session.py (a package: its folder)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(module: str, is_package: bool, node: ast.AST) -> list[str]:
    """The dotted modules an import node may name (a ``from X import name`` may name X.name)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level == 0:
        base = node.module or ""
    else:
        parts = module.split(".")
        keep = len(parts) - node.level + (1 if is_package else 0)
        base = ".".join(parts[:keep] + ([node.module] if node.module else []))
    return [base] + [f"{base}.{a.name}" for a in node.names]


def import_graph(sources: dict[Path, str]) -> dict[str, set[str]]:
    """Arrows between modules of one folder: ``{module: {module of the same folder it imports}}``."""
    modules = {_dotted(p): p for p in sources}
    graph: dict[str, set[str]] = defaultdict(set)
    for path, text in sources.items():
        me = _dotted(path)
        if path.name == "__init__.py":
            continue
        folder = me.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(text, filename=str(path))):
            for target in _targets(me, False, node):
                if target in modules and target != me and target.rsplit(".", 1)[0] == folder \
                        and modules[target].name != "__init__.py":
                    graph[me].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected group of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_no_import_cycle_inside_a_package_folder():
    sources = {p: p.read_text(encoding="utf-8") for p in sorted(SKRISK.rglob("*.py"))}
    found = cycles(import_graph(sources))
    assert not found, "Import cycles between modules of one folder (make the imports go one way):\n" + \
        "\n".join(" <-> ".join(g) for g in found)


def test_the_check_sees_lazy_and_type_checking_cycles():
    """The checker itself: a lazy import back, and one under TYPE_CHECKING, are both cycles."""
    pkg = SKRISK / "example"
    sources = {
        pkg / "__init__.py": "from ._a import A\n",
        pkg / "_a.py": "from ._b import helper\nclass A: ...\n",
        pkg / "_b.py": "def helper():\n    from ._a import A\n    return A\n",
        pkg / "_c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._d import D\n",
        pkg / "_d.py": "from skrisk.example import _c\nclass D: ...\n",
        pkg / "_e.py": "from . import _a\nfrom .. import data\n",  # one way: no cycle
    }
    assert cycles(import_graph(sources)) == [
        ["skrisk.example._a", "skrisk.example._b"], ["skrisk.example._c", "skrisk.example._d"],
    ]


def test_modules_stay_readable_in_size():
    """No module of ``skrisk/`` over 1,000 lines; no part of the labelling session over 500 (issue #28)."""
    sizes = {p.relative_to(ROOT).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
             for p in SKRISK.rglob("*.py")}
    big = {p: n for p, n in sizes.items() if n > 1000 or (p.startswith("skrisk/labelling/") and n > 500)}
    assert not big, f"Split these modules by what they do: {big}"
