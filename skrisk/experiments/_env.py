"""The machine and library versions behind a result, recorded with the result at the source."""

from __future__ import annotations

import os

__all__ = ["environment", "machine_line"]


def environment() -> str:
    """The CPU and library versions of this process, for the records and the tables' metadata.

    Float results (LearnRisk's ranking, the kernel's swaps) can differ in the last bits between
    CPUs and library builds, so a query replayed elsewhere may pick a few other pairs.
    """
    import platform
    from importlib.metadata import PackageNotFoundError, version

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            info: dict[str, str] = {}
            for ln in fh:
                key, _, val = ln.partition(":")
                info.setdefault(key.strip(), val.strip())
                if not ln.strip():  # the first processor is enough
                    break
        cpu = info.get("model name", cpu)
        if "cpu family" in info:  # the same model name covers several generations
            cpu += f" (family {info['cpu family']}, model {info.get('model', '?')}"
            cpu += ", AVX-512)" if "avx512f" in info.get("flags", "").split() else ")"
    except OSError:
        pass
    libs = []
    for pkg in ("torch", "numpy", "scikit-learn", "skorch"):
        try:
            libs.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:  # pragma: no cover - every one is a dependency
            pass
    return f"{cpu}, Python {platform.python_version()}, " + ", ".join(libs)


def machine_line(threads: int | None = None) -> str:
    """Cores, torch threads (``None``: the current setting), GPU and :func:`environment`.

    The ``_machine_`` line of a benchmark table, and the ``env`` of an active-learning record.
    """
    import platform

    import torch

    if threads is None:
        threads = torch.get_num_threads()
    gpu = f"CUDA {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else "no GPU"
    return f"{platform.machine()} {os.cpu_count()} cores, torch threads {threads}, {gpu}; {environment()}"
