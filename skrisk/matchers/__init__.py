"""Matchers: a DeepMatcher-style RNN classifier in skorch, and a fast feature-based classifier."""

from ._base import CAPABILITIES, require

__all__ = ["CAPABILITIES", "require"]
