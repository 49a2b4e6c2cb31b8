"""No skrisk package (nor a benchmark) uses another package's private names (issue #28, item 2).

A package is a folder of ``skrisk/`` (``risk``, ``pools``, ...); the top-level private modules
(``skrisk/_rows.py``, ``skrisk/_params.py``, ...) are the shared internals of every package. Read
with ``ast``, never imported:

- ``from skrisk.<pkg>.<module> import _name`` in another package (or in a benchmark) is refused;
- ``obj._name`` (``obj`` not ``self`` / ``cls``) is refused where ``_name`` is a method or
  attribute that only *other* packages define (e.g. ``model._distribution`` outside ``risk/``).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKRISK = ROOT / "skrisk"


#: Private names that are a declared protocol between classes and the shared internals, as in
#: scikit-learn: the parameter table that ``skrisk._params.validate_params`` reads.
PROTOCOL = {"_parameter_constraints"}


def _attribute(node: ast.AST) -> str | None:
    """The attribute ``node`` reads on another object: ``obj.name`` (not ``self`` / ``cls``), or
    ``getattr`` / ``hasattr`` / ``setattr`` of ``obj`` with a literal name."""
    if isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            return None
        return node.attr
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
        return node.args[1].value
    return None


def _package(path: Path) -> str:
    """``risk`` for skrisk/risk/_learnrisk.py; ``skrisk`` for a top-level module."""
    parts = path.relative_to(SKRISK).parts
    return parts[0] if len(parts) > 1 else "skrisk"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined(tree: ast.AST) -> set[str]:
    """Private names a module defines on objects: methods, class attributes, ``self._x = ...``."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out.add(item.name)
                elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    out.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
    return {n for n in out if _private(n)}


def _imported_module(path: Path, node: ast.ImportFrom) -> str | None:
    """The absolute dotted module of a ``from ... import``, or None outside skrisk."""
    if node.level == 0:
        return node.module if node.module and node.module.split(".")[0] == "skrisk" else None
    if not path.is_relative_to(SKRISK):
        return None
    base = list(path.relative_to(ROOT).with_suffix("").parts[:-node.level])
    return ".".join(base + ([node.module] if node.module else []))


def _owner(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and not parts[1].startswith("_")) else "skrisk"


def violations(sources: list[tuple[Path, str]], defined_by: dict[str, set[str]]) -> list[str]:
    """Every cross-package private name in ``sources`` (``(path, text)`` pairs)."""
    out = []
    for path, text in sources:
        tree = ast.parse(text, filename=str(path))
        own = _package(path) if path.is_relative_to(SKRISK) else None
        own_names = defined_by.get(own, set()) | _defined(tree)
        for node in ast.walk(tree):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.ImportFrom):
                module = _imported_module(path, node)
                if module is None or _owner(module) in (own, "skrisk"):
                    continue
                for alias in node.names:
                    if _private(alias.name):
                        out.append(f"{where}: imports {module}.{alias.name}")
            else:
                attr = _attribute(node)
                if attr is None or not _private(attr) or attr in own_names or attr in PROTOCOL:
                    continue
                others = sorted(p for p, names in defined_by.items() if p != own and attr in names)
                if others:
                    out.append(f"{where}: uses .{attr} of {'/'.join(others)}")
    return out


def _defined_by_package() -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for path in SKRISK.rglob("*.py"):
        found[_package(path)] |= _defined(ast.parse(path.read_text(encoding="utf-8")))
    return found


def test_no_package_uses_another_packages_private_names():
    files = sorted(SKRISK.rglob("*.py")) + sorted((ROOT / "benchmarks").rglob("*.py"))
    found = violations([(f, f.read_text(encoding="utf-8")) for f in files], _defined_by_package())
    assert not found, "Use the public API across packages:\n" + "\n".join(found)


