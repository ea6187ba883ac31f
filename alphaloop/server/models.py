"""Request and response bodies of the REST API: the OpenAPI schema at ``/docs`` is the
contract. Requests are strict (unknown fields refused) and bounded."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Query
from pydantic import BaseModel, ConfigDict, Field

from alphaloop.ops.requests import (
    DATA_HELP,
    DATA_NAME,
    MAX_ID,
    SESSION_ID,
    ChartKind,
    DpoTrainRequest,
    ResearchRequest,
    TickRequest,
    TrainRequest,
    WalkRequest,
    derive,
)

_STRICT = ConfigDict(frozen=True, extra="forbid")

After = Query(
    0, ge=0, le=MAX_ID, description="only items after this cursor (the last answer's next_after)"
)


def IdPath() -> Any:
    """A journal id in the path: 1 up to :data:`MAX_ID`."""
    return Path(ge=1, le=MAX_ID)


# Ids, never paths: a session id as the journal draws it, data by name only.
SessionId = Annotated[str, Field(pattern=SESSION_ID, max_length=40)]
DataName = Annotated[str, Field(pattern=DATA_NAME, description=DATA_HELP)]

# The request bodies: each generated from the one declaration of its request, less the fields
# only the command line takes (files, worker processes, clusters, the broker).
ResearchBody = derive(ResearchRequest, "ResearchRequest", exclude=ResearchRequest.LOCAL)
TrainBody = derive(TrainRequest, "TrainRequest", exclude=TrainRequest.LOCAL)
TickBody = derive(TickRequest, "TickRequest", exclude=TickRequest.LOCAL)
WalkBody = derive(WalkRequest, "WalkRequest", exclude=WalkRequest.LOCAL)  # type: ignore[attr-defined]


JOB_ID = Field(
    description="the job running it: GET /api/jobs/{job_id} has its status, result or error"
)
WORKER_PID = Field(description="the worker process's id")


class Started(BaseModel):
    """A worker started for a session or a run: poll the session id for its progress."""

    model_config = _STRICT

    session_id: str | None = Field(
        description="the session it runs; null if the worker had not journaled it yet when "
        "answered (GET /api/jobs/{job_id} gives it once it has)"
    )
    pid: int | None = WORKER_PID
    job_id: int = JOB_ID
    understood: list[str] | None = Field(
        default=None,
        description="what the session understood of its goal, line by line: the metric and "
        "limits it set (as their flags would), those a field given overrode, and each phrase "
        "named back as not understood (research only)",
    )


class JobStarted(BaseModel):
    """A worker started for a tick or a scheduler job: follow it with ``GET /api/jobs/{job_id}``."""

    model_config = _STRICT

    job: str
    pid: int | None = WORKER_PID
    job_id: int = JOB_ID


# A name a client may give: letters, digits, "_" and "-"; never a path.
NAME = r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,63}$"

# Clients name things, never paths: the model is the server's ``ALPHALOOP_DPO_MODEL``
# (``model_id``, if given, must be its folder name) and the result goes to ``<home>/dpo/<run>``.
DpoTrainBody = derive(
    DpoTrainRequest,
    "DpoTrainRequest",
    extra={
        "model_id": (
            str | None,
            Field(
                default=None,
                pattern=NAME,
                description="the configured model's folder name, to make sure which model is "
                "trained",
            ),
        ),
        "run": (
            str | None,
            Field(
                default=None,
                pattern=NAME,
                description="the new output folder's name under <home>/dpo (default: "
                "run-<UTC time>)",
            ),
        ),
    },
    doc="Train the server's DPO model (ALPHALOOP_DPO_MODEL) on the labelled preference pairs, "
    "in a worker process; the result goes to <home>/dpo/<run>.",
)


class DpoStarted(BaseModel):
    """A DPO run started in a worker: follow it with ``GET /api/dpo/runs``."""

    model_config = _STRICT

    run: str
    model_id: str
    pid: int | None = WORKER_PID
    dpo_run_id: int | None = Field(
        description="its journal id; null if the worker had not journaled it yet when answered"
    )
    job_id: int = JOB_ID


class ChartContext(BaseModel):
    model_config = _STRICT

    session_id: SessionId | None = None
    trial_idx: int | None = Field(default=None, ge=0, le=MAX_ID)


class InterpretRequest(BaseModel):
    """Read a chart in 4-6 bullets. ``image_b64``: a PNG (or JPEG) of it, if the page has one;
    the vision model gets a PNG, the embedded reader reads the chart's own data."""

    model_config = _STRICT

    kind: ChartKind
    image_b64: str | None = Field(default=None, max_length=3_000_000)
    context: ChartContext = ChartContext()


class ChartReadOut(BaseModel):
    model_config = _STRICT

    kind: str
    model: str
    bullets: list[str]
    elapsed_s: float
    embedded: bool
    signature: str
    id: int | None = None


class Page(BaseModel):
    """A list endpoint's answer: the items after ``after``, and the cursor for the next poll."""

    model_config = ConfigDict(frozen=True)

    items: list[Any]
    next_after: int
