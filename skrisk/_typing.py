"""Type aliases used across skrisk."""

from __future__ import annotations

from typing import Union

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.intp]
FloatArray = npt.NDArray[np.floating]
RandomStateLike = Union[None, int, np.random.RandomState, np.random.Generator]

__all__ = ["IntArray", "FloatArray", "RandomStateLike"]
