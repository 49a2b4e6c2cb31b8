"""From labels to matches: the saved complete model, matching new records, entities.

``MatchModel`` / ``load_model`` hold and read everything needed to score new pairs (one file,
no pickle); ``match`` blocks new tables, scores the candidate pairs in chunks and groups the
matches into entities (``cluster_entities``).
"""

from ._entities import Entities, cluster_entities
from ._match import MatchResult, match
from ._model import MatchModel, load_model

__all__ = ["cluster_entities", "Entities", "load_model", "match", "MatchModel", "MatchResult"]
