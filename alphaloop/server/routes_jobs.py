"""Routes of jobs: the long work routes hand to worker processes (``alphaloop.ops.jobs``), read
back from the journal as typed rows, and how a route answers for a job that failed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from alphaloop.ops import jobs
from alphaloop.server.errors import error_body
from alphaloop.server.models import After, IdPath, Page

router = APIRouter(prefix="/api", tags=["jobs"])
T = TypeVar("T")

# What a route that starts work documents besides its answer: the job failed before the route
# could answer, with the status its error stands for.
FAILED = {
    "description": "the job failed before it got going (data that cannot be loaded, a bad "
    "setting...): ``detail`` is its error's message, ``error`` its type, ``job_id`` the job "
    "(``GET /api/jobs/{job_id}``); the status is the one that error stands for (404, 409, "
    "422 or 500)"
}
FAILED_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: FAILED for status in (404, 409, 422, 500)
}


KindFilter = Query(None, description="only jobs of this kind")


def _settings(request: Request) -> Any:
    return request.app.state.settings


def failed(view: jobs.JobView) -> JSONResponse:
    """The answer for a job that failed (or whose worker died): its journaled error, typed."""
    assert view.error is not None
    e = view.error
    body = error_body(e.http_status, e.message, e.type, e.exit_code, job_id=view.id)
    return JSONResponse(body, status_code=e.http_status)


def answer(view: jobs.JobView, started: Callable[[jobs.JobView], T]) -> T | JSONResponse:
    """``started(view)`` for a job that is going (or went) well, else its error."""
    return failed(view) if view.error is not None else started(view)


@router.get("/jobs", response_model=Page)
def job_list(
    request: Request,
    after: int = After,
    kind: jobs.JobKind | None = KindFilter,
) -> Page:
    """Jobs started from this API, oldest first, with an id above ``after`` (of one kind if
    given), each as ``GET /api/jobs/{id}`` gives it. Follow one job with that route: a row's
    status changes after the cursor has passed it."""
    rows = jobs.list_jobs(_settings(request), kind=kind, after=after)
    return Page(
        items=[r.model_dump(mode="json") for r in rows],
        next_after=max([after, *(r.id for r in rows)]),
    )


@router.get("/jobs/{job_id}", response_model=jobs.JobView)
def job_show(request: Request, job_id: int = IdPath()) -> jobs.JobView:
    """One job: its typed request (``job``, by ``kind``), ``status`` (queued, running,
    finished, failed, or interrupted when its worker died), the session it runs, and its typed
    ``result`` or ``error`` (type, message, exit code, HTTP status)."""
    return jobs.get_job(_settings(request), job_id)


__all__ = ["FAILED_RESPONSES", "answer", "failed", "router"]
