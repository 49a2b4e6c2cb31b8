"""Fixtures of the command-line tests: small real tables cut from Fodors-Zagats, a gold oracle."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from _label_driver import PROMPT, LabelProcess, wait_until  # noqa: F401  (tests/, on pytest's pythonpath)

_PAIR_RE = re.compile(r"left record (\S+)\s+\|\s+right record (\S+)")


@pytest.fixture(scope="session")
def fz_tables(tmp_path_factory, data_home):
    """Left/right CSVs (about 45 x 40 restaurants, 20 true matches) and the gold match set."""
    src = data_home / "fodors_zagats"
    # without "class", the entity id that gives the label away (skrisk.data.DEEPMATCHER_LEAKS)
    a = pd.read_csv(src / "tableA.csv", dtype=str).drop(columns="class")
    b = pd.read_csv(src / "tableB.csv", dtype=str).drop(columns="class")
    m = pd.concat([pd.read_csv(src / f"{s}.csv", dtype=str) for s in ("train", "valid", "test")])
    pos = m[m["label"] == "1"].head(20)
    left = a[a["id"].isin(pos["ltable_id"]) | a["id"].isin([str(i) for i in range(25)])]
    right = b[b["id"].isin(pos["rtable_id"]) | b["id"].isin([str(i) for i in range(20)])]
    folder = tmp_path_factory.mktemp("fz")
    left.to_csv(folder / "A.csv", index=False)
    right.to_csv(folder / "B.csv", index=False)
    gold = set(zip(pos["ltable_id"], pos["rtable_id"]))
    return folder / "A.csv", folder / "B.csv", gold


def current_pair(text: str) -> tuple[str, str]:
    """The pair shown last in a session transcript."""
    found = _PAIR_RE.findall(text)
    assert found, "no pair shown yet"
    return found[-1]


def journal_events(session: Path) -> list[dict]:
    # internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
    from skrisk.labelling._journal import read_events

    return read_events(session / "journal.jsonl")


def n_decisions(session: Path) -> int:
    return sum(e["event"] in ("answer", "undo") for e in journal_events(session))