def test_the_check_sees_a_cross_package_private_name():
    """The checker itself: a risk-model private method called from pools, and a private import."""
    source = (
        "from ..risk._learnrisk import _private_helper\n"
        "def f(model, X, p):\n"
        "    model._distribution(X, p)\n"
        "    return hasattr(model, '_distribution')\n"
    )
    found = violations([(SKRISK / "pools" / "_example.py", source)], {"risk": {"_distribution"}, "pools": set()})
    assert [f.split(": ", 1)[1] for f in found] == [
        "imports skrisk.risk._learnrisk._private_helper", "uses ._distribution of risk",
        "uses ._distribution of risk",
    ], found


# --------------------------------------------------------------------------- benchmarks/
BENCHMARKS = ROOT / "benchmarks"
SEAM = BENCHMARKS / "_lab.py"


def _private_skrisk_imports(source: str) -> list[str]:
    """The private skrisk modules and names a file imports (``skrisk._x``, ``skrisk.pkg._y``,
    ``from skrisk.pkg import _z``), read with ``ast``; code inside strings is not imported."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            mods = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        for m in mods:
            parts = m.split(".")
            if parts[0] == "skrisk" and any(_private(x) for x in parts[1:]):
                out.append(f"line {node.lineno}: {m}")
    return out


def test_benchmarks_reach_internals_only_through_the_seam():
    """``benchmarks/_lab.py`` is the one benchmark file that imports skrisk's internals."""
    found = {str(p.relative_to(ROOT)): hits for p in sorted(BENCHMARKS.rglob("*.py")) if p != SEAM
             for hits in [_private_skrisk_imports(p.read_text(encoding="utf-8"))] if hits}
    assert not found, f"Import these through benchmarks/_lab.py (with why a benchmark needs them): {found}"
    # the checker sees the imports the benchmarks used to write
    assert _private_skrisk_imports("from skrisk.experiments._env import machine_line\n"
                                   "import skrisk.matching._match as _m\nfrom skrisk._fileio import x\n"
                                   "from skrisk.data import _typed_blocking\nfrom skrisk.data import block\n") == [
        "line 1: skrisk.experiments._env", "line 1: skrisk.experiments._env.machine_line",
        "line 2: skrisk.matching._match", "line 3: skrisk._fileio", "line 3: skrisk._fileio.x",
        "line 4: skrisk.data._typed_blocking"]


def test_every_entry_of_the_seam_is_used_and_resolves():
    import importlib

    seam = {}
    exec(compile(SEAM.read_text(encoding="utf-8"), str(SEAM), "exec"), seam)  # the repository's own file
    used: set[str] = set()
    for p in BENCHMARKS.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "_lab":
                used |= {a.name for a in node.names}
    unused = sorted(set(seam["INTERNALS"]) - used)
    assert not unused, f"benchmarks/_lab.py exports names no benchmark uses: {unused}"
    assert used <= set(seam["INTERNALS"]), sorted(used - set(seam["INTERNALS"]))
    for name, (module, attribute, why) in seam["INTERNALS"].items():
        assert why, name
        mod = importlib.import_module(module)
        assert attribute is None or hasattr(mod, attribute), f"_lab.{name}: {module} has no {attribute}"


