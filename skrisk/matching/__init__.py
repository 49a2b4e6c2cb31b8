"""From labels to matches: the saved complete model, matching new records, entities.

``MatchModel`` / ``load_model`` hold and read everything needed to score new pairs (one file,
no pickle); ``match`` blocks new tables, scores the candidate pairs in chunks and groups the
matches into entities.
"""

from ._match import MatchResult, match
from ._model import FORMAT_VERSION, MODEL_FILE, TRUSTED_TYPES, MatchModel, load_model

__all__ = [
    "FORMAT_VERSION",
    "MODEL_FILE",
    "MatchModel",
    "MatchResult",
    "TRUSTED_TYPES",
    "load_model",
    "match",
]
