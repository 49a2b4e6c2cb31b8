"""Helpers of the hostile-session tests: tiny tables written in the test, a ``skrisk label`` driver."""

from __future__ import annotations

import io
from pathlib import Path

from _label_driver import PROMPT, LabelProcess, wait_until  # noqa: F401  (tests/, on pytest's pythonpath)

from skrisk.cli import main


LEFT = (
    "id,name,city\n"
    "1,blue cafe,paris\n2,red bar,rome\n3,green inn,oslo\n4,yellow house,lima\n5,black cat,kyiv\n"
    "6,white lily,bern\n"
)
RIGHT = (
    "id,name,city\n"
    "10,blue cafe,paris\n20,red pub,rome\n30,old mill,bergen\n40,yellow house,lima\n50,grey dog,kyiv\n"
    "60,white lily,bern\n"
)
#: candidate pairs; two are pre-labelled (one match, one non-match) so risk rounds start at once
PAIRS = (
    "left_id,right_id,label\n"
    "1,10,1\n2,20,0\n3,30,\n4,40,\n5,50,\n6,60,\n1,20,\n2,10,\n4,50,\n5,40,\n6,30,\n3,60,\n"
)


def write_tables(folder: Path, left: str = LEFT, right: str = RIGHT, pairs: str | None = PAIRS):
    """Write the tables (and candidate pairs) into ``folder``; return the label arguments."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "A.csv").write_text(left, encoding="utf-8")
    (folder / "B.csv").write_text(right, encoding="utf-8")
    args = ["--left", str(folder / "A.csv"), "--right", str(folder / "B.csv")]
    if pairs is not None:
        (folder / "P.csv").write_text(pairs, encoding="utf-8")
        args += ["--pairs", str(folder / "P.csv")]
    return args


def label(monkeypatch, capsys, argv: list[str], answers: list[str]):
    """Run ``skrisk label`` in-process with ``answers`` on stdin; return (exit code, captured)."""
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(a + "\n" for a in answers)))
    rc = main(["label", *argv])
    return rc, capsys.readouterr()


def answers_in_force(session: Path) -> dict:
    # internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
    from skrisk.labelling._journal import read_events, replay

    return replay(read_events(session / "journal.jsonl")).answers