# --------------------------------------------------------------------------- tests/
#: The tests that import a private module on purpose (they test an internal: a kernel, a limit
#: made small, a wording, the shared row helpers); every other test goes through the public API.
#: Each such import carries the comment ``# internal on purpose: <why>`` (on its line, or above
#: its block of imports).
TESTS_ALLOWED = {
    "data/test_types.py": {"skrisk.data._types", "skrisk.data._typed_blocking", "skrisk.data._rules_json",
                           "skrisk.risk._explain"},
    "_match_fixtures.py": {"skrisk.data._febrl"},
    "active/test_learner.py": {"skrisk._query", "skrisk._rows"},
    "benchmarks/test_bench_session.py": {"skrisk.data._loaders"},
    "cli/conftest.py": {"skrisk.labelling._journal"},
    "cli/test_commands.py": {"skrisk.experiments._plot"},
    "cli/test_label.py": {"skrisk.labelling._journal"},
    "cli/test_label_audit.py": {"skrisk.labelling._journal", "skrisk.labelling._status", "skrisk.matching._model"},
    "cli/test_label_lm.py": {"skrisk.labelling._lm_round"},
    "cli/test_label_dedup.py": {"skrisk.data._febrl", "skrisk.labelling._journal"},
    "cli/test_label_widget.py": {"skrisk._fileio", "skrisk.labelling._journal"},
    "cli/test_match_job.py": {"skrisk.data._febrl", "skrisk.matching._entities"},
    "data/test_blocking.py": {"skrisk.data._blocking"},
    "data/test_key_shuffle.py": {"skrisk.data._key_shuffle", "skrisk.data._typed_blocking"},
    "data/test_csv.py": {"skrisk._safetext"},
    "data/test_dedup.py": {"skrisk.data._febrl", "skrisk.data._pairs"},
    "data/test_embeddings.py": {"skrisk.data._embeddings", "skrisk.data._tokenize"},
    "data/test_febrl.py": {"skrisk.data._febrl"},
    "data/test_fetch.py": {"skrisk.data._fetch"},
    "data/test_loaders.py": {"skrisk.data._blocking", "skrisk.data._csv", "skrisk.data._febrl", "skrisk.data._fetch", "skrisk.data._loaders", "skrisk.data._similarity"},
    "data/test_similarity.py": {"skrisk.data._similarity", "skrisk.data._token_sets"},
    "data/test_tokenize.py": {"skrisk.data._tokenize"},
    "experiments/test_loop.py": {"skrisk.experiments._loop", "skrisk.experiments._registry"},
    "hostile/_session_util.py": {"skrisk.labelling._journal"},
    "hostile/test_csv_exports.py": {"skrisk._fileio"},
    "hostile/test_degenerate_numbers.py": {"skrisk.quality._estimate"},
    "hostile/test_journal_integrity.py": {"skrisk.labelling._journal"},
    "hostile/test_lm_files.py": {"skrisk._fileio", "skrisk.matchers._lm_weights"},
    "hostile/test_match_blowups.py": {"skrisk._fileio"},
    "hostile/test_model_entries.py": {"skrisk.matchers._rnn", "skrisk.matching._model", "skrisk.matching._validate"},
    "hostile/test_model_structure.py": {"skrisk.matching._model", "skrisk.matching._validate"},
    "hostile/test_numbers.py": {"skrisk.strategies._selection"},
    "hostile/test_run_records.py": {"skrisk._fileio", "skrisk.experiments._demo", "skrisk.experiments._loop"},
    "hostile/test_session_files.py": {"skrisk._fileio", "skrisk.experiments._loop", "skrisk.experiments._plot"},
    "hostile/test_sessions.py": {"skrisk.labelling._journal"},
    "hostile/test_tables.py": {"skrisk.data._loaders"},
    "hostile/test_terminal.py": {"skrisk._safetext"},
    "kmedoids/test_sample.py": {"skrisk.kmedoids._sample"},
    "matchers/conftest.py": {"skrisk.data._embeddings"},
    "matchers/test_feature.py": {"skrisk.matchers._base"},
    "matchers/test_lm.py": {"skrisk.experiments._registry", "skrisk.experiments._tasks", "skrisk.matchers._lm_data", "skrisk.matchers._lm_weights"},
    "matchers/test_rnn.py": {"skrisk.matchers._base", "skrisk.matchers._rnn"},
    "matching/test_entities.py": {"skrisk.data._febrl", "skrisk.matching._entities"},
    "matching/test_incremental.py": {"skrisk.matching._index_file", "skrisk.data._token_counts",
                                     "skrisk.data._known_blocking", "skrisk._safetext",
                                     "skrisk.matching._entities_file"},
    "matching/test_match.py": {"skrisk.data._febrl", "skrisk.matching._entities"},
    "matching/test_model.py": {"skrisk.matchers._rnn", "skrisk.matching._model"},
    "pools/test_dask.py": {"skrisk.pools._dask"},
    "pools/test_scorer.py": {"skrisk.matchers._rnn", "skrisk.pools._scorer"},
    "properties/test_badge_selection.py": {"skrisk.strategies._batch"},
    "properties/test_rows_and_journal.py": {"skrisk._rows", "skrisk.labelling._journal"},
    "quality/test_estimate.py": {"skrisk.quality._estimate"},
    "quality/test_stopping.py": {"skrisk.quality._stopping"},
    "risk/test_explain.py": {"skrisk.risk._explain", "skrisk.risk._rules"},
    "risk/test_learnrisk.py": {"skrisk.matchers._base", "skrisk.risk._defaults", "skrisk.risk._uncertainty"},
    "risk/test_rules.py": {"skrisk.risk._rules"},
    "strategies/test_bad_input.py": {"skrisk.risk._estimator", "skrisk.strategies._selection"},
    "strategies/test_contract.py": {"skrisk._query"},
    "strategies/test_e2e.py": {"skrisk._query", "skrisk._rows"},
    "strategies/test_properties.py": {"skrisk.strategies._selection"},
    "strategies/test_stateless.py": {"skrisk._device", "skrisk.strategies._risk"},
    "test_device.py": {"skrisk._device"},
    "test_newcomer.py": {"skrisk.matchers._rnn"},
    "test_one_name.py": {"skrisk._fileio", "skrisk.experiments._plot", "skrisk.experiments._registry", "skrisk.experiments._tasks"},
    "test_params.py": {"skrisk._params"},
}
_PRIVATE_MODULE = "internal on purpose:"
_PRIVATE_IMPORT = re.compile(r"\s*(from|import) skrisk(\.[a-z]\w*)?\._")


