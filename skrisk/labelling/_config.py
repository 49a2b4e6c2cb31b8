"""The parameters of a labelling session (:class:`SessionConfig`, stored in its manifest) and the
text form of its threshold target (:func:`parse_target`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..exceptions import DataError
from ..risk._defaults import DEFAULT_EPOCHS

__all__ = ["SessionConfig", "parse_target"]

_MAX_SEED = 2**32 - 1


@dataclass
class SessionConfig:
    """Parameters of a session (stored in the manifest).

    Attributes
    ----------
    n_instances : int
        Pairs chosen by risk sampling per round (the matcher is retrained between rounds); the
        CLI flag is ``--batch``. A manifest written before this name (``"batch"`` under
        ``"params"``) is read as ``n_instances``.
    n_initial : int
        Labels (both classes) gathered by similarity before the first matcher is trained: the
        pairs of highest and lowest average similarity; when these ``n_initial`` hold no match,
        two pairs a round, each the most similar on one similarity feature, the features in
        turn, until a match is found.
    max_pool : int
        Unlabelled pairs risk sampling considers per round, which bounds the time per round: a
        seeded random subset when there are more; with ``matcher="lm"``, the shortlist the
        language model scores (see ``matcher``).
    seed : int
        Seeds the matcher, LearnRisk, the pool subsets and tie-breaks.
    epochs : int
        LearnRisk training epochs per round.
    audit : int
        Audit pairs drawn after each risk round (0: none); their answers estimate precision and
        recall; one trains the matcher only if a later round picks that pair (then its answer is
        reused, not asked again; see ``skrisk.labelling._status.audit_keys``).
    target : str
        What the match threshold is chosen for, from the audit answers: ``"f1"`` (0.5 unless
        the audit shows another gives a higher F1), ``"precision=0.9"`` (the lowest threshold whose estimated precision is at
        least 0.9) or ``"recall=0.8"``; exports and the saved model use it.
    matcher : {"feature", "lm"}
        The matcher trained each round: a random forest on the similarity features, or
        :class:`~skrisk.matchers.LMMatcher` (a pretrained language model fine-tuned on the
        pairs; needs ``skrisk[lm]``). A language-model round scores a shortlist of ``max_pool``
        unlabelled pairs and the labelled ones, not every candidate: three quarters the most
        plausible (by the language model's last score of the pair, else by a random forest on
        the similarity features trained on the same labels), a quarter a seeded sample of the
        others; the other candidates keep their last score (or the forest's) for the estimates.
        The next round's model trains in a background thread while the person answers (one warm
        epoch on at most 768 labels, the newest first), so a round queries with the model of the
        labels of the round before; training writes nothing, and a resumed session continues
        from the model saved last.
    lm_model : str
        ``matcher="lm"``: the model folder or Hub name ("": the offline all-MiniLM-L6-v2).
    """

    n_instances: int = 10
    n_initial: int = 6
    max_pool: int = 3000
    seed: int = 0
    epochs: int = DEFAULT_EPOCHS
    audit: int = 5
    target: str = "f1"
    matcher: str = "feature"
    lm_model: str = ""

    def check(self) -> None:
        """Raise :class:`DataError` (a ``ValueError``) naming the first invalid parameter."""
        for name in ("n_instances", "n_initial", "max_pool", "epochs"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise DataError(f"{name} must be a positive integer, got {v!r}.")
        if self.n_initial < 2:
            raise DataError(f"n_initial must be at least 2 (one match, one non-match), got {self.n_initial}.")
        a = self.audit
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)) or a < 0:
            raise DataError(f"audit must be a non-negative integer (0 turns audits off), got {a!r}.")
        parse_target(self.target)
        if self.matcher not in ("feature", "lm"):
            raise DataError(f"matcher must be 'feature' or 'lm', got {self.matcher!r}.")
        if self.lm_model and self.matcher != "lm":
            raise DataError(f"lm_model is the model of matcher 'lm', but matcher is {self.matcher!r}: pass --matcher lm.")
        s = self.seed
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or not 0 <= s <= _MAX_SEED:
            raise DataError(f"seed must be an integer from 0 to {_MAX_SEED}, got {s!r}: pass such a --seed.")


def parse_target(text: object) -> str | dict[str, float]:
    """A threshold target as :func:`skrisk.quality.choose_threshold` takes it, from its text form.

    ``"f1"``, ``"precision=X"`` or ``"recall=X"`` with X in (0, 1]; anything else is a
    :class:`DataError` that says what to write.

    Examples
    --------
    >>> parse_target("f1"), parse_target("precision=0.9")
    ('f1', {'precision': 0.9})
    """
    fix = 'write f1, precision=X or recall=X with X from 0 to 1 (e.g. --target precision=0.9)'
    if not isinstance(text, str):
        raise DataError(f"target must be a text, got {text!r}: {fix}.")
    t = text.strip().lower()
    if t == "f1":
        return "f1"
    name, sep, value = t.partition("=")
    try:
        x = float(value) if sep and name.strip() in ("precision", "recall") else None
    except ValueError:
        x = None
    if x is None or not 0.0 < x <= 1.0:
        raise DataError(f"target {text!r} is not understood: {fix}.")
    return {name.strip(): x}
