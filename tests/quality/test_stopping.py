"""Stopping rules (skrisk.quality)."""

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from skrisk.exceptions import DataError
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.quality._stopping import RiskPlateau, StabilisingPredictions, cohen_kappa


def test_kappa_matches_scikit_learn_and_handles_perfect_agreement():
    rng = np.random.RandomState(0)
    for _ in range(20):
        a, b = rng.randint(0, 2, 50), rng.randint(0, 2, 50)
        assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) == 1.0


def test_stabilizing_predictions_fires_after_window_agreeing_rounds():
    rng = np.random.RandomState(0)
    base = rng.uniform(size=5000)
    rule = StabilisingPredictions(window=3, agreement=0.99, sample_size=1000, random_state=0)
    rule.update(base)
    assert len(rule.stop_set_) == 1000 and not rule.should_stop
    noisy = np.where(rng.uniform(size=5000) < 0.2, 1 - base, base)  # a matcher that still changes
    rule.update(noisy)
    for _ in range(2):
        rule.update(noisy)
    assert not rule.should_stop and "go on" in rule.state_text()
    rule.update(noisy)  # kappas now 1, 1, 1
    assert rule.should_stop and rule.fired_at_ == 5
    assert "recommends stopping" in rule.state_text()


def test_stabilizing_predictions_refuses_another_pool_size():
    rule = StabilisingPredictions(random_state=0).update([0, 1, 1])
    with pytest.raises(DataError, match="first update had 3"):
        rule.update([0, 1])
    with pytest.raises(ValueError, match="window"):
        StabilisingPredictions(window=0).update([0, 1])


def test_risk_plateau():
    rule = RiskPlateau(window=2, tol=0.05)
    assert "not measured" in rule.state_text()
    rule.update(np.full(100, 0.5))
    rule.update(np.full(100, 0.3))
    rule.update(np.full(100, 0.29))
    assert not rule.should_stop
    rule.update(np.full(10, 0.29), n_pool=100)  # a subset of the pool: the total is scaled up
    assert rule.totals_[-1] == pytest.approx(29.0)
    assert rule.should_stop and rule.fired_at_ == 4 and "recommends stopping" in rule.state_text()
    rule.update(np.full(100, 0.1))  # a big fall: no longer flat
    assert not rule.should_stop and rule.fired_at_ == 4
    rising = RiskPlateau(window=2, tol=0.05)
    for total in (100.0, 130.0, 180.0):  # a total that jumps up is no plateau either
        rising.update([total])
    assert not rising.should_stop and rising.fired_at_ is None
    with pytest.raises(DataError, match=r"risk\[0\]"):
        rule.update([-1.0])


def test_confirm_stop_needs_a_rule_and_a_small_precise_gain():
    from skrisk.quality import confirm_stop

    f1 = (0.85, 0.93)
    assert confirm_stop(True, 0.002, (-0.004, 0.008), labels=30, f1_interval=f1, n_matches=40) == (
        True, "F1 gained by the last 30 labels, on the audit: +0.002 (-0.004 to +0.008): at most 0.01, and a "
        "stopping rule fires: recommends stopping.")
    stop, text = confirm_stop(False, 0.002, (-0.004, 0.008), labels=30, f1_interval=f1, n_matches=40)
    assert not stop and "no stopping rule fires: go on." in text
    stop, text = confirm_stop(True, 0.0, (-0.2, 0.2), labels=30, f1_interval=f1, n_matches=40)  # small, too uncertain to know it
    assert not stop and "possibly more than 0.01: go on." in text
    stop, text = confirm_stop(True, 0.05, (0.02, 0.08), labels=30, f1_interval=f1, n_matches=40)
    assert not stop and ": more than 0.01: go on." in text
    # a matcher that finds almost nothing gains nothing on an audit that cannot see it (Beer, issue #30)
    stop, text = confirm_stop(True, 0.0, (-0.003, 0.003), labels=30, f1_interval=(0.0, 0.45), n_matches=40)
    assert not stop and "the F1 estimate (0.00-0.45) is wider than ±0.1: too uncertain to know: go on." in text
    # a narrow F1 interval near 0 from 5 audited matches, one of them a heavily weighted missed match (Beer)
    stop, text = confirm_stop(True, 0.0, (-0.002, 0.002), labels=30, f1_interval=(0.002, 0.07), n_matches=5)
    assert not stop and "only 5 audited matches (fewer than 10): too few to know: go on." in text
    for gain, iv, f in ((None, None, f1), (float("nan"), (-1.0, 1.0), f1), (0.0, (0.0, 0.0), None)):
        stop, text = confirm_stop(True, gain, iv, labels=30, f1_interval=f, n_matches=40)  # zero matches audited, old rounds
        assert not stop and "not enough audit answers to say: go on." in text
    with pytest.raises(ValueError, match="max_gain"):
        confirm_stop(True, 0.0, (0.0, 0.0), labels=30, f1_interval=f1, n_matches=40, max_gain=2)