def _private_module(name: str) -> bool:
    """``skrisk._rows`` or ``skrisk.labelling._status``: a private module of skrisk."""
    parts = name.split(".")
    return parts[0] == "skrisk" and any(_private(p) for p in parts[1:3])


def test_imports(path: str, text: str, allowed: set[str]) -> list[str]:
    """Every import of a private skrisk module in a test file that is not allowed, or allowed but
    not explained by an ``# internal on purpose:`` comment."""
    lines = text.splitlines()
    out = []
    for node in ast.walk(ast.parse(text, filename=path)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        else:
            continue
        for module in (m for m in modules if _private_module(m)):
            if module not in allowed:
                out.append(f"{path}:{node.lineno}: imports {module} (use the public name, or add it to TESTS_ALLOWED "
                           "if the test tests that internal)")
                continue
            i = node.lineno - 1  # the import's line, then the import lines above it, then one comment
            said = _PRIVATE_MODULE in lines[i]
            while not said and i > 0 and (_PRIVATE_IMPORT.match(lines[i - 1]) or lines[i - 1].strip().startswith("#")):
                i -= 1
                said = _PRIVATE_MODULE in lines[i]
            if not said:
                out.append(f"{path}:{node.lineno}: imports {module} without '# {_PRIVATE_MODULE} <why>'")
    return out


test_imports.__test__ = False  # a checker, not a test


def test_tests_import_private_modules_only_on_purpose():
    tests = ROOT / "tests"
    found = []
    for f in sorted(tests.rglob("*.py")):
        rel = f.relative_to(tests).as_posix()
        found += test_imports(rel, f.read_text(encoding="utf-8"), TESTS_ALLOWED.get(rel, set()))
    assert not found, "\n".join(found)


def test_the_tests_check_sees_a_private_import():
    text = ("import os\n"
            "from skrisk.risk._rules import stump\n"
            "# internal on purpose: the kernel\n"
            "import skrisk._rows as rows\n"
            "from skrisk.risk import LearnRisk\n"
            "from skrisk.data._blocking import x\n")
    found = test_imports("t.py", text, {"skrisk._rows", "skrisk.data._blocking"})
    assert [f.split(": ", 1)[1].split(" (")[0] for f in found] == [
        "imports skrisk.risk._rules", "imports skrisk.data._blocking without '# internal on purpose: <why>'",
    ], found
