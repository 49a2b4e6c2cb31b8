"""Matchers: a DeepMatcher-style RNN classifier in skorch, a pretrained-language-model
cross-encoder, and a fast feature-based classifier.

``RNNMatcher``, ``make_rnn_pipeline``, ``save_matcher``, ``load_matcher``, ``LMMatcher`` and
``serialize_pairs`` are imported on first use (they need torch, skorch or transformers), so
``import skrisk.matchers`` stays light.
"""

from .._lazy import lazy_attributes
from ._base import CAPABILITIES, MATCH_THRESHOLD, match_labels, require
from ._feature import FeatureMatcher

__all__ = [
    "CAPABILITIES",
    "FeatureMatcher",
    "LMMatcher",
    "MATCH_THRESHOLD",
    "RNNMatcher",
    "load_matcher",
    "make_rnn_pipeline",
    "match_labels",
    "require",
    "save_matcher",
    "serialize_pairs",
]

_LAZY = {
    "RNNMatcher": "._rnn",
    "make_rnn_pipeline": "._rnn",
    "save_matcher": "._rnn",
    "load_matcher": "._rnn",
    "LMMatcher": "._lm",
    "serialize_pairs": "._lm_data",
}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals(), __all__)
