"""Routes of the portfolio manager and the preference flywheel."""

from __future__ import annotations

from typing import Any


def routers() -> list[Any]:
    """The routers whose operations exist in this alphaloop."""
    return []
