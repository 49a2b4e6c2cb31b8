"""The code blocks of the README and the documentation pages, and the names a block uses: shared
by ``tests/test_readme.py`` and ``tests/test_docs.py``."""

from __future__ import annotations

import ast
import re


def python_blocks(text: str) -> list[str]:
    """The ```` ```python ```` blocks of a Markdown (or MyST) text, in order."""
    return re.findall(r"^```python\n(.*?)\n```", text, re.S | re.M)


def names(code: str) -> tuple[set[str], set[str]]:
    """(names the block defines, names it reads) at any depth."""
    defined, used = set(), set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name):
            (defined if isinstance(node.ctx, (ast.Store, ast.Del)) else used).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
    return defined, used
