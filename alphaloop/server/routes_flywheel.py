"""Routes of the preference flywheel (decisions to review, verdicts, pair counts, DPO runs) and
the portfolio manager."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from alphaloop.ops import dpo, jobs, pm, prefs
from alphaloop.ops.records import BookRecord, DecisionView
from alphaloop.ops.requests import (
    BOOK,
    MAIN_BOOK,
    HaltRequest,
    ResumeBookRequest,
    VerdictRequest,
)
from alphaloop.server.models import (
    After,
    DpoStarted,
    DpoTrainBody,
    IdPath,
    JobStarted,
    Page,
    TickBody,
)
from alphaloop.server.routes_jobs import FAILED_RESPONSES, answer


def _settings(request: Request) -> Any:
    return request.app.state.settings


def _prefs_router() -> APIRouter:
    router = APIRouter(prefix="/api", tags=["feedback"])

    @router.get("/decisions", response_model=Page)
    def decisions(request: Request, after: int = After) -> Page:
        """Portfolio manager decisions awaiting a verdict, oldest first (id above ``after``)."""
        settings = _settings(request)
        rows = prefs.review_decisions(settings) if settings.journal_path.exists() else []
        return Page(
            items=[r.model_dump(mode="json") for r in rows if r.id > after],
            next_after=max([after, *(r.id for r in rows)]),
        )

    @router.post("/decisions/{decision_id}/verdict", response_model=DecisionView)
    def verdict(
        request: Request, body: VerdictRequest, decision_id: int = IdPath()
    ) -> DecisionView:
        """Approve, override (with weights) or reject a decision."""
        view = prefs.decide(
            _settings(request), decision_id, body.verdict, weights=body.weights, note=body.note
        )
        return view

    @router.get("/preferences/stats", response_model=prefs.PreferenceStats)
    def stats(request: Request) -> prefs.PreferenceStats:
        """Preference pairs by source: total, labelled, new since the last DPO run."""
        settings = _settings(request)
        if not settings.journal_path.exists():
            return prefs.PreferenceStats(
                counts={}, total=0, labelled=0, last_trained_id=0, new_since_training=0
            )
        return prefs.preference_stats(settings)

    return router


def _dpo_router() -> APIRouter:
    router = APIRouter(prefix="/api", tags=["feedback"])

    @router.get("/dpo/runs", response_model=Page)
    def dpo_runs(request: Request, after: int = After) -> Page:
        """DPO runs and skipped checks, oldest first (id above ``after``)."""
        settings = _settings(request)
        rows = sorted(
            dpo.list_dpo_runs(settings) if settings.journal_path.exists() else [],
            key=lambda r: r.id,
        )
        return Page(
            items=[r.model_dump(mode="json") for r in rows if r.id > after],
            next_after=max([after, *(r.id for r in rows)]),
        )

    @router.post(
        "/dpo/train",
        status_code=202,
        response_model=DpoStarted,
        responses={
            **FAILED_RESPONSES,
            409: {"description": "a DPO run is running, the run name is taken, or too few pairs"},
            422: {"description": "no model configured (ALPHALOOP_DPO_MODEL), an unknown model_id"},
        },
    )
    def dpo_train(request: Request, body: DpoTrainBody) -> DpoStarted | JSONResponse:
        """Start a DPO run on every labelled pair in a worker process (a ``dpo`` job) with the
        server's model, ``ALPHALOOP_DPO_MODEL``; the trained model goes to
        ``<home>/dpo/<run>``. One run at a time: 409 while another is running."""
        settings = _settings(request)
        model = dpo.served_model(settings, body.model_id)
        run = body.run or f"run-{datetime.now(UTC):%Y%m%d-%H%M%S}"
        with _dpo_lock:  # check and start as one step: two requests never start two runs
            out = dpo.check_dpo_free(settings, run)
            job = jobs.DpoJob(
                model_dir=str(model),
                out_dir=str(out),
                lora=body.lora,
                max_steps=body.max_steps,
                max_length=body.max_length,
            )
            view = jobs.start_job(settings, job)
        view = jobs.wait_for_job(settings, view.id, lambda v: _dpo_run_of(settings, v) is not None)
        return answer(
            view,
            lambda v: DpoStarted(
                run=run,
                model_id=model.name,
                pid=v.pid,
                dpo_run_id=_dpo_run_of(settings, v),
                job_id=v.id,
            ),
        )

    return router


_dpo_lock = threading.Lock()


def _dpo_run_of(settings: Any, view: jobs.JobView) -> int | None:
    """The journal id of the DPO run a job's worker started (runs record their owner's pid),
    or None while it loads its libraries."""
    if isinstance(view.result, jobs.DpoResult):
        return view.result.dpo_run_id
    mine = [r.id for r in dpo.list_dpo_runs(settings) if r.owner_pid == view.pid]
    return mine[0] if mine else None


BookQuery = Query(MAIN_BOOK, pattern=BOOK, description="the book's name")


def _pm_router() -> APIRouter:
    router = APIRouter(prefix="/api/pm", tags=["portfolio manager"])

    @router.get("/status", response_model=pm.BookStatus)
    def status(request: Request, book: str = BookQuery) -> pm.BookStatus:
        """A book: cash, positions, equity, halt state and its last decisions."""
        return pm.pm_status(_settings(request), book=book)

    @router.post("/tick", status_code=202, response_model=JobStarted, responses=FAILED_RESPONSES)
    def tick(request: Request, body: TickBody) -> JobStarted | JSONResponse:
        """Decide one day with the active policy, in a worker (a ``pm_tick`` job); the
        decision is journaled, and the job's result or error is at ``GET /api/jobs/{job_id}``.
        A day the tick cannot decide (422) or a day before the book's last tick (409) is
        answered here, before a job is queued."""
        given = None if body.date is None else body.date.isoformat()
        day = pm.check_tick_date(_settings(request), date=given, data=body.data, book=body.book)
        job = jobs.PmTickJob(date=day, data=body.data, book=body.book)
        view = jobs.start_job(_settings(request), job)
        return answer(view, lambda v: JobStarted(job="pm_tick", pid=v.pid, job_id=v.id))

    @router.post("/halt", response_model=BookRecord)
    def halt(request: Request, body: HaltRequest) -> BookRecord:
        """Pull the kill switch: ticks journal the halt and send nothing."""
        return pm.pm_halt(_settings(request), body.why, book=body.book, origin="api")

    @router.post("/resume", response_model=BookRecord)
    def resume(request: Request, params: Annotated[ResumeBookRequest, Query()]) -> BookRecord:
        """Lift a book's halt; journaled with the reason and the origin ``api``."""
        return pm.pm_resume(_settings(request), book=params.book, why=params.why, origin="api")

    return router


def routers() -> list[APIRouter]:
    """The portfolio manager's, the preferences' and the DPO runs' routers."""
    return [_pm_router(), _prefs_router(), _dpo_router()]
