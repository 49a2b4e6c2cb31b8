"""From labels to matches: the saved complete model, matching new records, entities.

``MatchModel`` / ``load_model`` hold and read everything needed to score new pairs (one file,
no pickle); ``match`` blocks new tables, scores the candidate pairs in chunks and groups the
matches into entities (``cluster_entities``), measured by ``pairwise_scores`` and
``cluster_scores``.
"""

from ._entities import Entities, cluster_entities, cluster_scores, pairwise_scores
from ._match import MatchResult, match
from ._model import FORMAT_VERSION, MODEL_FILE, TRUSTED_TYPES, MatchModel, load_model

__all__ = [
    "Entities",
    "FORMAT_VERSION",
    "MODEL_FILE",
    "MatchModel",
    "MatchResult",
    "TRUSTED_TYPES",
    "cluster_entities",
    "cluster_scores",
    "load_model",
    "match",
    "pairwise_scores",
]
