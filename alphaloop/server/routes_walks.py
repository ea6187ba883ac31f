"""Routes of walks (the research loop replayed over history): start and resume one in a worker
process, list them, read one, and its figures for the page."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from alphaloop import ops
from alphaloop.ops import jobs
from alphaloop.ops.records import jsonable
from alphaloop.ops.requests import WALK_ID
from alphaloop.ops.research import check_proposer
from alphaloop.ops.walk import WalkRow, WalkView
from alphaloop.ops.walk_jobs import WalkResumeJob
from alphaloop.server.idempotency import IdempotencyKey
from alphaloop.server.models import JOB_ID, WORKER_PID, WalkBody
from alphaloop.server.routes_jobs import FAILED_RESPONSES, answer
from alphaloop.walk_spec import DEFAULT_RULE, PickRule

router = APIRouter(prefix="/api", tags=["walks"])
WalkPath = Path(pattern=WALK_ID, max_length=40, description="a walk id, w-YYYYMMDD-HHMMSS-xxxx")
_STRICT = ConfigDict(frozen=True, extra="forbid")


class WalkStarted(BaseModel):
    """A worker started for a walk: follow it with ``GET /api/walks/{walk_id}``."""

    model_config = _STRICT

    walk_id: str = Field(description="the walk it runs")
    pid: int | None = WORKER_PID
    job_id: int = JOB_ID


class WalkList(BaseModel):
    """Every walk, newest first."""

    model_config = _STRICT

    items: list[WalkRow]
    default_rule: PickRule = Field(
        DEFAULT_RULE, description="the rule a walk started without one takes"
    )


class WalkFigures(BaseModel):
    """A finished walk's figures (plotly figure JSON by name), as its tear sheet draws them."""

    model_config = _STRICT

    walk_id: str
    figures: dict[str, Any]


def _settings(request: Request) -> Any:
    return request.app.state.settings


def _start(settings: Any, job: Any) -> WalkStarted | JSONResponse:
    """Starts ``job`` in a worker; answers once the worker journals the walk as its own (or
    the job failed first: its error, as journaled)."""
    view = jobs.start_job(settings, job)
    view = jobs.wait_for_job(
        settings,
        view.id,
        lambda v: v.pid is not None and ops.walk.walk_owner(job.walk_id, settings) == v.pid,
    )
    return answer(view, lambda v: WalkStarted(walk_id=job.walk_id, pid=v.pid, job_id=v.id))


@router.post("/walks", status_code=202, response_model=WalkStarted, responses=FAILED_RESPONSES)
def walk_start(
    request: Request, body: WalkBody, key: str | None = IdempotencyKey
) -> WalkStarted | JSONResponse:
    """Start a walk in a worker process: at each epoch a research session on the data cut
    there, its pick traded over the period after it beside the default and 1/N. Answers once
    the walk is journaled, with its id (once per ``Idempotency-Key``). The request is checked
    completely first, its epochs on the data included: a cadence, start or end the data cannot
    hold, or data too short for two epochs, is a 422 naming what fits, and no job is queued."""
    settings = _settings(request)
    ops.walk.check_walk(body)  # checked whole here, its epochs too: 422 before any job
    check_proposer(body.proposer, settings)
    job = ops.walk.walk_job(body)
    return request.app.state.idempotency.once(key, "walks", body, lambda: _start(settings, job))


@router.post(
    "/walks/{walk_id}/resume",
    status_code=202,
    response_model=WalkStarted,
    responses=FAILED_RESPONSES,
)
def walk_resume(request: Request, walk_id: str = WalkPath) -> WalkStarted | JSONResponse:
    """Continue a walk after a crash, a kill or an error, in a worker process: epochs already
    traded are read back, an interrupted one resumes where its session's journal says, no epoch
    runs twice. 409 while a live process runs it or once it finished; 404 for an unknown walk;
    both before any job is queued."""
    settings = _settings(request)
    ops.walk.check_resume(walk_id, settings)
    return _start(settings, WalkResumeJob(walk_id=walk_id))


@router.get("/walks", response_model=WalkList)
def walk_list(request: Request) -> WalkList:
    """Every walk, newest first: where it is and, once finished, its verdict and the Sharpe
    edges its record could detect."""
    return WalkList(items=ops.walk.walk_rows(_settings(request)))


@router.get("/walks/{walk_id}", response_model=WalkView)
def walk_show(request: Request, walk_id: str = WalkPath) -> WalkView:
    """One walk: what it was started with, where it is, its epochs begun so far (each with its
    session and what each rule traded, without the day-by-day returns) and, once finished, its
    report: every rule's record against the default and 1/N, the verdict and the minimum
    detectable edge."""
    return ops.walk.walk_view(ops.walk.get_walk(walk_id, _settings(request)))


@router.get("/walks/{walk_id}/figures", response_model=WalkFigures)
def walk_figures(request: Request, walk_id: str = WalkPath) -> WalkFigures:
    """A finished walk's figures, as its tear sheet (``alphaloop report WALK_ID``) draws them:
    the record's equity and drawdown against the default and 1/N, the pick of each epoch, and
    each period's Sharpe. 422 for a walk that has not finished."""
    drawn = ops.walk_sheet.build_walk_sheet(_settings(request), walk_id)
    return WalkFigures(walk_id=walk_id, figures=jsonable(drawn.as_json()["figures"]))


__all__ = ["router"]
