"""What a labelling session knows about its matcher: audits, estimates, threshold, stopping advice.

The session calls this module from few places:

* after training the matcher of a risk round, :func:`round_status` estimates the matcher's
  precision, recall and F1 on the whole candidate set from the audit answers so far, chooses the
  threshold (0.5 unless the audit shows another is better), feeds both stopping rules, and draws the next audit pairs;
  the result is stored in the round's ``batch`` event (``"status"`` and ``"audit_draws"``), so a
  resumed session rebuilds everything from its journal, and :func:`status_lines` prints it;
* once that round's questions are answered, :func:`audit_batch` turns the stored draws into a
  ``batch`` event of phase ``"audit"`` (the pairs whose label is not known yet);
* :func:`audit_keys` tells which answered pairs are audit answers that train nothing: audited
  pairs stay in the pool, and one that a later round picks is trained on with its audit answer
  (not asked again), so the matchers do not depend on which pairs were audited;
* :func:`export_threshold` chooses the threshold of ``predicted_matches.csv``;
  :func:`current_threshold` is the one chosen at the last round (for a saved model).

The stopping advice of the two rules stands only when :func:`skrisk.quality.confirm_stop` agrees:
each round keeps its matcher's decisions on every candidate (``decisions``: the bits of
``p > 0.5``, compressed), and a round compares its F1 with the matcher of :data:`GAIN_ROUNDS`
rounds (about 100 labels) before, model-assisted, on all the audit draws
(:func:`skrisk.quality.compare_f1` with ``proba_all_a`` and ``proba_all_b``): the high end of the
gain's interval must be at most :data:`MAX_GAIN` per :data:`GAIN_PACE` labels, in :data:`HOLD_ROUNDS`
risk rounds in a row (each round's ``check_passed`` is journaled). A journal written before
``decisions`` were kept resumes; its old rounds give no gain, so the advice waits until the
session has :data:`GAIN_ROUNDS` + :data:`HOLD_ROUNDS` - 1 new rounds, and says so.

The audit draws pairs with replacement, aimed by LearnRisk's risk of the round's matcher with a
10 % uniform floor (:func:`skrisk.quality.audit_sample`); each draw keeps its probability ``q``,
so draws of every round combine into one unbiased estimate for the current matcher. From 10
audited matches on, the estimate is model-assisted (the matcher's probability of every candidate,
calibrated on the audit, plus the audit's residuals), and that calibrated probability aims the
next draws (``audit_aim``); old journals resume with both. Draws answered "unsure" are left out.
"""

from __future__ import annotations

import base64
import zlib
from typing import Any, Protocol

import numpy as np

from ..exceptions import DataError
from ..matchers._base import MATCH_THRESHOLD
from ..quality._stopping import RiskPlateau, StabilisingPredictions
from ..quality._estimate import audit_aim, more_answers
from ..quality import audit_sample, choose_threshold, compare_f1, confirm_stop, estimate_quality
from ._config import SessionConfig, parse_target
from ._journal import Journal, SessionState

__all__ = [
    "AUDIT_HELP",
    "AuditSource",
    "MIN_AUDIT",
    "audit_batch",
    "audit_keys",
    "current_threshold",
    "export_threshold",
    "round_status",
    "status_lines",
]

#: Labelled audit draws needed before an estimate is shown.
MIN_AUDIT = 10
#: Size of the stop set of the stabilising-predictions rule.
STOP_SET = 1000
#: Uniform share of every audit draw (bounds each importance weight by 10).
FLOOR = 0.1
#: The stopping advice needs the audit to show that the matcher of this many risk rounds before
#: was at most :data:`MAX_GAIN` F1 per :data:`GAIN_PACE` labels worse (the high end of the
#: model-assisted gain's interval; :func:`skrisk.quality.confirm_stop`), in :data:`HOLD_ROUNDS`
#: risk rounds in a row: a span long enough that a few labels' luck does not decide, and a run of
#: rounds so that one lucky comparison does not stop a session.
GAIN_ROUNDS = 10
MAX_GAIN = 0.01
GAIN_PACE = 100
HOLD_ROUNDS = 3
#: The half-width of a 90 % interval the audit aims at (and the widest F1 interval at which
#: stopping is advised); wider than :data:`UNSURE`, a measure is shown as "not enough audit
#: answers to say".
AIM = 0.1
UNSURE = 0.25

