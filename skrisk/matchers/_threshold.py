"""The match threshold every matcher applies (a module of its own: matching imports it without
the matchers' dependencies)."""

from __future__ import annotations

__all__ = ["MATCH_THRESHOLD"]

#: A pair is predicted a match iff its match probability is *above* this value. A tie at exactly
#: 0.5 is a non-match, as scikit-learn's argmax over ``predict_proba`` decides it (the first of two
#: equal classes, 0). Every matcher, LearnRisk and the labelling exports apply it through
#: ``match_labels``.
MATCH_THRESHOLD: float = 0.5
