"""Journal integrity (issue #29): hand-edited and copied lines, typos in the last complete line, torn
tails, repairs the user asks for, journals of older versions, and what an attacker tries next
(duplicate keys, huge numbers, NaN, BOMs, lone surrogates, long lines). Every test failed on the
code before issue #29 unless marked "(kept)".
"""

from __future__ import annotations

import json

import pytest

# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.labelling._journal import Journal, read_events

from ._session_util import answers_in_force, label, write_tables


def _session(tmp_path, monkeypatch, capsys, answers=("y", "n", "y"), name="s"):
    args = write_tables(tmp_path / "t")
    session = tmp_path / name
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session), "--initial", "2", "--batch", "4",
                                          "--audit", "0"], [*answers, "q"])
    assert rc == 0, cap.err
    return session


def _lines(session):
    return (session / "journal.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)


def _resume(monkeypatch, capsys, session, *extra, answers=("q",)):
    return label(monkeypatch, capsys, ["--session", str(session), *extra], list(answers))


def test_a_hand_added_line_answering_an_answered_pair_the_other_way_is_refused(tmp_path, monkeypatch, capsys):
    session = _session(tmp_path, monkeypatch, capsys)
    lines = _lines(session)
    last = json.loads(lines[-1])
    answer = next(json.loads(x) for x in lines if '"event":"answer"' in x)
    forged = {**answer, "seq": last["seq"] + 1, "answer": "no" if answer["answer"] == "yes" else "yes"}
    with (session / "journal.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(forged) + "\n")
    before = (session / "journal.jsonl").read_bytes()
    rc, cap = _resume(monkeypatch, capsys, session)
    assert rc == 2
    assert f"line {len(lines) + 1}" in cap.err and "already answered" in cap.err and "no undo" in cap.err
    assert (session / "journal.jsonl").read_bytes() == before  # nothing cut or changed


def test_a_line_copied_from_another_session_on_the_same_tables_is_refused(tmp_path, monkeypatch, capsys):
    a = _session(tmp_path, monkeypatch, capsys, answers=("y",), name="a")
    b = _session(tmp_path, monkeypatch, capsys, answers=("y", "n", "n"), name="b")
    mine = _lines(a)
    theirs = json.loads(_lines(b)[-1])
    assert theirs["event"] == "answer"
    copied = {**theirs, "seq": json.loads(mine[-1])["seq"] + 1}  # even renumbered to fit
    with (a / "journal.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(copied) + "\n")
    rc, cap = _resume(monkeypatch, capsys, a)
    assert rc == 2
    assert f"line {len(mine) + 1}, was written by another session" in cap.err and "--repair-journal" in cap.err


def test_a_line_out_of_sequence_is_refused(tmp_path, monkeypatch, capsys):
    session = _session(tmp_path, monkeypatch, capsys)
    lines = _lines(session)
    ev = json.loads(lines[-1])
    moved = lines[:-2] + [lines[-1], lines[-2]]  # two lines swapped
    (session / "journal.jsonl").write_text("".join(moved), encoding="utf-8")
    rc, cap = _resume(monkeypatch, capsys, session)
    assert rc == 2 and f"line {len(lines)}, claims sequence number" in cap.err, cap.err
    assert str(ev["seq"]) in cap.err


def test_a_typo_in_the_last_complete_line_is_an_error_and_nothing_is_cut(tmp_path, monkeypatch, capsys):
    session = _session(tmp_path, monkeypatch, capsys)
    lines = _lines(session)
    assert '"answer":"yes"' in lines[-1]
    lines[-1] = lines[-1].replace('"answer":"yes"', '"answer":yes"')  # a typo; the newline is there
    (session / "journal.jsonl").write_text("".join(lines), encoding="utf-8")
    before = (session / "journal.jsonl").read_bytes()
    rc, cap = _resume(monkeypatch, capsys, session)
    assert rc == 2 and f"journal.jsonl, line {len(lines)}" in cap.err and "--repair-journal" in cap.err
    assert (session / "journal.jsonl").read_bytes() == before
    rc, cap = _resume(monkeypatch, capsys, session, "--export")
    assert rc == 2 and (session / "journal.jsonl").read_bytes() == before
    # the user agrees: the line is moved, not lost
    rc, cap = _resume(monkeypatch, capsys, session, "--repair-journal")
    assert rc == 0, cap.err
    assert f"Moved journal line {len(lines)}" in cap.out and "2 answer(s) so far" in cap.out
    assert (session / "journal.rejected.jsonl").read_text(encoding="utf-8") == lines[-1]
    assert len(answers_in_force(session)) == 2


def test_an_exported_answer_with_a_typo_is_not_cut_before_the_refusal(tmp_path, monkeypatch, capsys):
    session = _session(tmp_path, monkeypatch, capsys)  # quitting exported labels.csv
    lines = _lines(session)
    lines[-1] = lines[-1].replace('"answer":"yes"', '"answer":yes"')
    (session / "journal.jsonl").write_text("".join(lines), encoding="utf-8")
    before = (session / "journal.jsonl").read_bytes()
    rc, cap = _resume(monkeypatch, capsys, session)
    assert rc == 2 and "line" in cap.err
    assert (session / "journal.jsonl").read_bytes() == before  # repairable: fix the typo by hand
    lines[-1] = lines[-1].replace('"answer":yes"', '"answer":"yes"')
    (session / "journal.jsonl").write_text("".join(lines), encoding="utf-8")
    rc, cap = _resume(monkeypatch, capsys, session)
    assert rc == 0 and "3 answer(s) so far" in cap.out, cap.err


def test_a_torn_tail_is_cut_and_kept_beside_the_journal(tmp_path, monkeypatch, capsys):
    session = _session(tmp_path, monkeypatch, capsys)
    with (session / "journal.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"seq": 99, "event": "ans')  # a kill in the middle of an append: no newline
    rc, cap = _resume(monkeypatch, capsys, session)
    assert rc == 0, cap.err
    assert (session / "journal.jsonl.torn").read_text(encoding="utf-8") == '{"seq": 99, "event": "ans\n'
    assert len(answers_in_force(session)) == 3


def test_a_journal_of_the_previous_format_opens_and_is_migrated(tmp_path, monkeypatch, capsys):
    session = _session(tmp_path, monkeypatch, capsys)
    # what an older skrisk wrote: no session identity in the manifest nor on the lines
    manifest = json.loads((session / "session.json").read_text())
    manifest.pop("session_id")
    manifest["candidates"].pop("neutralised")
    (session / "session.json").write_text(json.dumps(manifest, indent=2) + "\n")
    old = [json.loads(x) for x in _lines(session)]
    for ev in old:
        ev.pop("session")
    (session / "journal.jsonl").write_text("".join(json.dumps(e) + "\n" for e in old), encoding="utf-8")
    rc, cap = _resume(monkeypatch, capsys, session, answers=("n", "q"))
    assert rc == 0 and "3 answer(s) so far" in cap.out, cap.err
    sid = json.loads((session / "session.json").read_text())["session_id"]
    events = read_events(session / "journal.jsonl", session=sid)
    assert [("session" in e) for e in events] == [False] * len(old) + [True] * (len(events) - len(old))
    rc, cap = _resume(monkeypatch, capsys, session)
    assert rc == 0 and "4 answer(s) so far" in cap.out, cap.err
    # an old-format line after the migrated ones is refused: it was added by hand
    with (session / "journal.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({**old[-1], "seq": events[-1]["seq"] + 1}) + "\n")
    rc, cap = _resume(monkeypatch, capsys, session)
    assert rc == 2 and "has no session identity" in cap.err


# ------------------------------------------------------------------ what an attacker tries next
@pytest.mark.parametrize("edit, expected", [
    (lambda line: line.replace('"answer":', '"answer":"no","answer":', 1), "twice"),  # duplicate keys
    (lambda line: line.replace('"seq":', '"seq":1e999,"x":', 1), "not a non-negative integer"),  # inf  (kept)
    (lambda line: '\ufeff' + line, "line"),  # an editor's BOM on the last line
    (lambda line: line.replace('"event":"answer"', '"event":"answer","pad":"' + "x" * 2_000_000 + '"'),
     "already answered"),  # a 2 MB line re-answering the pair
])
def test_hostile_edits_of_a_journal_line_are_named(tmp_path, monkeypatch, capsys, edit, expected):
    session = _session(tmp_path, monkeypatch, capsys)
    lines = _lines(session)
    ev = json.loads(lines[-1])
    extra = edit(json.dumps({**ev, "seq": ev["seq"] + 1}, separators=(",", ":")))
    with (session / "journal.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(extra.rstrip("\n") + "\n")
    before = (session / "journal.jsonl").read_bytes()
    rc, cap = _resume(monkeypatch, capsys, session)
    assert rc == 2 and f"line {len(lines) + 1}" in cap.err and expected in cap.err, cap.err
    assert (session / "journal.jsonl").read_bytes() == before


def test_nan_and_huge_sequence_numbers_are_refused(tmp_path):  # (kept)
    from skrisk.exceptions import DataError

    path = tmp_path / "journal.jsonl"
    for seq in ("NaN", "1e400", "-1", "1.5", "true"):
        path.write_text('{"seq":%s,"event":"answer","left_id":"a","right_id":"b","answer":"yes"}\n' % seq)
        with pytest.raises(DataError, match="line 1"):
            read_events(path)


def test_journal_api_carries_the_session_and_refuses_lines_of_another(tmp_path):
    from skrisk.exceptions import DataError

    path = tmp_path / "journal.jsonl"
    with Journal(path, session="s1") as j:
        ev = j.append("answer", left_id="a\u202e", right_id="\ud800", answer="yes")  # RTL override, surrogate
    assert ev["session"] == "s1"
    assert read_events(path, session="s1")[0]["left_id"] == "a\u202e"
    with pytest.raises(DataError, match="another session"):
        Journal(path, session="s2")