AUDIT_HELP = (
    "After each risk-sampling round the session asks a few audit pairs (--audit K, 0 to turn it off): "
    "drawn at random, more often where the risk of a wrong prediction is high, they estimate the "
    "matcher's precision and recall on all candidate pairs. An audit answer trains the matcher only "
    "if risk sampling picks that pair later (then it is not asked again), as it would without the audit."
)


class AuditSource(Protocol):
    """What this module reads of a session: its candidates, answers, batches and parameters
    (:class:`skrisk.labelling._round.SessionRound` has them)."""

    keys: list[tuple[str, str]]
    position: dict[tuple[str, str], int]
    given: dict[tuple[str, str], int]
    config: SessionConfig

    @property
    def state(self) -> SessionState: ...

    @property
    def journal(self) -> Journal: ...

    def labels(self) -> dict[tuple[str, str], int]: ...


def audit_keys(session: AuditSource) -> set[tuple[str, str]]:
    """Pairs asked in an audit batch and never picked for training: their answers train nothing.

    An audited pair stays in the pool: when risk sampling (or a starting batch) picks it later, its
    audit answer is reused as a training label, exactly as if it had been asked then. So the
    matchers the session trains do not depend on which pairs were audited, and the audit remains an
    unbiased sample of their mistakes (keeping audited pairs out of the pool would leave their
    errors unfixed while training fixes similar pairs elsewhere, and bias the estimates).
    """
    audited, picked = set(), set()
    for b in session.state.batches:
        keys = {(str(i["left_id"]), str(i["right_id"])) for i in b.get("items", [])}
        (audited if b.get("phase") == "audit" else picked).update(keys)
    return audited - picked


def _bad(session: AuditSource, seq: Any, what: str) -> DataError:
    return DataError(
        f"{session.journal.path}: the audit batch with seq {seq} is damaged ({what}). Restore the journal "
        "from a backup, or delete that line (its answers stay in the journal but no longer count as audit "
        "answers)."
    )


def _draws(session: AuditSource) -> list[tuple[int, float]]:
    """``(candidate position, q)`` of every audit draw of the emitted audit batches, checked."""
    n = len(session.keys)
    out = []
    for b in session.state.batches:
        if b.get("phase") != "audit":
            continue
        draws = b.get("draws")
        if not isinstance(draws, list):
            raise _bad(session, b.get("seq"), "no list of draws")
        for d in draws:
            if not isinstance(d, dict):
                raise _bad(session, b.get("seq"), "a draw is not an object")
            key = (d.get("left_id"), d.get("right_id"))
            q = d.get("q")
            if key not in session.position:
                raise _bad(session, b.get("seq"), f"the drawn pair {key} is not a candidate")
            if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 < q <= 1:
                raise _bad(session, b.get("seq"), f"the draw probability {q!r} of pair {key} is not in (0, 1]")
            if d.get("n") != n:
                raise _bad(session, b.get("seq"), f"it was drawn among {d.get('n')!r} candidates, not {n}")
            out.append((session.position[key], float(q)))  # type: ignore[index]
    return out


def _known_draws(session: AuditSource) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Of the audit draws whose label is known: their index among all draws (in journal order),
    candidate positions, labels and weights; and the number of draws."""
    answers = session.state.labels()
    draws = _draws(session)
    idx, pos, y, w = [], [], [], []
    for j, (i, q) in enumerate(draws):
        key = session.keys[i]
        lab = session.given.get(key, answers.get(key))
        if lab is None:  # unsure, or not answered yet
            continue
        idx.append(j)
        pos.append(i)
        y.append(lab)
        w.append(1.0 / (len(session.keys) * q))
    return (np.asarray(idx, dtype=np.intp), np.asarray(pos, dtype=np.intp), np.asarray(y, dtype=float),
            np.asarray(w, dtype=float), len(draws))


def _audit_data(session: AuditSource, proba: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Labels, probabilities and weights of the audit draws whose label is known; and the draws."""
    _, pos, y, w, n = _known_draws(session)
    return y, np.asarray(proba, dtype=float)[pos], w, n


