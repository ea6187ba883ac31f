"""What every market module shares: the warning category and the missing-price policy."""

from __future__ import annotations

from typing import Literal

Fill = Literal["none", "ffill"]


class DataWarning(UserWarning):
    """Something about the data was changed on load; the message says what."""
