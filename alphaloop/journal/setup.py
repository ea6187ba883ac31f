"""What a session was started with, as the journal stores it (a session's ``settings`` column):
its spec, typed (:class:`~alphaloop.spec.SessionSpec`, or a manual run's
:class:`~alphaloop.spec.ManualRunSpec`), and what its data turned out to be.

Every reader gets these models, never keys of the stored JSON. A row written by an older
alphaloop reads as what it meant (:meth:`SessionSetup.read`): a research session from before
folds scored VALIDATION alone (one fold). A stored spec this alphaloop refuses (a setting out of
today's bounds) reads as no spec, with the reason: the session still lists and shows, and a
resume says why it cannot run.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from alphaloop.spec import ManualRunSpec, Objective, SessionSpec

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class DataWindows(BaseModel):
    """A session's data as it was loaded when the session was created: where from, its
    fingerprint and columns, and the first and last day of each window."""

    model_config = _FROZEN

    source: str
    fingerprint: str
    symbols: list[str]
    train: tuple[str, str]
    validation: tuple[str, str]
    test: tuple[str, str]


class SessionSetup(BaseModel):
    """A session's spec and its data's windows (each None in a row that never held them).

    Attributes:
        spec: what the session was started with (its resume needs nothing else).
        data: what its data turned out to be.
        unread: why the stored spec does not read, when it does not (never stored).
    """

    model_config = _FROZEN

    spec: SessionSpec | ManualRunSpec | None = None
    data: DataWindows | None = None
    unread: str | None = Field(default=None, exclude=True)

    @classmethod
    def read(cls, stored: dict[str, Any], *, manual: bool) -> SessionSetup:
        """The setup a row stores (``manual``: a manual run's), read as it was meant."""
        raw = stored.get("spec")
        if not isinstance(raw, dict):
            return cls(data=stored.get("data"))
        kind: type[BaseModel] = ManualRunSpec if manual else SessionSpec
        if not manual and "folds" not in raw:
            raw = {**raw, "folds": 1}  # from before folds: a session scored VALIDATION alone
        try:
            spec = kind.model_validate(raw)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(map(str, first["loc"]))
            why = f"{where}: {first['msg']}, got {first.get('input')!r}"
            return cls(data=stored.get("data"), unread=why)
        return cls(spec=spec, data=stored.get("data"))


_OBJECTIVE = TypeAdapter(Objective)


def read_objective(stored: Any) -> Any:
    """A stored objective as the model, kept as it was written when today's bounds refuse it
    (the limits a session ran under are what it ran under)."""
    if not isinstance(stored, dict):
        return stored
    try:
        return _OBJECTIVE.validate_python(stored)
    except ValidationError:
        return Objective.model_construct(**stored)


__all__ = ["DataWindows", "SessionSetup", "read_objective"]
