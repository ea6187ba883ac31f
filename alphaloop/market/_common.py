"""What every market module shares: the missing-price policy."""

from __future__ import annotations

from typing import Literal

Fill = Literal["none", "ffill"]
