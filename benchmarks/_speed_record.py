"""The one JSON-lines record of the issue-#26 benchmarks (bench_features, bench_blocking,
bench_splink): the measured figures plus the command, the code measured, machine, load and date."""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shlex
import sys
from pathlib import Path


def append_record(out: Path, row: dict, load_before: float) -> dict:
    """Add the run's context to ``row``, print it and append it to ``out``; returns the record."""
    import skrisk

    row = {**row, "command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
           "code": str(Path(skrisk.__file__).parent), "machine": platform.node(), "cpus": os.cpu_count(),
           "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
           "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    print(json.dumps(row), flush=True)
    with out.open("a") as fh:
        fh.write(json.dumps(row) + "\n")
    return row
