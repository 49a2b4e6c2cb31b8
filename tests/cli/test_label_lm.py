"""``skrisk label --matcher lm``: a labelling session whose matcher is a (tiny) language model."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pandas as pd
import pytest

from skrisk.cli import main
from skrisk.labelling import LabellingSession, SessionConfig

pytest.importorskip("transformers")

from _lm_fixtures import make_tiny_bert, words_of  # noqa: E402  (tests/, on pytest's pythonpath)


@pytest.fixture(scope="module")
def tiny_fz(fz_tables, tmp_path_factory):
    A, B, _ = fz_tables
    frame = pd.concat([pd.read_csv(A, dtype=str), pd.read_csv(B, dtype=str)]).add_prefix("left_")
    return str(make_tiny_bert(tmp_path_factory.mktemp("tiny"), words_of(frame.fillna(""))))


def test_lm_session_trains_saves_and_resumes(fz_tables, tiny_fz, tmp_path, monkeypatch, capsys):
    from skrisk.matchers import LMMatcher
    from skrisk.matching import load_model

    A, B, gold = fz_tables
    folder = tmp_path / "s"
    cfg = SessionConfig(n_instances=4, audit=0, epochs=20, matcher="lm", lm_model=tiny_fz)
    given: list = []
    box: dict = {}

    def answer(prompt):
        if len(given) >= 14:  # 6 initial pairs, then two risk-sampling rounds of 4
            return "q"
        key = box["s"].state.pending()[0]
        given.append(key)
        return "y" if key in gold else "n"

    box["s"] = s = LabellingSession.open(folder, left=A, right=B, config=cfg, input_fn=answer, out=io.StringIO())
    try:
        s.run()
        s.export()
    finally:
        s.close()
    assert len(given) == 14
    lm = s.round.new_matcher()  # the session's LMMatcher, kept round after round
    assert isinstance(lm, LMMatcher) and len(lm.history_) == lm.warm_epochs  # warm after round 1
    with zipfile.ZipFile(folder / "model.skrisk") as zf:
        assert "lm/model.safetensors" in zf.namelist()
    model = load_model(folder / "model.skrisk", device="cpu")
    assert isinstance(model.matcher, LMMatcher)
    pred = pd.read_csv(folder / "predicted_matches.csv", dtype=str)
    assert {"left_id", "right_id", "probability", "source"} <= set(pred.columns)
    params = json.loads((folder / "session.json").read_text())["params"]
    assert params["matcher"] == "lm" and params["lm_model"] == tiny_fz
    # skrisk match scores new pairs with the saved language model (safetensors, no code run)
    out = tmp_path / "matched"
    assert main(["match", "--model", str(folder), "--left", str(A), "--right", str(B), "--out", str(out),
                 "--no-progress"]) == 0, capsys.readouterr().err
    matches = pd.read_csv(out / "matches.csv", dtype=str)
    assert {"left_id", "right_id", "probability", "risk"} <= set(matches.columns)
    # resuming keeps the language model (a flag of a new session only)
    monkeypatch.setattr("sys.stdin", io.StringIO("q\n"))
    assert main(["label", "--session", str(folder)]) == 0
    reopened = LabellingSession.open(folder, input_fn=lambda p: "q", out=io.StringIO())
    try:
        assert reopened.config.matcher == "lm" and reopened.config.lm_model == tiny_fz
        assert np.asarray(reopened.matcher_input()["features"]).shape[0] == len(reopened.keys)
    finally:
        reopened.close()


def test_lm_model_needs_matcher_lm(fz_tables, tmp_path, monkeypatch, capsys):
    A, B, _ = fz_tables
    monkeypatch.setattr("sys.stdin", io.StringIO("q\n"))
    rc = main(["label", "--left", str(A), "--right", str(B), "--session", str(tmp_path / "s"), "--lm-model", "x"])
    assert rc != 0
    assert "--matcher lm" in capsys.readouterr().err


def _answer_all(session, gold, n):
    """Answer the next ``n`` questions from the gold matches; the keys answered."""
    keys = []
    for _ in range(n):
        q = session.next_question()
        if q is None:
            break
        session.answer(q.key, "yes" if q.key in gold else "no")
        keys.append(q.key)
    return keys


def _lm_config(tiny, **kw):
    return SessionConfig(**{"n_instances": 4, "audit": 2, "epochs": 20, "matcher": "lm", "lm_model": tiny,
                            "max_pool": 40, **kw})


def test_lm_rounds_score_a_bounded_shortlist_and_train_while_the_person_answers(fz_tables, tiny_fz, tmp_path,
                                                                                 monkeypatch):
    """Each risk round scores at most max_pool unlabelled pairs plus the labelled ones with the language
    model (never every candidate); from the second round the matcher was trained in the background, on
    the labels of the round before; every candidate still has a probability for the audit and the
    estimates (the model's where it scored the pair, the first stage's elsewhere)."""
    from skrisk.matchers import LMMatcher

    A, B, gold = fz_tables
    sizes: list[int] = []
    real = LMMatcher._forward_texts

    def counted(self, left, right, *module):
        sizes.append(len(left))
        return real(self, left, right, *module)

    monkeypatch.setattr(LMMatcher, "_forward_texts", counted)
    s = LabellingSession.open(tmp_path / "s", left=A, right=B, config=_lm_config(tiny_fz), input_fn=lambda p: "q",
                              out=io.StringIO())
    try:
        n_cand = len(s.keys)
        assert n_cand > 200  # far more candidates than the shortlist
        _answer_all(s, gold, 6 + 4 + 2 + 4 + 2 + 4)
        risk = [b for b in s.state.batches if b["phase"] == "risk"]
        assert len(risk) >= 3
        n_labels = [b["n_labels"] for b in risk]
        trained = [b["status"]["lm"]["trained_on"] for b in risk]
        assert [b["status"]["lm"]["scored"] for b in risk] == [40] * len(risk)
        assert trained[0] == n_labels[0]  # the first round trains in the foreground
        assert all(t < n for t, n in zip(trained[2:], n_labels[2:]))  # then one round behind
        assert max(sizes) <= 40 + max(n_labels) and n_cand not in sizes
        rounds = s.round.lm_rounds()
        assert np.isfinite(rounds.scores).sum() <= 40 * len(risk) + max(n_labels)
        assert len(s.state.batches[-1]["items"]) > 0
    finally:
        s.close()
    assert not rounds.training()  # closing stops a background fit


def test_lm_session_is_the_same_whatever_the_timing(fz_tables, tiny_fz, tmp_path):
    """Background training makes no batch depend on how fast the person answers: two sessions with the
    same seed and answers, one answering at once and one pausing after each answer, ask the same pairs
    with the same probabilities."""
    import time

    A, B, gold = fz_tables
    asked = []
    for k, pause in enumerate((0.0, 0.05)):
        s = LabellingSession.open(tmp_path / f"s{k}", left=A, right=B, config=_lm_config(tiny_fz),
                                  input_fn=lambda p: "q", out=io.StringIO())
        try:
            for _ in range(6 + 4 + 2 + 4 + 2 + 4):
                q = s.next_question()
                time.sleep(pause)
                s.answer(q.key, "yes" if q.key in gold else "no")
            asked.append([[(i["left_id"], i["right_id"], i.get("probability")) for i in b["items"]]
                          for b in s.state.batches])
        finally:
            s.close()
    assert asked[0] == asked[1]


_KILLED_CHILD = r'''
import io, json, sys, threading
from pathlib import Path
from skrisk.labelling import LabellingSession, SessionConfig
from skrisk.matchers import LMMatcher

args = json.loads(sys.argv[1])
work = Path(args["work"])
gold = {tuple(k) for k in args["gold"]}
real_fit = LMMatcher.fit

def fit(self, X, y, *rest, **kw):
    if threading.current_thread() is not threading.main_thread():
        (work / "training").write_text("1")
        self.set_params(warm_epochs=100000)  # trains until the process is killed
    return real_fit(self, X, y, *rest, **kw)

LMMatcher.fit = fit
cfg = SessionConfig(n_instances=4, audit=0, epochs=20, matcher="lm", lm_model=args["tiny"], max_pool=40)
s = LabellingSession.open(work / "s", left=args["A"], right=args["B"], config=cfg, input_fn=lambda p: "q",
                          out=io.StringIO())
given = []
while True:
    q = s.next_question()
    s.answer(q.key, "yes" if q.key in gold else "no")
    given.append(list(q.key))
    (work / "given.json").write_text(json.dumps(given))
    if (work / "training").exists() and len(given) >= 12:
        (work / "ready").write_text("1")
        threading.Event().wait()  # the person reads the next pair; the fit goes on
'''


def test_kill_9_during_background_training_loses_no_answer_and_the_session_resumes(fz_tables, tiny_fz,
                                                                                    tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from skrisk.matchers import LMMatcher

    # internal on purpose: the resumed session's starting point
    from skrisk.labelling._lm_round import saved_lm

    A, B, gold = fz_tables
    script = tmp_path / "child.py"
    script.write_text(_KILLED_CHILD)
    arg = json.dumps({"work": str(tmp_path), "gold": sorted(gold), "tiny": tiny_fz, "A": str(A), "B": str(B)})
    child = subprocess.Popen([sys.executable, str(script), arg], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        deadline = time.monotonic() + 240
        while not (tmp_path / "ready").exists():
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the child never reached its background training"
            time.sleep(0.2)
        time.sleep(0.5)
        assert child.poll() is None  # still training
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    given = [tuple(k) for k in json.loads((tmp_path / "given.json").read_text())]
    assert len(given) >= 12
    s = LabellingSession.open(tmp_path / "s", input_fn=lambda p: "q", out=io.StringIO())
    try:
        assert set(given) <= set(s.state.answers)  # every answer given before the kill is there
        # the resumed session continues from the language model the killed one saved last
        saved = saved_lm(tmp_path / "s", s.config, print)
        assert isinstance(saved, LMMatcher) and saved.warm_start
        more = _answer_all(s, gold, 6)  # the resumed session trains again (in the foreground) and asks
        assert len(more) == 6 and not set(more) & set(given)
        assert set(more) <= set(s.state.answers)
    finally:
        s.close()


def test_the_shortlist_takes_the_plausible_pairs_and_a_sample_of_the_rest():
    # internal on purpose: the shortlist rule of a language-model round
    from skrisk.labelling._lm_round import TOP_SHARE, LMRounds

    rounds = LMRounds(200, make_matcher=lambda: None)
    rng = np.random.RandomState(0)
    first = rng.uniform(size=200)
    free = np.arange(0, 200, 2)  # the odd positions are labelled
    rounds.keep([4, 6], [0.0, 0.0])  # the language model said no to two pairs the first stage likes
    first[[4, 6]] = 1.0
    pick = rounds.shortlist(free, first, 40, np.random.RandomState(1))
    assert len(pick) == 40 and len(set(pick)) == 40 and set(pick) <= set(free)
    prior = rounds.proba(first)
    top = free[np.argsort(-prior[free], kind="stable")][:int(40 * TOP_SHARE)]
    assert set(top) <= set(pick)  # the most plausible by the kept score, else the first stage's
    assert prior[4] == 0.0 and first[4] == 1.0
    rest = set(pick) - set(top)
    assert len(rest) == 40 - len(top) and min(prior[list(rest)]) < np.sort(prior[free])[len(free) // 2]
    np.testing.assert_array_equal(pick, rounds.shortlist(free, first, 40, np.random.RandomState(1)))
    np.testing.assert_array_equal(rounds.shortlist(free, first, 500, np.random.RandomState(1)), free)
    assert not rounds.training() and rounds.needs_fit()