def test_confirm_stop_reads_max_gain_as_a_pace_per_labels():
    """The session's check: the gain over the last ~100 labels, at most 0.01 per 50 labels."""
    from skrisk.quality import confirm_stop

    f1 = (0.85, 0.93)
    stop, text = confirm_stop(True, 0.005, (-0.01, 0.019), labels=100, f1_interval=f1, n_matches=40, per_labels=50)
    assert stop and "at most 0.01 per 50 labels, and a stopping rule fires" in text
    stop, text = confirm_stop(True, 0.005, (-0.01, 0.019), labels=30, f1_interval=f1, n_matches=40, per_labels=50)
    assert not stop and text.endswith("possibly more than 0.01 per 50 labels: go on.")  # 0.019 in 30 labels is fast
    stop, text = confirm_stop(True, 0.03, (0.021, 0.04), labels=100, f1_interval=f1, n_matches=40, per_labels=50)
    assert not stop and text.endswith(": more than 0.01 per 50 labels: go on.")
    stop, _ = confirm_stop(True, 0.0, (0.0, 0.0), labels=0, f1_interval=f1, n_matches=40, per_labels=50)
    assert not stop  # no labels since: no pace to know
    for bad in (0, -5, 2.5, True):
        with pytest.raises(ValueError, match="per_labels"):
            confirm_stop(True, 0.0, (0.0, 0.0), labels=30, f1_interval=f1, n_matches=40, per_labels=bad)


def test_confirm_stop_waits_until_the_decisions_have_settled():
    """Issue #30, fifth part: with ``min_kappa`` the advice also needs the matcher's decisions on
    every candidate to agree with those of ``kappa_labels`` labels before (Cohen's kappa): on
    DBLP-Scholar the F1 gain looked flat for 200 labels while the matcher still moved, and rose
    again later."""
    from skrisk.quality import confirm_stop

    kw = {"labels": 100, "f1_interval": (0.85, 0.93), "n_matches": 40, "per_labels": 50}
    small = (True, 0.002, (-0.004, 0.008))
    assert confirm_stop(*small, **kw)[0]  # without min_kappa: as before, kappa is not asked
    assert confirm_stop(*small, **kw, kappa=0.5)[0]
    stop, text = confirm_stop(*small, **kw, kappa=0.975, min_kappa=0.98, kappa_labels=200)
    assert not stop and text.endswith(
        "but the matcher's decisions still change (kappa 0.975 on all candidates with the matcher of 200 labels "
        "before, 0.98 needed): go on.")
    stop, text = confirm_stop(*small, **kw, kappa=0.985, min_kappa=0.98, kappa_labels=200)
    assert stop and text.endswith(
        "at most 0.01 per 50 labels, the matcher's decisions have settled (kappa 0.985 on all candidates with the "
        "matcher of 200 labels before), and a stopping rule fires: recommends stopping.")
    for unknown in (None, float("nan")):  # too few rounds yet, or an old journal: never a stop
        stop, text = confirm_stop(*small, **kw, kappa=unknown, min_kappa=0.98, kappa_labels=200)
        assert not stop and text.endswith("but whether the matcher's decisions have settled is not known yet: go on.")
    # the rules, the gain and the F1 interval still come first
    stop, text = confirm_stop(False, 0.002, (-0.004, 0.008), **kw, kappa=0.999, min_kappa=0.98, kappa_labels=200)
    assert not stop and text.endswith("but no stopping rule fires: go on.")
    stop, text = confirm_stop(True, 0.03, (0.021, 0.04), **kw, kappa=0.999, min_kappa=0.98, kappa_labels=200)
    assert not stop and text.endswith(": more than 0.01 per 50 labels: go on.")
    for bad in (1.5, -0.1, True, "0.98"):
        with pytest.raises(ValueError, match="min_kappa"):
            confirm_stop(*small, **kw, kappa=0.99, min_kappa=bad, kappa_labels=200)
