"""What every market module shares: the missing-price policy."""

from __future__ import annotations

from alphaloop.vocabulary import Fill

__all__ = ["Fill"]