def _encode_decisions(proba: np.ndarray) -> str:
    """The decisions ``p > 0.5`` on every candidate, as text for the journal: their number, then
    the packed bits, zlib, base64 (a few kB for 100,000 candidates with few predicted matches)."""
    bits = np.packbits(np.asarray(proba) > MATCH_THRESHOLD).tobytes()
    return f"{len(proba)}:" + base64.b64encode(zlib.compress(bits, 9)).decode("ascii")


def _decode_decisions(text: Any, n: int) -> np.ndarray | None:
    """:func:`_encode_decisions` read back for ``n`` candidates; None when unreadable or of
    another size (never more than ``n / 8`` bytes are inflated)."""
    if not isinstance(text, str) or text.partition(":")[0] != str(n):
        return None
    size = (n + 7) // 8
    try:
        inflate = zlib.decompressobj()
        raw = inflate.decompress(base64.b64decode(text.partition(":")[2].encode("ascii"), validate=True), size + 1)
    except (ValueError, zlib.error):
        return None
    if len(raw) != size or not inflate.eof:
        return None
    return np.unpackbits(np.frombuffer(raw, dtype=np.uint8))[:n].astype(bool)


def _decisions_before(session: AuditSource, rounds: int, what: str) -> tuple[dict | None, np.ndarray | None, str]:
    """The risk batch of ``rounds`` risk rounds before and its decisions on every candidate; or
    None, None and why not (too few rounds yet, or none kept), a text starting with ``what``."""
    risk = [b for b in session.state.batches if b.get("phase") == "risk" and isinstance(b.get("status"), dict)]
    if len(risk) < rounds:
        return None, None, f"{what}: not known until {rounds} risk sampling rounds have passed ({len(risk)} so far)"
    then = risk[-rounds]
    old = _decode_decisions(then["status"].get("decisions"), len(session.keys))
    if old is None:
        return None, None, (f"{what}: not known, the matcher of {rounds} rounds before (journal seq "
                            f"{then.get('seq')}) has no decisions kept (a journal written before they were, "
                            f"or damaged); the check starts {rounds} rounds after it")
    return then, old, ""


def _gain(session: AuditSource, proba: np.ndarray) -> tuple[dict | None, str]:
    """The F1 gained since the matcher of :data:`GAIN_ROUNDS` risk rounds before, model-assisted
    on all audit draws (that round's ``decisions`` on every candidate); or None and why not."""
    then, old, why = _decisions_before(session, GAIN_ROUNDS, f"F1 gained over the last {GAIN_ROUNDS} rounds")
    if then is None or old is None:
        return None, why
    _, pos, y, w, _ = _known_draws(session)
    proba = np.asarray(proba, dtype=float)
    g, (lo, hi) = compare_f1(y, proba[pos], old[pos].astype(float), w, proba_all_a=proba,
                             proba_all_b=old.astype(float)) if len(y) else (float("nan"), (-1.0, 1.0))
    if not np.isfinite(g):
        return None, (f"F1 gained over the last {GAIN_ROUNDS} rounds: not enough audit answers to say "
                      f"({int(y.sum())} audited matches)")
    labels = max(len(session.labels()) - int(then.get("n_labels", 0)), 0)  # answers re-given "unsure" may lower it
    return {"labels": labels, "gain": round(g, 4), "interval": [round(lo, 4), round(hi, 4)],
            "n_audit": int(len(y)), "rounds": GAIN_ROUNDS}, ""


def _stop_set(session: AuditSource) -> np.ndarray:
    n = len(session.keys)
    rng = np.random.RandomState(np.random.SeedSequence([int(session.config.seed), 7]).generate_state(1)[0])
    return np.arange(n) if n <= STOP_SET else np.sort(rng.choice(n, size=STOP_SET, replace=False))


