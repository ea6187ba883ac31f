"""Routes of the preference flywheel (decisions to review, verdicts, pair counts, DPO runs) and
the portfolio manager. Each router is included only when its operations exist in this
alphaloop."""

from __future__ import annotations

import importlib
from typing import Any

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from alphaloop.server import workers
from alphaloop.server.models import DataName, JobStarted, Page, Verdict

After = Query(0, ge=0, description="only items after this cursor (the last answer's next_after)")


def _settings(request: Request) -> Any:
    return request.app.state.settings


def _ops(name: str) -> Any | None:
    try:
        return importlib.import_module(f"alphaloop.ops.{name}")
    except ImportError:
        return None


def _prefs_router(prefs: Any) -> APIRouter:
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

    @router.post("/decisions/{decision_id}/verdict")
    def verdict(request: Request, body: Verdict, decision_id: int = Path(ge=1)) -> dict[str, Any]:
        """Approve, override (with weights) or reject a decision."""
        view = prefs.decide(
            _settings(request), decision_id, body.verdict, weights=body.weights, note=body.note
        )
        return view.model_dump(mode="json")

    @router.get("/preferences/stats")
    def stats(request: Request) -> dict[str, Any]:
        """Preference pairs by source: total, labelled, new since the last DPO run."""
        settings = _settings(request)
        if not settings.journal_path.exists():
            return {"counts": {}, "total": 0, "labelled": 0, "new_since_training": 0}
        return prefs.preference_stats(settings).model_dump(mode="json")

    return router


def _dpo_router(dpo: Any) -> APIRouter:
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

    return router


class TickRequest(BaseModel):
    """Tick the active policy for one day (in a worker process)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    date: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$")
    data: DataName | None = None
    book: str = Field(default="main", pattern=r"^[A-Za-z0-9_\-]{1,32}$")


class HaltRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    why: str = Field(min_length=1, max_length=500)
    book: str = Field(default="main", pattern=r"^[A-Za-z0-9_\-]{1,32}$")


def _pm_router(pm: Any) -> APIRouter:
    router = APIRouter(prefix="/api/pm", tags=["portfolio manager"])

    @router.get("/status")
    def status(
        request: Request, book: str = Query("main", pattern=r"^[A-Za-z0-9_\-]{1,32}$")
    ) -> dict[str, Any]:
        """A book: cash, positions, equity, halt state and its last decisions."""
        return pm.pm_status(_settings(request), book=book).model_dump(mode="json")

    @router.post("/tick", status_code=202, response_model=JobStarted)
    def tick(request: Request, body: TickRequest) -> JobStarted:
        """Decide one day with the active policy, in a worker; the decision is journaled."""
        args = ["pm", "tick", "--json", "--book", body.book]
        if body.date:
            args += ["--date", body.date]
        if body.data:
            args += ["--data", body.data]
        worker = workers.spawn(_settings(request), "pm-tick", args)
        return JobStarted(job="pm_tick", pid=worker.pid)

    @router.post("/halt")
    def halt(request: Request, body: HaltRequest) -> dict[str, Any]:
        """Pull the kill switch: ticks journal the halt and send nothing."""
        return pm.pm_halt(_settings(request), body.why, book=body.book).model_dump(mode="json")

    @router.post("/resume")
    def resume(
        request: Request, book: str = Query("main", pattern=r"^[A-Za-z0-9_\-]{1,32}$")
    ) -> dict[str, Any]:
        return pm.pm_resume(_settings(request), book=book).model_dump(mode="json")

    return router


def routers() -> list[APIRouter]:
    """The routers whose operations exist in this alphaloop."""
    found = []
    if (pm := _ops("pm")) is not None:
        found.append(_pm_router(pm))
    if (prefs := _ops("prefs")) is not None:
        found.append(_prefs_router(prefs))
    if (dpo := _ops("dpo")) is not None:
        found.append(_dpo_router(dpo))
    return found
