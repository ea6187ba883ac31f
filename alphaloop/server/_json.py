"""Strict JSON for free-form journal fields (JSON has no NaN or Infinity)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def jsonable(value: Any) -> Any:
    """``value`` with non-finite floats as None, mappings' keys as text."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
