"""Column types through the commands (issue #46): a person table labelled and matched with the
defaults, ``--types`` overrides, and the hostile cases of the new options and files."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from skrisk.cli import main
from skrisk.datasets import make_person_table
from skrisk.labelling import LabellingSession


@pytest.fixture(scope="module")
def people(tmp_path_factory):
    """A raw 1,500-record person export (phone layouts, three date formats, NA cities) and its truth."""
    table, links = make_person_table(1500, messy=True, random_state=1)
    path = tmp_path_factory.mktemp("people") / "people.csv"
    table.to_csv(path)
    return path, links


def _start(path, session, *extra):
    """Start a session and quit at the first question; the printed text."""
    buf = io.StringIO()
    rc = None
    import contextlib

    with contextlib.redirect_stdout(buf):
        import builtins

        old = builtins.input
        builtins.input = lambda prompt="": "q"
        try:
            rc = main(["label", "--table", str(path), "--session", str(session), *extra])
        finally:
            builtins.input = old
    return rc, buf.getvalue()


def test_session_prints_and_stores_the_inferred_types(people, tmp_path):
    rc, out = _start(people[0], tmp_path / "s")
    assert rc == 0
    assert ("Column types (override with --types COL=TYPE,...): given_name=given_name, surname=family_name, "
            "date_of_birth=date (day first), address=address, city=categorical, postcode=postcode, phone=phone.") in out
    assert "Blocking (typed:" in out and "tokens:" in out  # the pool adds the tokens rule's neighbours
    manifest = json.loads((tmp_path / "s" / "session.json").read_text())
    assert manifest["types"]["date_of_birth"]["order"] == "dmy"
    assert [r["method"] for r in manifest["match_blocking"]] == ["typed"]


def test_types_override(people, tmp_path):
    rc, out = _start(people[0], tmp_path / "s", "--types", "phone=text,city=text")
    assert rc == 0
    assert "city=text" in out and "phone=text" in out
    manifest = json.loads((tmp_path / "s" / "session.json").read_text())
    assert manifest["types"]["phone"]["type"] == "text"


@pytest.mark.parametrize("value, message", [
    ("birthday=date", "--types names the column 'birthday', which is not an attribute"),
    ("phone=telephone", "unknown type 'telephone'"),
    ("phone", "is not COL=TYPE"),
    ("phone=text,phone=phone", "names the column 'phone' twice"),
])
def test_bad_types_option_is_refused_before_anything_is_written(people, tmp_path, capsys, value, message):
    rc = main(["label", "--table", str(people[0]), "--session", str(tmp_path / "s"), "--types", value])
    assert rc == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "s" / "session.json").exists()


def test_tampered_types_in_the_manifest_are_refused(people, tmp_path, capsys):
    session = tmp_path / "s"
    assert _start(people[0], session)[0] == 0
    manifest = json.loads((session / "session.json").read_text())
    manifest["types"]["date_of_birth"]["order"] = "sideways"
    (session / "session.json").write_text(json.dumps(manifest))
    rc = main(["label", "--session", str(session), "--export"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "session.json is damaged" in err and "date order" in err


def test_person_table_labelled_then_matched_with_the_defaults(people, tmp_path, capsys):
    """What a user gets: a 100-answer session on a raw export, then skrisk match on another export."""
    path, links = people
    gold = set(zip(links.left_id, links.right_id)) | set(zip(links.right_id, links.left_id))
    session = tmp_path / "s"
    s = LabellingSession.open(session, table=path, out=io.StringIO())
    for _ in range(100):
        q = s.next_question()
        if q is None:
            break
        s.answer(q.key, "yes" if q.key in gold else "no")
    s.close()
    new, new_links = make_person_table(4000, messy=True, random_state=7)
    new_path = tmp_path / "new.csv"
    new.to_csv(new_path)
    capsys.readouterr()
    rc = main(["match", "--model", str(session), "--left", str(new_path), "--out", str(tmp_path / "out"),
               "--no-progress", "--reasons"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "Column types (from the model): given_name=given_name" in out
    assert "Blocking (typed:" in out
    m = pd.read_csv(tmp_path / "out" / "matches.csv", dtype=str)
    pred = set(zip(m.left_id, m.right_id)) | set(zip(m.right_id, m.left_id))
    truth = set(zip(new_links.left_id, new_links.right_id))
    tp = sum(p in pred for p in truth)
    precision, recall = tp / len(m), tp / len(truth)
    assert precision > 0.97 and recall > 0.97, (precision, recall)
