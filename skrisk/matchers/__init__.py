"""Matchers: a DeepMatcher-style RNN classifier in skorch, a pretrained-language-model
cross-encoder, and a fast feature-based classifier.

``RNNMatcher``, ``save_matcher``, ``load_matcher`` and ``LMMatcher`` are imported on first use (they need torch, skorch or transformers), so
``import skrisk.matchers`` stays light.
"""

from __future__ import annotations

from .._lazy import lazy_attributes
from ._threshold import MATCH_THRESHOLD

__all__ = ["FeatureMatcher", "LMMatcher", "load_matcher", "MATCH_THRESHOLD", "RNNMatcher", "save_matcher"]

_LAZY = {
    "FeatureMatcher": "._feature",
    "LMMatcher": "._lm",
    "load_matcher": "._rnn",
    "RNNMatcher": "._rnn",
    "save_matcher": "._rnn",
}

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals(), __all__)
del lazy_attributes
