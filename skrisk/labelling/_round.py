"""The training round of a labelling session: which pairs to ask next, and what the matcher learns.

A round trains the matcher on the labels in force, lets risk sampling
(:class:`~skrisk.strategies.RiskSampler`) pick the next pairs with LearnRisk's reasons, estimates
the matcher's quality from the audit answers and advises when to stop
(:mod:`skrisk.labelling._status`), and saves the round's model through the store. Before the
matcher can be trained, starting pairs of high and low average similarity are asked. Everything a
round decides is journaled by the caller (:class:`~skrisk.labelling.LabellingSession`) as a
``batch`` event, so a resumed session replays it; the console and the notebook labeller share it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..exceptions import DataError
from ..matchers._base import MATCH_THRESHOLD, match_labels
from ._config import SessionConfig
from ._journal import Journal, SessionState
from ._manifest import CANDIDATES
from ._status import audit_batch, audit_keys, export_threshold, round_status, status_lines
from ._store import SessionStore

__all__ = ["Question", "SessionRound"]


def _round_seed(seed: int, round_no: int, purpose: int) -> int:
    """A seed in [0, 2**32) for one round and one purpose, valid for every valid session seed."""
    return int(np.random.SeedSequence([int(seed), int(round_no), int(purpose)]).generate_state(1)[0])


def _cell(value: object) -> str:
    """A cell as compared: whitespace runs (newlines included) become one space; no escaping."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    return " ".join(str(value).split())


@dataclass(frozen=True)
class Question:
    """One pair the session asks about (:meth:`LabellingSession.next_question`).

    Attributes
    ----------
    left_id, right_id : str
        The pair.
    number, total : int
        Its place in its batch (1-based) and the batch's size.
    phase : str
        The batch's phase: ``"initial"`` (starting pairs picked by similarity) or ``"risk"``
        (picked by risk sampling) or ``"audit"`` (drawn to estimate the matcher's quality; never
        used for training).
    title : str
        The phase in words, as the console shows it.
    round : int or None
        The batch's round number (0-based).
    item : dict
        What the batch stored about the pair (``probability``, ``prediction``, ``risk``,
        ``reasons``, ``explanation``, ...).
    reask : bool
        Whether it is asked again after an undo.
    """

    left_id: str
    right_id: str
    number: int
    total: int
    phase: str
    title: str
    round: int | None
    item: dict
    reask: bool = False

    @property
    def key(self) -> tuple[str, str]:
        """``(left_id, right_id)``."""
        return (self.left_id, self.right_id)


