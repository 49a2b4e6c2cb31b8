"""The documentation pages: every Python block runs as written, the API reference lists exactly the
public surface, the architecture drawings hold against the imports, the link checker finds broken
links. (``make docs`` builds the site itself, with warnings as errors.)"""

from __future__ import annotations

import ast
import builtins
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from _code_blocks import names, python_blocks

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: the design note of the 0.2 surface: its block lists signatures, it is not code to run
NOT_CODE = {"api-0.2.md"}
#: a page whose blocks use the files another page's blocks make: that page runs first, in the same folder
NEEDS = {"user_guide/matching.md": ["user_guide/labelling.md"]}


def _pages() -> list[str]:
    skip = ("_build", "auto_examples", "generated", "_templates")
    return sorted(
        str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")
        if not any(part in skip for part in p.relative_to(DOCS).parts) and p.name not in NOT_CODE
    )


def _blocks(page: str) -> list[str]:
    return python_blocks((DOCS / page).read_text(encoding="utf-8"))


def test_every_page_is_found_and_some_have_code():
    pages = _pages()
    assert {"index.md", "getting_started.md", "user_guide/labelling.md", "architecture.md"} <= set(pages)
    assert sum(bool(_blocks(p)) for p in pages) >= 6
    assert not list(DOCS.rglob("*.rst")) or all(
        ".. code-block:: python" not in p.read_text() for p in DOCS.rglob("*.rst") if "_build" not in p.parts
    ), "a Python block in an .rst page: give it a test here"


@pytest.mark.parametrize("page", [p for p in _pages() if _blocks(p)])
def test_every_python_block_runs_as_written(page, tmp_path):
    """A page's blocks run in order as one script (a block continues from the earlier ones, as a
    reader types them), in an empty folder, after the pages it needs; and each reads no name that
    neither it nor an earlier block defines."""
    defined_before = set(dir(builtins))
    scripts = []
    for part in [*NEEDS.get(page, []), page]:
        for code in _blocks(part):
            defined, used = names(code)
            undefined = used - defined - defined_before
            assert not undefined, f"{part}: a block reads undefined names {sorted(undefined)}:\n{code}"
            defined_before |= defined
        scripts.append((part, "\n\n".join(_blocks(part))))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    for part, script in scripts:
        proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                              timeout=600, env=env)
        assert proc.returncode == 0, f"{part}: a block failed:\n{proc.stderr[-3000:]}"


# ---------------------------------------------------------------------------------------- the API pages

def _table_names() -> set[str]:
    """``package.name`` for every public name (the one list, ``tests/test_public_names.py``)."""
    from test_public_names import PUBLIC

    return {f"{package}.{name}" for package, names in PUBLIC.items() for name in names}


def _documented() -> set[str]:
    """``package.name`` for every name the API pages document (autosummary entries and data)."""
    out = set()
    for page in sorted((DOCS / "api").glob("*.rst")):
        text = page.read_text(encoding="utf-8")
        module = re.search(r"^\.\. module:: (\S+)$", text, re.M).group(1)
        for block in re.findall(r"^\.\. autosummary::\n((?:   .*\n|\n)+)", text, re.M):
            out |= {f"{module}.{n}" for n in re.findall(r"^   (\w+)$", block, re.M)}
        out |= {f"{module}.{n}" for n in re.findall(r"^\.\. data:: (\w+)$", text, re.M)}
    return out


def test_api_reference_documents_the_public_surface():
    table = _table_names()
    assert len(table) >= 75, "the public names were not read"
    # the top-level re-exports are the same objects, documented once, in their package
    expected = {n for n in table if n.count(".") > 1 or n == "skrisk.__version__"}
    documented = _documented()
    assert documented == expected, (
        f"missing {sorted(expected - documented)}, not public {sorted(documented - expected)}"
    )
    for name in documented:
        module, attr = name.rsplit(".", 1)
        assert hasattr(importlib.import_module(module), attr), name


# --------------------------------------------------------------------------------- the architecture

PACKAGES = sorted(
    p.stem if p.is_file() else p.name for p in (ROOT / "skrisk").iterdir()
    if not p.name.startswith("_") and (p.suffix == ".py" or (p / "__init__.py").exists())
)


def _rows(drawing: str) -> list[set[str]]:
    """The packages of each row of a layered drawing, top row first (``base`` holds the rest)."""
    rows = []
    for line in drawing.splitlines():
        first = line[1:].split(" ", 1)[0] if line.startswith(" ") and not line.startswith("  ") else ""
        if first in PACKAGES or first == "base":
            found = {first} | set(re.findall(r"(?:\s{2}|─ )(" + "|".join(PACKAGES) + r")(?=\s{2})", line))
            rows.append(found - {"base"} | ({"exceptions", "utils"} if first == "base" else set()))
    return rows


