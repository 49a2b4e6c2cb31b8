"""``skrisk demo`` / ``skrisk run`` smoke tests and bad input of every command."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from skrisk.cli import main
from skrisk.datasets import make_pairs
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.experiments._plot import plot_learning_curves, summarise_curves


def _deepmatcher_folder(ds, folder):
    """``ds`` written as a DeepMatcher dataset folder (tableA/B.csv, train/valid/test.csv)."""
    folder.mkdir()
    ds.left.rename_axis("id").to_csv(folder / "tableA.csv")
    ds.right.rename_axis("id").to_csv(folder / "tableB.csv")
    cols = {"left_id": "ltable_id", "right_id": "rtable_id"}
    for split in ("train", "valid", "test"):
        part = ds.pairs[ds.pairs["split"] == split]
        part[["left_id", "right_id", "label"]].rename(columns=cols).to_csv(folder / f"{split}.csv", index=False)
    return folder


def test_demo_quick_writes_csv_and_png(tmp_path, capsys):
    out = tmp_path / "demo"
    rc = main(["demo", "--quick", "--out", str(out), "--no-progress"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    df = pd.read_csv(out / "learning_curve.csv")
    assert set(df["strategy"]) == {"risk", "random"}
    assert sorted(df["round"].unique()) == [0, 1, 2]
    assert df["f1"].between(0, 1).all()
    png = (out / "learning_curve.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert "Mean test F1 per round" in cap.out and "risk" in cap.out


def test_run_on_a_dataset_folder(tmp_path, capsys):
    data = _deepmatcher_folder(make_pairs(200, random_state=0), tmp_path / "synthetic")
    out = tmp_path / "run"
    argv = ["run", "--dataset", str(data), "--strategy", "random,entropy", "--rounds", "2", "--batch", "5",
            "--seed-size", "10", "--out", str(out), "--no-progress"]
    assert main(argv) == 0, capsys.readouterr().err
    df = pd.read_csv(out / "learning_curve.csv")
    assert set(df["strategy"]) == {"random", "entropy"} and df["n_labelled"].tolist()[:2] == [10, 15]
    assert (out / "learning_curve.png").is_file() and (out / "results.jsonl").is_file()
    # same settings: resumes from results.jsonl; other settings in the same folder: refused
    assert main(argv) == 0
    other = ["run", "--dataset", str(data), "--strategy", "random", "--rounds", "3", "--out", str(out)]
    assert main(other) == 2
    assert "other settings" in capsys.readouterr().err


def test_run_strategy_names_are_the_registry_names(tmp_path, capsys):
    """``--strategy risk`` is skrisk's default risk sampling, ``risk_paper`` the paper's method."""
    data = _deepmatcher_folder(make_pairs(160, random_state=1), tmp_path / "synthetic")
    out = tmp_path / "run"
    argv = ["run", "--dataset", str(data), "--strategy", "risk_paper", "--rounds", "2", "--batch", "4",
            "--seed-size", "8", "--epochs", "20", "--out", str(out), "--no-progress", "--no-plot"]
    assert main(argv) == 0, capsys.readouterr().err
    df = pd.read_csv(out / "learning_curve.csv")
    assert set(df["strategy"]) == {"risk_paper"} and df["n_labelled"].tolist() == [8, 12]
    assert main([*argv[:4], "risk_pre2w", *argv[5:]]) == 2  # an old record name, not a registry name
    assert "unknown strategy risk_pre2w" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--dataset", "beer", "--strategy", "risky"], "unknown strategy risky"),
        (["run", "--dataset", "no_such_dataset"], "No dataset folder"),
        (["demo", "--rounds", "1", "--quick"], "at least 2"),
    ],
)
def test_bad_run_and_demo_arguments(argv, message, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    assert message in capsys.readouterr().err


def _write(path, text):
    path.write_text(text)
    return path


@pytest.fixture
def tables(tmp_path):
    a = _write(tmp_path / "a.csv", "id,name,city\n1,blue cafe,paris\n2,red bar,rome\n3,green inn,oslo\n")
    b = _write(tmp_path / "b.csv", "id,name,city\n10,blue cafe,paris\n20,red pub,rome\n30,old mill,bergen\n")
    return a, b


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing_left", "does not exist"),
        ("columns", "do not share one set of attributes"),
        ("id_column", "has no 'key' column"),
        ("malformed", "not a well-formed CSV"),
        ("empty_pairs", "holds no rows"),
        ("unknown_id", "is not an id of"),
        ("pair_columns", "lacks the pair id columns"),
        ("no_candidates", "produced no candidate pair"),
        ("no_tables", "holds no session yet"),
        ("session_is_file", "session"),
    ],
)
def test_label_bad_input(case, message, tables, tmp_path, capsys, monkeypatch):
    a, b = tables
    session = tmp_path / "sess"
    args = ["--left", str(a), "--right", str(b)]
    if case == "missing_left":
        args = ["--left", str(tmp_path / "nope.csv"), "--right", str(b)]
    elif case == "columns":
        args[3] = str(_write(tmp_path / "b2.csv", "id,title,town\n10,x,y\n"))
    elif case == "id_column":
        args += ["--id-column", "key"]
    elif case == "malformed":
        args[3] = str(_write(tmp_path / "b3.csv", 'id,name,city\n10,"blue cafe,paris\n20,a,b,c,d,e\n'))
    elif case == "empty_pairs":
        args += ["--pairs", str(_write(tmp_path / "p.csv", "left_id,right_id\n"))]
    elif case == "unknown_id":
        args += ["--pairs", str(_write(tmp_path / "p.csv", "left_id,right_id\n1,10\n9,20\n"))]
    elif case == "pair_columns":
        args += ["--pairs", str(_write(tmp_path / "p.csv", "a,b\n1,10\n"))]
    elif case == "no_candidates":
        args[3] = str(_write(tmp_path / "b4.csv", "id,name,city\n10,zzz,qqq\n20,www,vvv\n"))
    elif case == "no_tables":
        args = []
    elif case == "session_is_file":
        session = _write(tmp_path / "afile", "x")
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    rc = main(["label", *args, "--session", str(session)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert message in err
    assert err.startswith("skrisk: error: ")


def test_resume_with_other_tables_is_refused(tables, tmp_path, capsys, monkeypatch):
    a, b = tables
    session = tmp_path / "sess"
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    assert main(["label", "--left", str(a), "--right", str(b), "--session", str(session), "--pairs",
                 str(_write(tmp_path / "p.csv", "left_id,right_id\n1,10\n2,20\n3,30\n"))]) == 0
    journal = (session / "journal.jsonl").read_bytes()
    other = _write(tmp_path / "b5.csv", "id,name,city\n10,blue cafe,paris\n20,red pub,rome\n")
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    assert main(["label", "--left", str(a), "--right", str(other), "--session", str(session)]) == 2
    err = capsys.readouterr().err
    assert "is not the file this session started with" in err and "new session" in err
    assert (session / "journal.jsonl").read_bytes() == journal


def test_plot_helper_quintile_bars(tmp_path):
    recs = [{"strategy": s, "seed": k, "n_labelled": n, "f1": f + 0.01 * k}
            for s, f in (("risk", 0.8), ("random", 0.7)) for k in range(5) for n in (10, 20)]
    summ = summarise_curves(recs)
    row = summ[(summ["strategy"] == "risk") & (summ["n_labelled"] == 10)].iloc[0]
    assert row["mean"] == pytest.approx(0.82) and row["lower"] == pytest.approx(0.808)
    assert row["upper"] == pytest.approx(0.832) and row["n"] == 5
    fig = plot_learning_curves(recs, tmp_path / "c.png", title="t")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "labelled pairs" and ax.get_ylabel() == "test F1"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["random (5 seeds)", "risk (5 seeds)"]
    assert (tmp_path / "c.png").stat().st_size > 5_000


@pytest.mark.usefixtures("beer")
def test_run_with_the_rnn_matcher_and_its_default_device(tmp_path, capsys):
    """Issue #29: ``skrisk run --matcher rnn`` failed at once (skorch was handed device "auto")."""
    out = tmp_path / "beer"
    argv = ["run", "--dataset", "beer", "--matcher", "rnn", "--strategy", "risk,random", "--rounds", "2",
            "--batch", "20", "--out", str(out), "--no-progress", "--no-plot"]
    assert main(argv) == 0, capsys.readouterr().err
    df = pd.read_csv(out / "learning_curve.csv")
    assert set(df["strategy"]) == {"risk", "random"} and df["n_labelled"].tolist()[:2] == [20, 40]
    assert df["f1"].between(0, 1).all()