class SessionRound:
    """The candidates of a session, the labels in force and the choice of the next batch.

    Parameters
    ----------
    dataset : PairDataset
        The tables and the candidate pairs (labels of pre-labelled candidates are used for
        training and never asked).
    config : SessionConfig
    store : SessionStore
        The open session folder: its journal's answers, and where the round's model is saved.
    say : callable
        Prints lines (progress, the round's estimate and advice) where the session prints.

    Attributes
    ----------
    keys : list of (str, str)
        Every candidate pair, in the order of ``candidates.csv``.
    position : dict
        A candidate pair's index in :attr:`keys`.
    given : dict
        The labels of pre-labelled candidates.
    """

    def __init__(self, dataset: Any, config: SessionConfig, store: SessionStore, say: Callable[..., None]) -> None:
        self.dataset = dataset
        self.config = config
        self.store = store
        self.say = say
        journal = store.journal
        pairs = dataset.pairs
        self.keys = list(zip(pairs["left_id"].tolist(), pairs["right_id"].tolist()))
        self.position = {k: i for i, k in enumerate(self.keys)}
        lab = pairs["label"].to_numpy()
        self.given = {self.keys[i]: int(lab[i]) for i in np.flatnonzero(lab >= 0)}
        unknown = [k for k in store.state.answers if k not in self.position]
        unknown += [k for k in store.state.items if k not in self.position]
        if unknown:
            raise DataError(
                f"{journal.path} has answers or questions for pairs that are not candidates of this session, e.g. "
                f"{unknown[0]}: the session folder's {CANDIDATES} was changed. Restore it, or start a "
                "new session folder."
            )
        self._features: np.ndarray | None = None
        self._similarity: Any = None  # the fitted SimilarityFeatures (set with the features)
        self._lm_rounds: Any = None  # matcher "lm": LMRounds (shortlist, kept scores, background fits)
        self._lm_pool: Any = None  # matcher "lm": serialise_pairs of every candidate, with the features

    @property
    def state(self) -> SessionState:
        """The answers and batches replayed from the journal (``SessionState``)."""
        return self.store.state

    @property
    def journal(self) -> Journal:
        """The session's ``Journal``."""
        return self.store.journal

    @property
    def features(self) -> np.ndarray:
        if self._features is None:
            from ..data import SimilarityFeatures

            self.say(f"Computing similarity features of {len(self.keys)} pairs...")
            # the column types the session settled when it started (sessions of older versions: none)
            types = (self.store.manifest or {}).get("types")
            sf = SimilarityFeatures(types=types, n_jobs=-1)  # every core (the values do not depend on it)
            self._features = np.asarray(sf.fit_transform(self.dataset), dtype=np.float64)  # tables encoded once
            self._similarity = sf  # the fitted features go into the saved model
            self._feature_names = [str(n) for n in sf.get_feature_names_out()]
        return self._features

    def matcher_input(self) -> Any:
        """What the session's matcher reads for every candidate: the similarity features, or (matcher
        "lm") the serialised records with those features (``serialise_pairs``)."""
        F = self.features
        if self.config.matcher != "lm":
            return F
        if self._lm_pool is None:
            from ..matchers._lm_data import serialise_pairs

            self._lm_pool = serialise_pairs(self.dataset.to_frame(), features=F)
        return self._lm_pool

    def new_matcher(self, first_stage: bool = False) -> Any:
        """The matcher of a round: a random forest, or the session's newest LMMatcher (warm after its
        first round; a background fit is waited for); ``first_stage``: the forest, whatever the
        session's matcher."""
        from ..matchers import FeatureMatcher

        if self.config.matcher != "lm" or first_stage:
            return FeatureMatcher(random_state=self.config.seed)
        return self.lm_rounds().newest()

    def lm_rounds(self) -> Any:
        """Matcher "lm": the session's :class:`~skrisk.labelling._lm_round.LMRounds`."""
        if self._lm_rounds is None:
            from ._lm_round import LMRounds, new_lm, saved_lm

            self._lm_rounds = LMRounds(len(self.keys), lambda: new_lm(self.config),
                                       lambda: saved_lm(self.store.folder, self.config, self.say))
        return self._lm_rounds

    def close(self) -> None:
        """Stop a background fit of the language model (the session closes)."""
        if self._lm_rounds is not None:
            self._lm_rounds.cancel()

    def labels(self) -> dict[tuple[str, str], int]:
        """Training labels in force: given ones, then the yes/no answers (answers win); not the answers
        of audited pairs that no training batch picked (see :func:`~skrisk.labelling._status.audit_keys`)."""
        audit = audit_keys(self)
        return {**self.given, **{k: v for k, v in self.state.labels().items() if k not in audit}}

    def _asked(self) -> set[tuple[str, str]]:
        return set(self.given) | set(self.state.answers) | set(self.state.reask)

    def _avg_similarity(self) -> np.ndarray:
        F = self.features
        s = np.empty(len(F))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=RuntimeWarning)
            for a in range(0, len(F), 65536):  # in row blocks: the same mean of each row, no matrix-sized temporaries
                block = F[a:a + 65536]
                s[a:a + 65536] = np.nanmean(np.where(block >= 0, block, np.nan), axis=1)
        return np.nan_to_num(s, nan=0.0)

    # ------------------------------------------------------------------ choosing pairs
    def next_batch(self) -> dict | None:
        owed = audit_batch(self)  # the audit drawn with the last risk round, once that round is answered
        if owed is not None:
            return owed
        labels = self.labels()
        n_yes = sum(v == 1 for v in labels.values())
        n_no = len(labels) - n_yes
        asked = self._asked()
        # audited pairs answered yes/no stay in the pool: picked later, their answer is reused
        reusable = (audit_keys(self) & set(self.state.labels())) - set(self.state.reask)
        free = [i for i, k in enumerate(self.keys) if k not in asked or k in reusable]
        if not free or all(self.keys[i] in reusable for i in free):
            return None
        round_no = len(self.state.batches)
        if n_yes == 0 or n_no == 0 or len(labels) < self.config.n_initial:
            batch = self._seed_batch(free, n_yes, n_no, len(labels), round_no)
        else:
            batch = self._risk_batch(free, labels, round_no)
        reused = sum((str(i["left_id"]), str(i["right_id"])) in reusable for i in batch["items"])
        if reused:
            batch.setdefault("notes", []).append(
                f"{reused} of the pairs picked this round {'was' if reused == 1 else 'were'} answered in an audit: "
                "the answer is reused for training, not asked again."
            )
        return batch

    def _seed_batch(self, free: list[int], n_yes: int, n_no: int, n_lab: int, round_no: int) -> dict:
        s = self._avg_similarity()
        free_arr = np.asarray(free)
        order = free_arr[np.argsort(-s[free_arr], kind="stable")]  # most similar first
        size = max(2, self.config.n_initial - n_lab)
        if n_yes == 0 and n_lab >= self.config.n_initial:
            # the first round's most similar pairs were all non-matches (a catalogue's variants of one
            # product, say): the most similar pairs on one feature each, the features in turn
            picks = self._feature_leaders(free_arr, order, s, size, offset=n_lab - self.config.n_initial)
        elif n_yes == 0 and n_no > 0:
            picks = [(i, "high") for i in order[:size]]
        elif n_no == 0 and n_yes > 0:
            picks = [(i, "low") for i in order[::-1][:size]]
        else:
            picks, lo, hi = [], 0, len(order) - 1
            while len(picks) < size and lo <= hi:
                picks.append((order[lo], "high"))
                lo += 1
                if len(picks) < size and lo <= hi:
                    picks.append((order[hi], "low"))
                    hi -= 1
        items = []
        for i, side in picks:
            left_id, right_id = self.keys[int(i)]
            why = (f"picked for its {side} average similarity ({s[i]:.2f})" if isinstance(side, str) else
                   f"picked as the most similar on {self._feature_names[side]} ({self.features[i, side]:.2f}; "
                   f"average {s[i]:.2f}) since no starting pair so far was a match")
            items.append(
                {
                    "left_id": left_id, "right_id": right_id, "similarity": round(float(s[i]), 4),
                    "explanation": (
                        f"A starting pair, {why}: the matcher is trained once matches and non-matches "
                        "are both labelled."
                    ),
                }
            )
        return {"phase": "initial", "round": round_no, "items": items}

    def _feature_leaders(
        self, free: np.ndarray, order: np.ndarray, s: np.ndarray, size: int, offset: int
    ) -> list[tuple[int, int | str]]:
        """``size`` distinct unasked pairs, each the most similar on one similarity feature (ties: the
        higher average similarity ``s``), the features in turn from ``offset`` (so that successive
        rounds visit every feature); ``(pair, feature column)`` each. Features no free pair has a
        value above zero on are passed over; when none is left, the next pairs of ``order`` (the free
        pairs, most similar on average first), as ``(pair, "high")``."""
        F = self.features
        n_f = F.shape[1]
        picks: list[tuple[int, int | str]] = []
        taken: set[int] = set()
        for step in range(n_f):
            if len(picks) >= size:
                break
            j = (offset + step) % n_f
            v = F[free, j]
            top = v.max() if len(v) else 0.0
            if not top > 0:  # missing (negative) or no similarity at all: says nothing
                continue
            tied = free[v == top]
            i = int(tied[np.argmax(s[tied])])
            if i not in taken:
                taken.add(i)
                picks.append((i, j))
        for i in order:  # too few features: the average's order
            if len(picks) >= size:
                break
            if int(i) not in taken:
                taken.add(int(i))
                picks.append((int(i), "high"))
        return picks

    def _risk_batch(self, free: list[int], labels: dict, round_no: int) -> dict:
        from .._rows import take_rows
        from ..active import ActiveLearner
        from ..risk import LearnRisk
        from ..strategies import RiskSampler

        cfg = self.config
        F = self.matcher_input()
        lab_pos = np.array([self.position[k] for k in labels], dtype=np.intp)
        y_lab = np.array(list(labels.values()), dtype=np.int64)
        rng = np.random.RandomState(_round_seed(cfg.seed, round_no, 0))
        pool = np.asarray(free, dtype=np.intp)
        n_pick = min(cfg.n_instances, len(pool))
        lm = cfg.matcher == "lm"
        if lm:
            # the language model scores a shortlist; the first stage (a forest on the similarity
            # features, fitted on the same labels) stands for it on the candidates it never scored
            from ._lm_round import release_memory

            rounds = self.lm_rounds()
            first = self.new_matcher(first_stage=True).fit(self.features[lab_pos], y_lab)
            first_p = first.predict_proba(self.features)[:, 1]
            pool = rounds.shortlist(pool, first_p, cfg.max_pool, rng)
            if rounds.training():
                head = "Waiting for the language model training while you answered, then s"
            elif rounds.needs_fit():
                head = f"Training the language model on {len(y_lab)} labels, then s"
            else:
                head = "S"
            self.say(f"{head}coring {len(pool)} of {len(free)} unlabelled pairs with it and choosing {n_pick} "
                     "by risk sampling...")
            matcher = rounds.matcher(take_rows(F, lab_pos), y_lab, _round_seed(cfg.seed, round_no, 4))
        else:
            if len(pool) > cfg.max_pool:
                pool = np.sort(rng.choice(pool, size=cfg.max_pool, replace=False))
            self.say(
                f"Training the matcher on {len(y_lab)} labels and choosing {n_pick} "
                f"pairs among {len(pool)} by risk sampling..."
            )
            matcher = self.new_matcher()
        # LearnRisk learns its rules and ranks its weights on out-of-fold probabilities of the
        # labelled pairs (a forest is always right on the pairs it was fitted on)
        sampler = RiskSampler(
            risk=LearnRisk(epochs=cfg.epochs, feature_names=self._feature_names),
            selector=RiskSampler().resolve_selector(matcher).set_params(device="cpu"),
            random_state=_round_seed(cfg.seed, round_no, 1),
        )
        if lm:  # already trained (in the background on the labels of the round before, or just now)
            learner = ActiveLearner(matcher, sampler)
            learner.X_training, learner.y_training = take_rows(F, lab_pos), y_lab
        else:
            learner = ActiveLearner(matcher, sampler, X_training=take_rows(F, lab_pos), y_training=y_lab)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            picked, risks = sampler(learner, take_rows(F, pool), n_instances=n_pick,
                                    random_state=_round_seed(cfg.seed, round_no, 2))
        risk_model = sampler.last_query_.risk_model
        fallback = risk_model is None
        if lm:  # the query's own scores (the matcher keeps them), then every candidate's
            rounds.keep(pool, matcher.predict_proba(take_rows(F, pool))[:, 1])
            rounds.keep(lab_pos, matcher.predict_proba(take_rows(F, lab_pos))[:, 1])
            proba_all = rounds.proba(first_p)
            release_memory()  # what scoring the shortlist freed
        else:
            proba_all = matcher.predict_proba(F)[:, 1]
        risk_all = np.minimum(proba_all, 1 - proba_all) if fallback else risk_model.predict_risk(F, proba=proba_all)
        status, draws = round_status(self, proba_all, np.asarray(risk_all, dtype=np.float64),
                                     np.asarray(sampler.last_query_.risk, dtype=np.float64), len(free),
                                     round_no, _round_seed(cfg.seed, round_no, 3))
        if lm:
            status["lm"] = {"scored": int(len(pool)), "trained_on": int(rounds.trained_on)}
        status["lines"] = status_lines(self, status)  # kept for status_text() (the Jupyter labeller)
        self.say(*status["lines"])
        self.store.save_model(self.dataset, self._similarity, matcher, risk_model, threshold=status["threshold"])  # the round's chosen threshold
        if lm:  # the next round's matcher trains while the person answers this batch
            rounds.train_next(take_rows(F, lab_pos), y_lab, _round_seed(cfg.seed, round_no, 4))
        chosen = take_rows(F, pool[picked])
        proba = proba_all[pool[picked]] if lm else matcher.predict_proba(chosen)[:, 1]
        items = []
        for j, (i, risk, p) in enumerate(zip(pool[picked], risks, proba)):
            left_id, right_id = self.keys[int(i)]
            if fallback:
                why = (
                    "LearnRisk is not trained yet: the cross-validated matcher labels all "
                    f"{len(y_lab)} labelled pairs correctly, so there is no mistake to learn from. "
                    f"The risk is the matcher's uncertainty min(p, 1 - p) = {risk:.3f}, spread over "
                    "the pairs by weighted k-medoids."
                )
                reasons = []
            else:
                values = {a: (lv, rv) for a, lv, rv in self.record_values((left_id, right_id))}
                exp = risk_model.explain(chosen, j, pairs=values)
                why = str(exp)
                reasons = [
                    {"text": r.text, "direction": r.direction, "weight": round(r.weight, 4),
                     "feature": r.feature, "attribute": r.attribute or r.feature,
                     "rule": r.rules[0] if r.rules else ""}
                    for r in exp.reasons
                ]
            items.append(
                {
                    "left_id": left_id, "right_id": right_id, "probability": round(float(p), 4),
                    "prediction": int(match_labels([p])[0]), "risk": round(float(risk), 4),
                    "explanation": why, "reasons": reasons,
                }
            )
        notes = [str(w.message) for w in caught if not fallback or "LearnRisk" not in str(w.message)]
        return {"phase": "risk", "round": round_no, "n_labels": int(len(y_lab)), "items": items,
                "notes": notes[:3], "status": status, "audit_draws": draws}

    # ------------------------------------------------------------------ showing pairs
    def record_values(self, key: tuple[str, str]) -> list[tuple[str, str, str]]:
        """``(attribute, left value, right value)`` of a pair, cells as compared (whitespace runs as
        one space, missing as ``""``); not escaped: every display escapes them its own way."""
        ds = self.dataset
        lrec, rrec = ds.left.loc[key[0]], ds.right.loc[key[1]]
        return [(str(a), _cell(lrec[a]), _cell(rrec[a])) for a in ds.attributes]

    def counts_text(self) -> str:
        counts = self.state.counts()
        n_yes = counts["yes"] + sum(v == 1 for k, v in self.given.items() if k not in self.state.answers)
        n_no = counts["no"] + sum(v == 0 for k, v in self.given.items() if k not in self.state.answers)
        return f"so far: {n_yes} match(es), {n_no} non-match(es), {counts['unsure']} unsure"

    # ------------------------------------------------------------------ export
    def export_frames(self) -> tuple[pd.DataFrame, pd.DataFrame, str]:
        """The rows of ``labels.csv`` and ``predicted_matches.csv`` (see
        :func:`~skrisk.labelling.export_session`), and a note on the threshold of the predictions."""
        ds, st = self.dataset, self.state
        audit = audit_keys(self)
        rows = []
        for k, v in self.given.items():
            if k not in st.answers:
                rows.append({"left_id": k[0], "right_id": k[1], "label": v, "answer": "given", "answered_at": "",
                             "purpose": "given"})
        for ev in st.answered_events():
            lab = {"yes": 1, "no": 0}.get(ev["answer"])
            key = (str(ev["left_id"]), str(ev["right_id"]))
            rows.append({"left_id": ev["left_id"], "right_id": ev["right_id"], "label": lab,
                         "answer": ev["answer"], "answered_at": ev.get("t", ""),
                         "purpose": "audit" if key in audit else "training"})
        labels_df = pd.DataFrame(rows, columns=["left_id", "right_id", "label", "answer", "answered_at", "purpose"])
        labels_df["label"] = labels_df["label"].astype("Int64")
        if len(labels_df):
            lrec = ds.left.loc[labels_df["left_id"]].reset_index(drop=True).add_prefix("left_")
            rrec = ds.right.loc[labels_df["right_id"]].reset_index(drop=True).add_prefix("right_")
            labels_df = pd.concat([labels_df.reset_index(drop=True), lrec, rrec], axis=1)
        labels = self.labels()
        keys = self.keys
        lab_arr = np.array([labels.get(k, -1) for k in keys])
        proba = np.where(lab_arr == 1, 1.0, 0.0)
        note = ""
        if (lab_arr == 1).any() and (lab_arr == 0).any():
            from .._rows import take_rows
    
            F = self.matcher_input()
            known = np.flatnonzero(lab_arr >= 0)
            matcher = self.new_matcher().fit(take_rows(F, known), lab_arr[known])
            proba = matcher.predict_proba(F)[:, 1]
            threshold, note = export_threshold(self, proba)
            note = f" ({note})"
        else:
            threshold = MATCH_THRESHOLD
            note = " (only labelled matches: the labels hold one class, no matcher was trained)"
        answers = {**self.given, **st.labels()}  # training and audit answers alike
        ans_arr = np.array([answers.get(k, -1) for k in keys])
        source = np.where(ans_arr == 1, "labelled", "predicted")
        is_match = (ans_arr == 1) | ((ans_arr == -1) & (match_labels(proba, threshold) == 1))
        pred = pd.DataFrame(
            {
                "left_id": [k[0] for k in keys],
                "right_id": [k[1] for k in keys],
                "probability": np.round(proba, 4),
                "source": source,
            }
        )[is_match]
        pred = pred.sort_values(["source", "probability"], ascending=[True, False], kind="stable")
        return labels_df, pred, note