def _rules(session: AuditSource) -> tuple[StabilisingPredictions, RiskPlateau]:
    """Both stopping rules fed with the statuses stored in the journal's risk batches."""
    stab = StabilisingPredictions(window=3, agreement=0.99, sample_size=STOP_SET)
    plateau = RiskPlateau(window=3, tol=0.05)
    size = len(_stop_set(session))
    for b in session.state.batches:
        st = b.get("status")
        if b.get("phase") != "risk" or not isinstance(st, dict):
            continue
        try:
            bits = np.unpackbits(np.frombuffer(bytes.fromhex(st["stop_predictions"]), dtype=np.uint8))[:size]
            total = float(st["expected_errors"])
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(
                f"{session.journal.path}: the status of the risk batch with seq {b.get('seq')} is damaged "
                f"({exc!r}). Restore the journal from a backup, or delete the \"status\" of that line."
            ) from None
        if len(bits) == size and np.isfinite(total) and total >= 0:
            stab.update(bits)
            plateau.update([total])
    return stab, plateau


def round_status(
    session: AuditSource,
    proba: np.ndarray,
    risk: np.ndarray,
    pool_risk: np.ndarray,
    n_free: int,
    round_no: int,
    seed: int,
) -> tuple[dict, list[dict]]:
    """The status of a freshly trained matcher, and the audit draws of the round.

    Parameters
    ----------
    proba, risk : ndarray of shape (n_candidates,)
        The matcher's match probability and the risk of every candidate pair.
    pool_risk : ndarray
        Risks of the (subset of the) unlabelled pool risk sampling scored.
    n_free : int
        Unlabelled pairs in all.
    round_no, seed : int
        The round, and the seed of its audit draw.

    Returns
    -------
    status : dict
        JSON-ready: ``estimate`` (or None), ``threshold``, ``threshold_estimate``, ``n_audit``,
        ``gain`` (the F1 gained since :data:`GAIN_ROUNDS` rounds before, on the audit, or None,
        and ``gain_note``, why not), ``decisions`` (this matcher's decisions on every candidate,
        :func:`_encode_decisions`), ``stop_predictions`` (hex bits), ``expected_errors``, ``audit_aim``;
        :func:`status_lines` adds ``stabilizing``, ``plateau`` and ``confirm`` (texts),
        ``rules_fire``, ``check_passed`` (this round's check) and ``stop`` (bool: the check passed
        in :data:`HOLD_ROUNDS` rounds in a row).
    draws : list of dict
        ``left_id``, ``right_id``, ``q`` and ``n`` of every audit draw (empty with ``audit=0``).
    """
    y, p, w, n_draws = _audit_data(session, proba)
    status: dict[str, Any] = {"n_audit": int(len(y)), "n_draws": n_draws, "estimate": None,
                              "threshold": MATCH_THRESHOLD, "threshold_estimate": None, "audit_aim": "risk"}
    if len(y) >= MIN_AUDIT:
        # model-assisted from 10 audited matches on (skrisk.quality.estimate_quality)
        status["estimate"] = estimate_quality(y, p, w, proba_all=proba).to_dict()
        if y.sum() > 0:
            choice = choose_threshold(y, p, w, target=_target(session), proba_all=proba)
            status["threshold"] = round(choice.threshold, 4)
            status["threshold_estimate"] = choice.estimate.to_dict()
            status["threshold_met"] = bool(choice.met)
    status["gain"], status["gain_note"] = _gain(session, proba)
    status["decisions"] = _encode_decisions(proba)
    pred = (proba[_stop_set(session)] > MATCH_THRESHOLD).astype(np.uint8)
    status["stop_predictions"] = np.packbits(pred).tobytes().hex()
    status["expected_errors"] = round(float(np.mean(pool_risk)) * n_free, 3) if len(pool_risk) else 0.0
    draws: list[dict] = []
    k = int(getattr(session.config, "audit", 0))
    if k > 0:
        # the recalibrated matcher once the estimate is model-assisted; each draw keeps its q (rounds combine)
        risk, status["audit_aim"] = audit_aim(y, p, w, proba, risk, threshold=MATCH_THRESHOLD)
        s = audit_sample(proba, risk=risk, n=k, method="risk", floor=FLOOR, random_state=seed)
        draws = [{"left_id": session.keys[i][0], "right_id": session.keys[i][1], "q": float(q), "n": len(proba)}
                 for i, q in zip(s.positions.tolist(), s.probabilities.tolist())]
    return status, draws


