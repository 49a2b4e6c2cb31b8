"""Matchers: a DeepMatcher-style RNN classifier in skorch, and a fast feature-based classifier."""

from ._base import CAPABILITIES, require
from ._feature import FeatureMatcher

__all__ = ["CAPABILITIES", "FeatureMatcher", "require"]