def _imports() -> dict[str, set[str]]:
    """For each public package or module of skrisk, the others it imports (lazy imports included;
    not the deprecated names a package ``__getattr__`` forwards)."""
    deps: dict[str, set[str]] = {p: set() for p in PACKAGES}
    for path in (ROOT / "skrisk").rglob("*.py"):
        parts = path.relative_to(ROOT / "skrisk").with_suffix("").parts
        me = parts[0]
        if me not in deps:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        forwards = {n for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "__getattr__"
                    for n in ast.walk(f)}
        package = list(parts[:-1]) if path.name != "__init__.py" else list(parts[:-1])
        for node in ast.walk(tree):
            if node in forwards or not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package[: len(package) - node.level + 1] if node.level > 1 else package
                target = base + (node.module.split(".") if node.module else [])
                heads = [target[0]] if target else [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                mod = (node.module or "").split(".")
                heads = mod[1:2] if mod[0] == "skrisk" and len(mod) > 1 else (
                    [a.name for a in node.names] if mod == ["skrisk"] else [])
            else:
                heads = [a.name.split(".")[1] for a in node.names if a.name.startswith("skrisk.")]
            deps[me] |= {h for h in heads if h in deps and h != me}
    return deps


def _drawing(text: str, after: str) -> str:
    return re.search(r"```(?:text)?\n( cli .*?)```", text.split(after, 1)[1], re.S).group(1)


@pytest.mark.parametrize("source", ["docs/architecture.md", "README.md"])
def test_the_house_drawn_holds_against_the_imports(source):
    text = (ROOT / source).read_text(encoding="utf-8")
    rows = _rows(_drawing(text, "## The house" if source.startswith("docs") else "## Architecture"))
    drawn = set().union(*rows)
    assert drawn == set(PACKAGES), f"{source} draws {sorted(drawn)}, skrisk has {sorted(PACKAGES)}"
    level = {p: i for i, row in enumerate(rows) for p in row}
    upward = [f"{a} -> {b}" for a, deps in _imports().items() for b in deps if level[b] <= level[a]]
    assert not upward, f"{source}: imports that are not downward in the drawing: {upward}"


def test_paths_the_pages_name_exist():
    for page in _pages():
        text = (DOCS / page).read_text(encoding="utf-8")
        named = re.findall(r"`((?:skrisk|benchmarks|notebooks)/[\w/.]+\.(?:py|md|ipynb|png))`", text)
        for path in set(named):
            assert (ROOT / path).exists(), f"{page} names a missing file {path}"


# ---------------------------------------------------------------------------------- the link checker

def test_the_link_checker_finds_a_missing_page_and_a_missing_anchor(tmp_path):
    sys.path.insert(0, str(DOCS))
    try:
        from check_links import broken_links
    finally:
        sys.path.remove(str(DOCS))
    (tmp_path / "sub").mkdir()
    (tmp_path / "index.html").write_text(
        '<a href="sub/page.html#here">ok</a> <a href="sub/page.html#gone">anchor</a> '
        '<a href="missing.html">page</a> <a href="https://example.org/x">external</a> <a href="#top">self</a>'
        '<img src="img.png"> <span id="top"></span>'
    )
    (tmp_path / "sub" / "page.html").write_text('<h1 id="here">x</h1><a href="../index.html">up</a>')
    (tmp_path / "img.png").write_bytes(b"png")
    assert sorted(broken_links(tmp_path)) == [
        "index.html: missing.html (no such file)", "index.html: sub/page.html#gone (no such anchor)",
    ]


# ------------------------------------------------------------------------------ the command lines

def _command_lines() -> list[tuple[str, str]]:
    """(page, line) for every ``skrisk ...`` command of a bash block of the README and the pages."""
    sources = [ROOT / "README.md", *(DOCS / p for p in _pages())]
    out = []
    for path in sources:
        for block in re.findall(r"^```bash\n(.*?)\n```", path.read_text(encoding="utf-8"), re.S | re.M):
            for line in block.splitlines():
                command = line.split(" #", 1)[0].strip()
                if command.startswith(("skrisk ", ".venv/bin/skrisk ")):
                    out.append((str(path.relative_to(ROOT)), command))
    return out


def test_every_documented_command_line_parses():
    """Each ``skrisk`` command the README and the pages show is one the command line accepts
    (an optional flag written ``[--reasons]`` is tried with it)."""
    import shlex

    from skrisk.cli import _build_parser as build_parser  # the parser `main` runs

    lines = _command_lines()
    assert len(lines) >= 10 and {c.split()[1] for _, c in lines} >= {"demo", "run", "label", "match"}
    for page, command in lines:
        argv = shlex.split(command.replace("[", "").replace("]", ""))[1:]
        try:
            build_parser().parse_args(argv)
        except SystemExit as exc:
            raise AssertionError(f"{page}: `{command}` is refused by the skrisk command line") from exc