def status_lines(session: AuditSource, status: dict) -> list[str]:
    """What the session prints after training a round's matcher (the batch is not yet journaled)."""
    stab, plateau = _rules(session)
    stop_bits = np.unpackbits(np.frombuffer(bytes.fromhex(status["stop_predictions"]), dtype=np.uint8))
    stab.update(stop_bits[: len(_stop_set(session))])
    plateau.update([status["expected_errors"]])
    status["stabilizing"], status["plateau"] = stab.state_text(), plateau.state_text()
    status["rules_fire"] = bool(stab.should_stop or plateau.should_stop)
    g = status.get("gain")
    est = status.get("estimate") or {}
    f1_iv = est.get("f1_interval") if est.get("f1") is not None else None
    if g is None:
        status["check_passed"], status["confirm"] = False, f"{status.get('gain_note') or 'F1 gained: not known'}: go on."
    else:
        status["check_passed"], status["confirm"] = confirm_stop(
            status["rules_fire"], g["gain"], tuple(g["interval"]), labels=g["labels"],
            f1_interval=tuple(f1_iv) if f1_iv else None, n_matches=int(est.get("n_matches", 0)),
            max_gain=MAX_GAIN, max_half_width=AIM, per_labels=GAIN_PACE)
    streak = _streak(session, status["check_passed"])
    status["stop"] = streak >= HOLD_ROUNDS
    if status["check_passed"] and not status["stop"]:
        status["confirm"] = (status["confirm"].removesuffix(": recommends stopping.")
                             + f", in {streak} of the {HOLD_ROUNDS} rounds in a row it needs: go on.")
    lines = []
    est = status.get("estimate")
    k = int(getattr(session.config, "audit", 0))
    if est is None:
        need = MIN_AUDIT - status["n_audit"]
        lines.append(
            f"Estimate: {status['n_audit']} audit answer(s) so far, {need} more needed before precision and "
            "recall can be estimated" + ("." if k > 0 else " (audits are off: resume with --audit 5).")
        )
    elif est["n_matches"] == 0:
        lines.append(
            f"Estimate: none of the {est['n_audit']} audit answers is a match yet, so precision and recall "
            "cannot be estimated (matches are rare among the candidates; the audits go on)."
        )
    else:
        rough = " (rough: under 30 audit answers, errors the risk misses may not be seen yet)" if (
            est["n_audit"] < 30) else ""
        lines.append(
            f"Estimated on all candidate pairs from {est['n_audit']} audit answers (90 % intervals): "
            + "; ".join(_measure_words(est, m, name) for m, name in MEASURE_NAMES) + f"{rough}."
        )
        te = status.get("threshold_estimate")
        if te is not None:
            met = "" if status.get("threshold_met", True) else " (not reached: the closest threshold)"
            lines.append(
                f"Threshold for {_target_words(session)}{met}: p > {status['threshold']:.2f} (precision "
                f"{te['precision'] or 0:.2f}, recall {te['recall'] or 0:.2f}, F1 {te['f1'] or 0:.2f}); "
                "exports use it."
            )
    lines.append(f"Stopping rule 1, {status['stabilizing']}")
    lines.append(f"Stopping rule 2, {status['plateau']}")
    lines.append(f"Stopping check, {status['confirm']}")
    if status["stop"]:
        lines.append(
            f"Advice: a stopping rule fires and the audit shows, in {HOLD_ROUNDS} rounds in a row, that the last "
            "labels gained little F1: press e to export and q to quit (or go on)."
        )
    return lines


