"""Shared fixture of the benchmark-script tests: the scripts are not a package, so they are loaded by path."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="session")
def bench_script():
    """``bench_script("bench_match")``: that script of ``benchmarks/`` as a fresh module."""

    def load(name: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    return load
