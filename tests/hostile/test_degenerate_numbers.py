"""Degenerate numbers given to the estimate API, the pool queries, the journal and the strategies
(issue #48, items 4-7, 14 and 15, and the next cases of their class). Each case is a clear error
naming the argument (row, column, line) or a correct answer; SECURITY.md counts them."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from skrisk.active import ActiveLearner
from skrisk.data import PairDataset, SimilarityFeatures
from skrisk.exceptions import DataError, EmptyPoolError
from skrisk.matchers import FeatureMatcher
from skrisk.pools import ChunkScorer, stream_query
from skrisk.quality import _estimate, _stopping
from skrisk.quality import audit_sample, choose_threshold, compare_f1, confirm_stop, estimate_quality
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.quality._estimate import recalibrate
from skrisk.strategies import KMedoidsSelector, RiskSampler, TopKSelector, entropy_sampling

from ._session_util import label, write_tables

NAN, INF = float("nan"), float("inf")


# ---------------------------------------------------------------------------------- the estimate API
def _audit(n=200, seed=0):
    rng = np.random.RandomState(seed)
    proba = rng.uniform(size=2000)
    truth = (rng.uniform(size=2000) < proba).astype(int)
    s = audit_sample(proba, n=n, method="score", random_state=0)
    return truth[s.positions], proba[s.positions], s.weights, proba


GOOD = {"labels": 30, "f1_interval": (0.85, 0.93), "n_matches": 40}


@pytest.mark.parametrize("gain_interval, kw, expected", [
    ((NAN, NAN), {}, r"gain_interval\[0\] must be a number in \[-1, 1\], got nan"),
    ((0.5, -0.5), {}, r"gain_interval = \(0.5, -0.5\) has its low end above its high end"),
    ((-0.004, 0.008), {"f1_interval": (NAN, NAN)}, r"f1_interval\[0\] must be a number in \[0, 1\]"),
    ((-0.004, 0.008), {"f1_interval": (0.9, 0.1)}, r"f1_interval = \(0.9, 0.1\) has its low end above"),
    ((-0.004, 0.008), {"labels": -5}, "labels must be an integer >= 0, got -5"),
    ((-0.004, 0.008), {"n_matches": -1}, "n_matches must be an integer >= 0, got -1"),
    ((-0.004, 0.008, 0.1), {}, r"gain_interval must be a pair \(low, high\) or None"),
])
def test_confirm_stop_refuses_intervals_that_say_nothing(gain_interval, kw, expected):
    """Item 4: each of these advised stopping (or raised a bare unpacking error)."""
    with pytest.raises(ValueError, match=expected):
        confirm_stop(True, 0.0, gain_interval, **{**GOOD, **kw})


@pytest.mark.parametrize("scale", [1e-300, 1e-200, 1e300, 1e307])
def test_the_estimate_does_not_depend_on_the_scale_of_the_weights(scale):
    """Item 5: all weights 1e-300 or 1e300 widened the intervals to (0, 1); at 1e307 F1 was 0.0."""
    y, p, w, _ = _audit()
    ref = estimate_quality(y, p, w)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not even a RuntimeWarning
        est = estimate_quality(y, p, w * scale)
        choice = choose_threshold(y, p, w * scale, rule="one-se")
        gain = compare_f1(y, p, np.clip(p - 0.1, 0, 1), w * scale)
        m = recalibrate(y, p, w * scale, [0.1, 0.5, 0.9])
    for k in ("precision", "recall", "f1"):
        assert getattr(est, k) == pytest.approx(getattr(ref, k), rel=1e-9)
        np.testing.assert_allclose(est.interval(k), ref.interval(k), rtol=1e-9)
    assert choice.threshold == choose_threshold(y, p, w, rule="one-se").threshold
    ref_gain = compare_f1(y, p, np.clip(p - 0.1, 0, 1), w)
    assert gain[0] == pytest.approx(ref_gain[0]) and np.allclose(gain[1], ref_gain[1])
    np.testing.assert_allclose(m, recalibrate(y, p, w, [0.1, 0.5, 0.9]), rtol=1e-6)


def test_weights_that_no_design_gives_are_refused_naming_the_position():
    y, p, w, proba = _audit()
    for bad, expected in ((0.0, r"weights\[3\] = 0.0: importance weights must be positive"),
                          (-1.0, r"weights\[3\] = -1.0 is not a finite number >= 0"),
                          (NAN, r"weights\[3\] = nan is not a finite number"),
                          (INF, r"weights\[3\] = inf is not a finite number")):
        w2 = w.copy()
        w2[3] = bad
        with pytest.raises(DataError, match=expected):
            estimate_quality(y, p, w2)
    w2 = w.copy()
    w2[5], w2[6] = 1e-300, 1e300  # a ratio of 1e600: in units of the largest, 0
    with pytest.raises(DataError, match=r"weights\[5\] = 1e-300 is more than 1e308 times smaller"):
        estimate_quality(y, p, w2)
    # model-assisted, the scale matters: a multiple of the Hansen-Hurwitz weights is refused
    with pytest.raises(DataError, match=r"weights\[0\] = .* is below 1 / N = 0.0005.*not a multiple"):
        estimate_quality(y, p, w * 1e-6, proba_all=proba)
    with pytest.raises(DataError, match=r"draw probability 1 / \(N w\) below 1e-150"):
        estimate_quality(y, p, w * 1e300, proba_all=proba)
    with pytest.raises(DataError, match=r"with proba_all_a \(N = 2000 candidates\)"):
        compare_f1(y, p, p, w * 1e-6, proba_all_a=proba, proba_all_b=proba)
    with pytest.raises(DataError, match=r"with proba_all \(N = 2000"):
        choose_threshold(y, p, w * 1e-6, proba_all=proba)
    est = estimate_quality(y, p, w, proba_all=proba)  # the weights of the design itself
    assert est.assisted and 0 < est.f1_interval[0] < est.f1 < est.f1_interval[1] < 1


def _y():
    return _audit(n=50)


#: (function, arguments, expected message) for the public functions of skrisk.quality; "kept"
#: cases were refused already before issue #48 (SECURITY.md counts both).
QUALITY_CASES = {
    # new
    "confirm_stop gain inf": (confirm_stop, (True, INF, (-0.1, 0.1)), GOOD, "gain must be a number in"),
    "confirm_stop gain outside": (confirm_stop, (True, 0.5, (-0.1, 0.1)), GOOD, "lies outside its gain_interval"),
    "confirm_stop rule nan": (confirm_stop, (NAN, 0.0, (-0.1, 0.1)), GOOD, "rule_fires must be True or False"),
    "confirm_stop kappa 2": (confirm_stop, (True, 0.0, (-0.1, 0.1)), {**GOOD, "kappa": 2.0, "min_kappa": 0.9},
                             r"kappa must be a number in \[-1, 1\]"),
    "confirm_stop min_matches -1": (confirm_stop, (True, 0.0, (-0.1, 0.1)), {**GOOD, "min_matches": -1},
                                    "min_matches must be an integer >= 0"),
    "confirm_stop f1 1.5": (confirm_stop, (True, 0.0, (-0.1, 0.1)), {**GOOD, "f1_interval": (0.5, 1.5)},
                            r"f1_interval\[1\] must be a number in \[0, 1\]"),
    "more_answers aim 0": (_estimate.more_answers, (100, (0.2, 0.8), 0.0), {}, r"aim must be a number in \(0, 1\]"),
    "more_answers nan": (_estimate.more_answers, (100, (NAN, 0.8)), {}, r"interval\[0\] = nan is not a finite number"),
    "more_answers 3 values": (_estimate.more_answers, (100, (0.1, 0.2, 0.3)), {}, r"interval must be a pair"),
    "more_answers reversed": (_estimate.more_answers, (100, (0.8, 0.2)), {}, "low end above its high end"),
    "more_answers n -3": (_estimate.more_answers, (-3, (0.2, 0.8)), {}, "n_audit must be an integer >= 0"),
    "cohen_kappa nan": (_stopping.cohen_kappa, ([0, 1, NAN], [0, 1, 1]), {},
                        r"a\[2\] = nan: the labelings must hold 0 and 1"),
    "cohen_kappa proba": (_stopping.cohen_kappa, ([0, 1, 1], [0, 0.7, 1]), {}, r"b\[1\] = 0.7"),
    "audit_design risk 5": (_estimate.audit_design, ([0.2, 0.9],), {"risk": [0.1, 5.0]},
                            r"risk\[1\] = 5.0 is not a finite number in \[0, 1\]"),
    "audit_aim risk nan": (_estimate.audit_aim, ([1, 0], [0.9, 0.1], [1.0, 1.0], [0.2, 0.9], [NAN, 0.1]), {},
                           r"risk\[0\] = nan"),
    "audit_aim threshold nan": (_estimate.audit_aim, ([1, 0], [0.9, 0.1], [1.0, 1.0], [0.2, 0.9], [0.1, 0.1]),
                                {"threshold": NAN}, r"threshold\[0\] = nan"),
    "RiskPlateau sum inf": (lambda: _stopping.RiskPlateau().update([1e308, 1e308]), (), {}, "the risks add up to inf"),
    # kept
    "estimate y 2": (estimate_quality, ([1, 2], [0.5, 0.5], [1, 1]), {}, r"y_audit\[1\] = 2.0"),
    "estimate proba 1.5": (estimate_quality, ([1, 0], [1.5, 0.5], [1, 1]), {}, r"proba_audit\[0\] = 1.5"),
    "estimate lengths": (estimate_quality, ([1, 0], [0.5], [1, 1]), {}, "one value per audit draw"),
    "estimate 2-D": (estimate_quality, ([[1, 0]], [[0.5, 0.5]], [[1, 1]]), {}, "one-dimensional"),
    "estimate confidence 1": (estimate_quality, ([1], [0.5], [1]), {"confidence": 1.0}, "confidence must be"),
    "estimate threshold nan": (estimate_quality, ([1], [0.5], [1]), {"threshold": NAN}, r"threshold\[0\] = nan"),
    "estimate proba_all empty": (estimate_quality, ([1], [0.5], [1]), {"proba_all": []}, "proba_all is empty"),
    "audit_sample n 0": (audit_sample, ([0.5],), {"n": 0}, "n must be a positive integer"),
    "audit_sample floor 0": (audit_sample, ([0.5],), {"n": 1, "floor": 0.0}, r"floor must be a number in \(0, 1\]"),
    "audit_design empty": (_estimate.audit_design, ([],), {"method": "score"}, "proba is empty"),
    "choose se nan": (choose_threshold, ([1, 0], [0.9, 0.1], [1, 1]), {"se_tolerance": NAN}, "se_tolerance must be"),
    "choose target 0": (choose_threshold, ([1, 0], [0.9, 0.1], [1, 1]), {"target": {"precision": 0}}, "target must be"),
    "compare lengths": (compare_f1, ([1, 0], [0.9, 0.1], [0.9], [1, 1]), {}, "proba_b has 1 values"),
    "StabilisingPredictions nan": (lambda: _stopping.StabilisingPredictions().update([0.2, NAN]), (), {},
                                   r"predictions\[1\] = nan"),
    "RiskPlateau negative": (lambda: _stopping.RiskPlateau().update([0.1, -1.0]), (), {}, r"risk\[1\] = -1.0"),
    "RiskPlateau tol nan": (lambda: _stopping.RiskPlateau(tol=NAN).update([0.1]), (), {},
                            r"tol must be a number in \[0, 1\]"),
    "cohen_kappa empty": (_stopping.cohen_kappa, ([], []), {}, "two non-empty labelings"),
}


@pytest.mark.parametrize("case", list(QUALITY_CASES))
def test_every_quality_function_refuses_degenerate_numbers_by_name(case):
    fn, args, kw, expected = QUALITY_CASES[case]
    with pytest.raises(ValueError, match=expected):
        fn(*args, **kw)


def test_degenerate_but_valid_numbers_give_correct_answers():
    # a zero-length audit: nothing known, the widest intervals
    est = estimate_quality([], [], [])
    assert np.isnan(est.f1) and est.f1_interval == (0.0, 1.0)
    assert np.isnan(compare_f1([], [], [], [])[0])
    # one answer, tiny weights: the same as weight 1
    assert estimate_quality([1], [0.9], [1e-300]).f1_interval == estimate_quality([1], [0.9], [1.0]).f1_interval
    assert _estimate.more_answers(0, (0.0, 1.0)) == 0 and _estimate.more_answers(10, (0.0, 1.0)) == 240
    # None / nan is "not known": go on, no error
    assert confirm_stop(True, None, None, **GOOD)[0] is False
    assert confirm_stop(True, NAN, (-0.1, 0.1), **GOOD)[0] is False
    assert _stopping.cohen_kappa([True, False], [True, False]) == 1.0
    assert _stopping.RiskPlateau().update([1e-300] * 3).totals_ == [3e-300]


# ---------------------------------------------------------------------------------- the pool queries
@pytest.fixture(scope="module")
def tiny_scorer():
    rng = np.random.RandomState(0)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta", "zeta", "iota"]
    left = pd.DataFrame({"name": [f"{w} {rng.choice(words)}" for w in words]}, index=[f"a{i}" for i in range(10)])
    right = pd.DataFrame({"name": [f"{w} {rng.choice(words)}" for w in words[::-1]]},
                         index=[f"b{i}" for i in range(10)])
    pairs = [(f"a{i}", f"b{j}", int(i == 9 - j)) for i in range(10) for j in range(10)
             if (i + j) % 3 == 0 or i == 9 - j]
    ds = PairDataset.from_frames(left, right, pairs)
    sf = SimilarityFeatures(metrics=["jaccard", "jaro_winkler"]).fit(ds.to_frame())
    matcher = FeatureMatcher(random_state=0).fit(sf.transform(ds.to_frame()), ds.y)
    return ChunkScorer(left, right, features=sf, matcher=matcher)


def _dup_pool():
    """30 pairs in 10 chunks of 3; every pair is one of 6 distinct pairs (each in 5 chunks)."""
    base = pd.DataFrame({"left_id": [f"a{i}" for i in range(6)], "right_id": [f"b{5 - i}" for i in range(6)]})
    return [base.iloc[[k % 6, (k + 1) % 6, (k + 2) % 6]].reset_index(drop=True) for k in range(0, 30, 3)]


def test_a_pair_in_several_chunks_is_chosen_once(tiny_scorer):
    """Item 6: 8 of the 10 pairs chosen were duplicates."""
    chunks = _dup_pool()
    sampler = RiskSampler(selector=TopKSelector(weighting="lipschitz"))
    q = stream_query(tiny_scorer, chunks, labelled=None, n_instances=5, sampler=sampler, random_state=0,
                     progress=False)
    keys = list(zip(q.pairs["left_id"], q.pairs["right_id"]))
    assert len(keys) == 5 and len(set(keys)) == 5
    whole = pd.concat(chunks, ignore_index=True)
    # each at its first row in the source, and the same batch as the distinct pairs given once
    firsts = whole.reset_index().drop_duplicates(["left_id", "right_id"]).set_index(["left_id", "right_id"])
    assert [firsts.loc[k, "index"] for k in keys] == q.positions.tolist()
    once = stream_query(tiny_scorer, whole.drop_duplicates(), labelled=None, n_instances=5, sampler=sampler,
                        random_state=0, progress=False)
    assert keys == list(zip(once.pairs["left_id"], once.pairs["right_id"]))
    # within one chunk, too
    one = stream_query(tiny_scorer, whole, labelled=None, n_instances=5, sampler=sampler, random_state=0,
                       chunk_size=len(whole), progress=False)
    assert keys == list(zip(one.pairs["left_id"], one.pairs["right_id"]))


def test_a_dask_pool_with_repeated_pairs_chooses_each_once(tiny_scorer):
    dask = pytest.importorskip("dask", reason="needs the optional extra skrisk[dask]")
    dd = pytest.importorskip("dask.dataframe", reason="needs the optional extra skrisk[dask]")
    from skrisk.pools import dask_query

    whole = pd.concat(_dup_pool(), ignore_index=True)
    with dask.config.set(scheduler="synchronous"):
        q = dask_query(tiny_scorer, dd.from_pandas(whole, npartitions=4), labelled=None, n_instances=5,
                       sampler=RiskSampler(selector=TopKSelector(weighting="lipschitz")), random_state=0, progress=False)
    keys = list(zip(q.pairs["left_id"], q.pairs["right_id"]))
    assert len(set(keys)) == 5


@pytest.mark.parametrize("kw, error, expected", [
    ({"n_instances": 0}, ValueError, "n_instances must be a positive int"),
    ({"n_instances": -1}, ValueError, "n_instances must be a positive int"),
    ({"n_instances": True}, ValueError, "n_instances must be a positive int"),
    ({"n_instances": 2.5}, ValueError, "n_instances must be a positive int"),
    ({"n_instances": 5, "chunk_size": 0}, ValueError, "chunk_size must be a positive int"),
    ({"n_instances": 5, "chunk_size": NAN}, ValueError, "chunk_size must be a positive int"),
    ({"n_instances": 10**12}, EmptyPoolError, "fewer than n_instances=1000000000000"),
    ({"n_instances": 7}, EmptyPoolError, "holds 6 distinct pairs after filtering"),  # 30 pairs, 6 distinct
])
def test_stream_query_degenerate_numbers(tiny_scorer, kw, error, expected):
    with pytest.raises(error, match=expected):
        stream_query(tiny_scorer, _dup_pool(), labelled=None, sampler=RiskSampler(selector=TopKSelector(weighting="lipschitz")),
                     random_state=0, progress=False, **kw)


def test_pool_degenerate_numbers_kept(tiny_scorer):  # (kept): each was refused, or right, before
    with pytest.raises(ValueError, match=r"threshold must be a number in \[0, 1\]"):
        ChunkScorer(tiny_scorer.left, tiny_scorer.right, features=tiny_scorer.features,
                    matcher=tiny_scorer.matcher, threshold=NAN)
    pool = pd.concat(_dup_pool(), ignore_index=True)
    bad = pool.copy()
    bad.loc[4, "left_id"] = np.nan
    kw = {"labelled": None, "n_instances": 2, "progress": False}
    with pytest.raises(DataError, match="left_id is missing at pool row 4"):
        stream_query(tiny_scorer, bad, **kw)
    with pytest.raises(EmptyPoolError, match="the pool is empty after filtering"):
        stream_query(tiny_scorer, pool.iloc[:0], **kw)
    for preselect in (NAN, 0.5):
        with pytest.raises(ValueError, match="The 'preselect' parameter of KMedoidsSelector"):
            stream_query(tiny_scorer, pool, sampler=RiskSampler(selector=KMedoidsSelector(preselect=preselect)), **kw)
    huge = stream_query(tiny_scorer, pool, sampler=RiskSampler(selector=KMedoidsSelector(preselect=1e300)), **kw)
    assert huge.n_candidates == 6  # every distinct pair, no allocation of 1e300
    assert len(tiny_scorer.score(pool.iloc[:0])) == 0


# ---------------------------------------------------------------------------------- the journal
def _session(tmp_path, monkeypatch, capsys):
    args = write_tables(tmp_path / "t")
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session), "--initial", "2", "--batch", "4",
                                          "--audit", "0"], ["y", "n", "y", "q"])
    assert rc == 0, cap.err
    return session


def _append(session, **fields):
    path = session / "journal.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    last = json.loads(lines[-1])
    ev = {"seq": last["seq"] + 1, "t": last["t"], "session": last["session"], **fields}
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(ev) + "\n")
    return len(lines) + 1


def _batch(session):
    return next(json.loads(x) for x in (session / "journal.jsonl").read_text(encoding="utf-8").splitlines()
                if '"event":"batch"' in x)


def test_an_unknown_event_kind_is_refused_naming_the_line(tmp_path, monkeypatch, capsys):
    """Item 7: an event "grant" with a valid identity and sequence was accepted without a word."""
    session = _session(tmp_path, monkeypatch, capsys)
    line = _append(session, event="grant", left_id="1", right_id="10")
    before = (session / "journal.jsonl").read_bytes()
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["q"])
    assert rc == 2
    assert f"line {line}, is not a valid journal line: its event kind 'grant' is not one of" in cap.err
    assert (session / "journal.jsonl").read_bytes() == before


@pytest.mark.parametrize("forge, expected", [
    ({"probability": 1.7}, "probability 1.7 is not a number in [0, 1]"),
    ({"probability": NAN}, "probability nan is not a number in [0, 1]"),
    ({"risk": INF}, "risk inf is not a finite number"),
    ({"prediction": 7}, "prediction 7 is not 0 or 1"),
    ({"probability": 0.1, "prediction": 1}, "prediction 1 disagrees with its probability 0.1"),
    ({"explanation": 5}, "explanation 5 is not a text"),
])
def test_a_forged_batch_line_is_refused_where_it_can_be_told(tmp_path, monkeypatch, capsys, forge, expected):
    """Item 7: a forged batch (another prediction, risk, explanation) was accepted; what can be
    checked is now (fields, types, ranges, agreement, candidates); the rest needs a signature."""
    session = _session(tmp_path, monkeypatch, capsys)
    batch = _batch(session)
    item = {"left_id": "3", "right_id": "30", "probability": 0.9, "prediction": 1, "risk": 0.2,
            "explanation": "forged", "reasons": []}
    line = _append(session, event="batch", phase="risk", round=batch["round"] + 9, items=[{**item, **forge}])
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["q"])
    assert rc == 2
    assert f"line {line}" in cap.err and expected in cap.err, cap.err
    # a well-formed forged line is read: no signature tells it apart (SECURITY.md)
    rc, cap = label(monkeypatch, capsys, ["--session", str(session), "--repair-journal"], ["q"])
    assert rc == 0, cap.err


def test_a_batch_of_pairs_that_are_not_candidates_is_refused(tmp_path, monkeypatch, capsys):  # (kept)
    session = _session(tmp_path, monkeypatch, capsys)
    _append(session, event="batch", phase="risk", round=9, items=[{"left_id": "1", "right_id": "60"}])
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["q"])
    assert rc == 2 and "pairs that are not candidates of this session, e.g. ('1', '60')" in cap.err


def test_a_well_formed_batch_line_is_still_read(tmp_path, monkeypatch, capsys):  # (kept)
    session = _session(tmp_path, monkeypatch, capsys)
    batch = _batch(session)
    _append(session, event="batch", phase="risk", round=batch["round"] + 9,
            items=[{"left_id": "3", "right_id": "30", "probability": 0.9, "prediction": 1, "risk": 0.2,
                    "explanation": "x", "reasons": []}])
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["q"])
    assert rc == 0, cap.err


# ---------------------------------------------------------------------------------- the strategies
def _learner(frame=False):
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(60, 4))
    y = (X[:, 0] > 0.5).astype(int)
    X_lab = pd.DataFrame(X, columns=["f0", "f1", "f2", "f3"]) if frame else X
    return ActiveLearner(FeatureMatcher(random_state=0), entropy_sampling, X_training=X_lab, y_training=y), rng


@pytest.mark.parametrize("value", [1e39, -3.5e38])
def test_pool_values_beyond_float32_name_the_row_and_column(value):
    """Item 14 (pool part): scikit-learn's "too large for dtype('float32')", with no row or column."""
    learner, rng = _learner()
    pool = rng.uniform(size=(30, 4))
    pool[7, 2] = value
    with pytest.raises(DataError, match=r"beyond float32.*first at row 7 \(column 2: "):
        entropy_sampling(learner, pool, n_instances=2)
    learner, rng = _learner(frame=True)
    frame = pd.DataFrame(pool, columns=["f0", "f1", "f2", "f3"])
    with pytest.raises(DataError, match=r"beyond float32.*first at row 7 \(column 'f2': "):
        entropy_sampling(learner, frame, n_instances=2)


def test_an_ndarray_x_valid_beside_a_dataframe_pool_says_how_to_encode_it():
    """Item 15 (the third): the mismatch error said "encode it exactly as the labelled pairs"."""
    learner, rng = _learner(frame=True)
    sampler = RiskSampler(X_valid=rng.uniform(size=(40, 4)), y_valid=np.r_[np.zeros(20), np.ones(20)].astype(int),
                          random_state=0)
    pool = pd.DataFrame(rng.uniform(size=(30, 4)), columns=["f0", "f1", "f2", "f3"])
    with pytest.raises(ValueError, match=r"X_valid is an array.*pandas.DataFrame\(X_valid, "
                                         r"columns=\['f0', 'f1', 'f2', 'f3'\]\)"):
        sampler(learner, pool, n_instances=2)
