"""Routes of the env and knobs, charts, the policy library and the scheduler."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse

from alphaloop import ops
from alphaloop.ops import dashboard, jobs, policies, schedule
from alphaloop.ops import sessions as ops_sessions
from alphaloop.ops.env import EnvInfo, env_info
from alphaloop.ops.requests import ActivateRequest, ChartKind, ScheduleJobName
from alphaloop.server.answers import Activated, ActivePolicy, Knobs, PlotlyFigure, ScheduleJobs
from alphaloop.server.models import (
    MAX_ID,
    SESSION_ID,
    After,
    ChartReadOut,
    IdPath,
    InterpretRequest,
    JobStarted,
    Page,
)
from alphaloop.server.routes_jobs import FAILED_RESPONSES, answer

router = APIRouter(prefix="/api")


def _settings(request: Request) -> Any:
    return request.app.state.settings


@router.get("/env", response_model=EnvInfo, tags=["setup"])
def env(n_assets: int = Query(4, ge=2, le=500)) -> EnvInfo:
    """The Gymnasium env: its id, config at the default knobs, spaces, and the 16 knobs."""
    return env_info(n_assets)


@router.get("/knobs", response_model=Knobs, tags=["setup"])
def knobs() -> Knobs:
    """The 16 knobs with bounds, and the clipping rules."""
    return Knobs(knobs=ops.knobs.list_knobs(), clip_rules=list(ops.knobs.CLIP_RULES))


# Charts of objectives and metrics only: drawn without reading any trial's per-day series.
_METRICS_CHARTS = ("research_progress", "ratio_curve")


def _figure(request: Request, kind: str, session_id: str | None, trial_idx: int | None) -> Any:
    name = ops.charts.chart_kind(kind)
    if name in _METRICS_CHARTS and trial_idx is None:
        return ops_sessions.metrics_chart(_settings(request), name, session_id)
    return ops.charts.build_chart(
        name, _settings(request), session_id=session_id, trial_idx=trial_idx
    )


# A chart is sent as plotly wrote it (no parse and re-dump of a large figure): its answer is
# declared, not validated.
_FIGURE = {200: {"model": PlotlyFigure, "description": "plotly figure JSON"}}


@router.get("/charts/{kind}", responses=_FIGURE, tags=["charts"])
def chart(
    request: Request,
    kind: ChartKind,
    session_id: str | None = Query(None, pattern=SESSION_ID, max_length=40),
    trial_idx: int | None = Query(None, ge=0, le=MAX_ID),
) -> Response:
    """A chart as plotly figure JSON (``Plotly.newPlot(div, fig.data, fig.layout)``)."""
    figure = _figure(request, kind, session_id, trial_idx).figure
    return Response(content=figure.to_json(), media_type="application/json")


@router.get("/ratio-curve", responses=_FIGURE, tags=["charts"])
def ratio_curve(request: Request) -> Response:
    """Every completed trial of every run ranked by Sharpe, with the max-drawdown overlay."""
    return chart(request, "ratio_curve", None, None)


@router.post("/charts/interpret", response_model=ChartReadOut, tags=["charts"])
def interpret(request: Request, body: InterpretRequest) -> ChartReadOut:
    """Read a chart in 4-6 bullets: the vision model when one is configured, else the embedded
    data-grounded reader; the read is journaled and signed with the model and elapsed time."""
    png = ops.charts.chart_image(body.image_b64) if body.image_b64 else None
    ctx = body.context
    built = _figure(request, body.kind, ctx.session_id, ctx.trial_idx)
    read = ops.charts.interpret_chart(built, _settings(request), png=png)
    return ChartReadOut(
        kind=read.kind,
        model=read.model,
        bullets=read.bullets,
        elapsed_s=read.elapsed_s,
        embedded=read.embedded,
        signature=read.signature,
        id=read.id,
    )


@router.get("/policies", response_model=Page, tags=["policies"])
def policy_list(request: Request, after: int = After) -> Page:
    """The policy library, oldest first, entries with an id above ``after``; ``active`` marks
    the active one."""
    settings = _settings(request)
    rows = sorted(policies.list_policies(settings), key=lambda p: p.id)
    active = policies.active_policy(settings) if rows else None
    overrides = policies.activation_overrides(settings) if rows else {}
    verdicts = {s.id: s for s in dashboard.session_rows(settings)} if rows else {}
    items = [
        {
            **p.model_dump(mode="json"),
            "active": active is not None and active.id == p.id,
            "override": overrides.get(p.id),
            "session_verdict": _verdict(verdicts.get(p.session_id)),
        }
        for p in rows
        if p.id > after
    ]
    return Page(items=items, next_after=max([after, *(p.id for p in rows)]))


def _verdict(row: dashboard.SessionRow | None) -> dict[str, Any] | None:
    """What its session concluded: the pick, the gates, and the pick against the default and
    1/N on TEST (``go``: gates passed and the pick beats 1/N)."""
    if row is None:
        return None
    keep = ("status", "pick", "gates_passed", "go", "vs_default", "vs_equal_weight")
    return row.model_dump(mode="json", include=set(keep))


@router.get("/policies/active", response_model=ActivePolicy, tags=["policies"])
def policy_active(request: Request) -> ActivePolicy:
    return ActivePolicy(policy=policies.active_policy(_settings(request)))


@router.get("/policies/{policy_id}", response_model=policies.PolicyDetail, tags=["policies"])
def policy_show(request: Request, policy_id: int = IdPath()) -> policies.PolicyDetail:
    return policies.show_policy(_settings(request), policy_id)


@router.post("/policies/{policy_id}/activate", response_model=Activated, tags=["policies"])
def policy_activate(
    request: Request,
    params: Annotated[ActivateRequest, Query()],
    policy_id: int = IdPath(),
) -> Activated:
    """Make a library entry the active policy (its file's sha256 is checked first). Without a
    GO from its gates it is refused (409) unless ``force`` with a ``reason`` (journaled)."""
    record = policies.activate_policy(
        _settings(request), policy_id, force=params.force, reason=params.reason
    )
    return Activated(policy=record, active=True)


@router.get("/schedule/jobs", response_model=ScheduleJobs, tags=["schedule"])
def schedule_jobs(request: Request) -> ScheduleJobs:
    """The scheduler's jobs with their cron, next run time and last run, and the pid of the
    scheduler running for this home (None when none runs)."""
    settings = _settings(request)
    return ScheduleJobs(
        scheduler_pid=schedule.scheduler_holder(settings), jobs=schedule.list_jobs(settings)
    )


@router.get("/schedule/runs", response_model=Page, tags=["schedule"])
def schedule_runs(
    request: Request,
    after: int = After,
    job: ScheduleJobName | None = None,
) -> Page:
    rows = schedule.schedule_runs(_settings(request), job=job, after=after)
    return Page(
        items=[r.model_dump(mode="json") for r in rows],
        next_after=max([after, *(r.id for r in rows)]),
    )


@router.post(
    "/schedule/{job}/run",
    status_code=202,
    response_model=JobStarted,
    responses=FAILED_RESPONSES,
    tags=["schedule"],
)
def schedule_run_now(request: Request, job: ScheduleJobName) -> JobStarted | JSONResponse:
    """Run one job now in a worker process; its run appears in ``/api/schedule/runs``, and the
    job's outcome in ``GET /api/jobs/{job_id}`` (failed when the run failed)."""
    schedule.job_spec(job)
    view = jobs.start_job(_settings(request), jobs.ScheduleJob(job=job))
    return answer(view, lambda v: JobStarted(job=job, pid=v.pid, job_id=v.id))


__all__ = ["router"]
