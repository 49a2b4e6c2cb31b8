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
