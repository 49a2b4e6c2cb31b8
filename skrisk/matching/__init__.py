"""From labels to matches: entities (clusters of matched records) and their quality metrics."""

from ._entities import Entities, cluster_entities, cluster_scores, pairwise_scores

__all__ = ["Entities", "cluster_entities", "cluster_scores", "pairwise_scores"]
