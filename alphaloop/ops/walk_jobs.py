"""A walk as a typed job (:mod:`alphaloop.ops.jobs`): started or resumed in a worker process,
with its result read back from the journal.

A walk runs for as long as its epochs' sessions do, so a server hands it to a worker like a
research session. The server draws the walk's id and puts it in the job: it answers with that
id as soon as the worker has journaled the walk, and the page follows the walk by it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from alphaloop.ops.requests import WalkId, WalkRequest, derive

_STRICT = ConfigDict(frozen=True, extra="forbid")
_WALK_ID = Field(description="the walk's id, drawn by the server that queued the job")

# The walk request as declared once, checked completely before it is queued, with the id the
# walk is journaled under.
WalkJob: Any = derive(
    WalkRequest, "WalkJob", check=False,
    extra={"kind": (Literal["walk"], "walk"), "walk_id": (WalkId, _WALK_ID)},
    doc="Start a walk and run it to its end: a research session at each epoch, its pick "
    "traded over the period after it.",
)  # fmt: skip


class WalkResumeJob(BaseModel):
    """Continue a walk after a crash, a kill or an error; no epoch runs twice."""

    model_config = _STRICT

    kind: Literal["walk_resume"] = "walk_resume"
    walk_id: WalkId


class WalkResult(BaseModel):
    """A walk the job ran to its end: its verdict (``GET /api/walks/{walk_id}`` has the
    rest)."""

    model_config = _STRICT

    kind: Literal["walk", "walk_resume"]
    walk_id: str
    status: str
    go: bool
    verdict: str


__all__ = ["WalkJob", "WalkResult", "WalkResumeJob"]
