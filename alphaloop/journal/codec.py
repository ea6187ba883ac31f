"""Turning Python values into journal columns: validation against the read models, JSON text,
timestamps."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import Enum
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from alphaloop.journal.models import _Record


def now() -> str:
    """The journal's timestamp: ISO 8601, UTC, milliseconds (sorts as text)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def seconds_between(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def dumps(value: Any) -> str:
    """JSON text for a JSON column (numpy scalars and arrays, models and paths included).

    Non-finite floats are kept as ``NaN``/``Infinity`` (Python's JSON dialect) so a metric reads
    back exactly as it was written; the read models turn them into ``null`` for JSON output.
    """
    return json.dumps(value, default=_json_default)


def _json_default(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return value.tolist()
    if isinstance(value, set | frozenset):
        return sorted(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable: {value!r}")


@cache
def _adapter(model: type[_Record], name: str) -> TypeAdapter:
    return TypeAdapter(model.model_fields[name].annotation)


def column(model: type[_Record], name: str, value: Any) -> Any:
    """``value`` validated against the field ``model.name`` and turned into what SQLite stores.

    Raises:
        ValueError: the value does not fit the field (the message names both).
    """
    try:
        checked = _adapter(model, name).validate_python(value)
    except ValidationError as err:
        msg = err.errors()[0]["msg"]
        raise ValueError(f"{model.__name__}.{name}: {value!r} is not valid ({msg})") from None
    if checked is None:
        return None
    if name in model.json_fields:
        # The caller's value, not the validated copy: validation may coerce (1 -> 1.0).
        return dumps(value)
    if isinstance(checked, Enum):
        return checked.value
    if isinstance(checked, bool):
        return int(checked)
    return checked


def columns(model: type[_Record], values: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`column` for each item."""
    return {k: column(model, k, v) for k, v in values.items()}


def trial_id(value: int | str | None) -> int | None:
    """A trial id as the LLM client reports it (an int, or digits in a string)."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    raise ValueError(f"trial_id must be a journal trial id (an integer), got {value!r}")
