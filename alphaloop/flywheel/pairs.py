"""A preference pair before it is journaled."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from alphaloop.journal.preferences import PreferenceSource


class PairDraft(BaseModel):
    """The fields of a ``preferences`` row the journal does not fill in itself."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: PreferenceSource
    origin_key: str
    origin: dict[str, Any]
    prompt: str
    chosen: str
    rejected: str
    margin: float
    labelled: bool
