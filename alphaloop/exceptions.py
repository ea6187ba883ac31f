"""Every error alphaloop raises on purpose derives from :class:`AlphaloopError`.

A user-facing command catches ``AlphaloopError`` and prints its message; anything else is a bug.
"""

from __future__ import annotations


class AlphaloopError(Exception):
    """Base class of alphaloop's own errors."""


class InvalidDelta(AlphaloopError):
    """A proposed config delta names an unknown knob or carries a value that is not a number.

    Deliberately not a ``ValueError``: pydantic would wrap it into a ``ValidationError`` and the
    offending key and value would be lost to callers.
    """

    def __init__(self, message: str, *, key: str | None = None, value: object = None) -> None:
        super().__init__(message)
        self.key = key
        self.value = value


class DataError(AlphaloopError, ValueError):
    """Price data that cannot be used as given (missing file, bad dates, bad prices...)."""


class InfeasibleProblem(AlphaloopError, ValueError):
    """An optimisation problem whose constraints cannot all hold (the message says which)."""


class SolverError(AlphaloopError, RuntimeError):
    """A solver ran but returned no usable solution."""


class TrialCrashed(AlphaloopError, RuntimeError):
    """A trial could not finish (diverged policy, solver failure...); the journal marks it crash."""