def test_match_names_its_own_encoding_option(tmp_path, capsys):
    """Issue #29: an undecodable table given to ``skrisk match`` told the user to pass
    ``skrisk label --encoding``."""
    from _match_fixtures import feature_match_model

    tr = make_pairs(120, random_state=0).split("train")
    model = feature_match_model(tr, tr.attributes).save(tmp_path / "m.skrisk")
    table = tmp_path / "new.csv"
    table.write_bytes(("id," + ",".join(tr.attributes) + "\n1," + ",".join(["caf\xe9"] * len(tr.attributes)) + "\n")
                      .encode("latin-1"))
    rc = main(["match", "--model", str(model), "--left", str(table), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2 and "is not valid utf-8 text" in err
    assert "skrisk match" in err and "--encoding" in err


def test_run_without_skrisk_data_says_where_datasets_are_read_from(tmp_path, monkeypatch, capsys):
    """Issue #29: ``skrisk run --dataset beer`` without SKRISK_DATA failed without saying that the
    variable was unset or where datasets are read from."""
    monkeypatch.delenv("SKRISK_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    rc = main(["run", "--dataset", "beer", "--rounds", "1", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert rc == 2
    assert f"No dataset folder {tmp_path / 'skrisk_data' / 'beer'}" in err
    assert "SKRISK_DATA environment variable is not set" in err and "export SKRISK_DATA=" in err


def test_demo_prints_warnings_on_their_own_line_above_the_progress_bar(tmp_path, capsys):
    """Issue #29: ``make demo`` printed oof_proba's UserWarning into the middle of its progress bar."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("always", UserWarning)
        assert main(["demo", "--quick", "--out", str(tmp_path / "demo")]) == 0
    err = capsys.readouterr().err
    lines = [ln for chunk in err.split("\n") for ln in chunk.split("\r")]
    warned = [ln for ln in lines if "Warning:" in ln]
    assert warned, "the quick demo no longer warns: pick a setting that does"
    assert all(ln.startswith("UserWarning: ") and "active learning" not in ln for ln in warned), warned
    assert not any(ln.lstrip().startswith("P = oof_proba") for ln in lines)  # no source line of skrisk


def test_run_with_the_lm_matcher(tmp_path, capsys):
    """``skrisk run --matcher lm --lm-model FOLDER``: a tiny BERT folder built in the test."""
    pytest.importorskip("transformers")
    from _lm_fixtures import make_tiny_bert, words_of

    ds = make_pairs(120, random_state=0)
    model = make_tiny_bert(tmp_path / "tiny", words_of(ds.to_frame()))
    data = _deepmatcher_folder(ds, tmp_path / "synthetic")
    out = tmp_path / "run"
    argv = ["run", "--dataset", str(data), "--strategy", "risk,entropy", "--rounds", "2", "--batch", "5",
            "--seed-size", "16", "--epochs", "10", "--matcher", "lm", "--lm-model", str(model), "--out", str(out),
            "--no-progress", "--no-plot"]
    assert main(argv) == 0, capsys.readouterr().err
    df = pd.read_csv(out / "learning_curve.csv")
    assert set(df["strategy"]) == {"risk", "entropy"} and df["n_labelled"].tolist()[:2] == [16, 21]
    assert json.loads((out / "run.json").read_text())["lm_model"] == str(model)
    assert main(["run", "--dataset", str(data), "--lm-model", str(model), "--out", str(tmp_path / "o")]) == 2
    assert "add --matcher lm" in capsys.readouterr().err