def _streak(session: AuditSource, passed: bool) -> int:
    """Risk rounds in a row, this one included, whose stopping check passed (0 if this one's did
    not); a round journaled without ``check_passed`` (an older journal), or with a damaged status,
    counts as not passed."""
    if not passed:
        return 0
    n = 1
    for b in reversed(session.state.batches):
        if b.get("phase") != "risk":
            continue
        st = b.get("status")
        if not isinstance(st, dict) or st.get("check_passed") is not True:
            break
        n += 1
    return n


MEASURE_NAMES = (("precision", "precision"), ("recall", "recall"), ("f1", "F1"))


def _measure_words(est: dict, m: str, name: str) -> str:
    """One measure of an estimate in plain words: its value and interval, or that the audit
    cannot say yet, and how many more answers would narrow it to about ± :data:`AIM`."""
    v, (lo, hi) = est[m], est[f"{m}_interval"]
    if v is None:
        return f"{name}: not estimable yet"
    more = more_answers(est["n_audit"], (lo, hi), AIM)
    narrow = f", {more} more would narrow it to about ±{AIM:g}" if more else ""
    if (hi - lo) / 2 > UNSURE:
        return f"{name}: not enough audit answers to say ({lo:.2f}-{hi:.2f}){narrow}"
    return f"{name} {v:.2f} ({lo:.2f}-{hi:.2f}{narrow})"


def audit_batch(session: AuditSource) -> dict | None:
    """The audit batch owed after the last risk round, or None (none drawn, or already asked)."""
    batches = session.state.batches
    if not batches or batches[-1].get("phase") != "risk":
        return None
    last = batches[-1]
    draws = last.get("audit_draws") or []
    if not draws:
        return None
    known = set(session.given) | set(session.state.answers)
    items, seen = [], set()
    for d in draws:
        key = (str(d.get("left_id")), str(d.get("right_id")))
        if key in known or key in seen or key not in session.position:
            continue
        seen.add(key)
        items.append({
            "left_id": key[0], "right_id": key[1],
            "explanation": (
                "An audit pair: drawn at random (more often where a wrong prediction is likely) to "
                "estimate precision and recall. Your answer trains the matcher only if risk sampling "
                "picks this pair later."
            ),
        })
    return {"phase": "audit", "round": last["round"], "items": items, "draws": draws}


def export_threshold(session: AuditSource, proba: np.ndarray) -> tuple[float, str]:
    """The threshold of ``predicted_matches.csv`` for the exported matcher, and a note on it."""
    try:
        y, p, w, _ = _audit_data(session, proba)
    except DataError as exc:
        return MATCH_THRESHOLD, f"threshold p > {MATCH_THRESHOLD}: the audit draws are unreadable: {exc}"
    if len(y) < MIN_AUDIT or y.sum() == 0:
        return MATCH_THRESHOLD, f"threshold p > {MATCH_THRESHOLD}: too few audit answers to choose one"
    c = choose_threshold(y, p, w, target=_target(session), proba_all=np.asarray(proba, dtype=float))
    met = "" if c.met else " (not reached: the closest threshold)"
    words = _target_words(session).removeprefix("estimated ")
    return c.threshold, (f"threshold p > {c.threshold:.2f}, chosen for {words}{met}, from "
                         f"{len(y)} audit answers")


def _target(session: AuditSource) -> Any:
    """The session's threshold target in :func:`~skrisk.quality.choose_threshold`'s form."""
    return parse_target(getattr(session.config, "target", "f1"))


def _target_words(session: AuditSource) -> str:
    t = _target(session)
    if t == "f1":
        return "F1 (0.5 unless the audit shows another is better)"
    (name, x), = t.items()
    return f"estimated {name} >= {x:g}"


def current_threshold(session: AuditSource) -> float:
    """The threshold chosen at the last risk round (what a saved model should carry), else 0.5."""
    for b in reversed(session.state.batches):
        st = b.get("status")
        if b.get("phase") == "risk" and isinstance(st, dict):
            t = st.get("threshold")
            if isinstance(t, (int, float)) and not isinstance(t, bool) and 0 <= t <= 1:
                return float(t)
            break
    return MATCH_THRESHOLD
