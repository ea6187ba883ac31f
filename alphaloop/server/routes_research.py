"""Routes of research sessions and manual PPO runs: start (in a worker), stop, read."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse

from alphaloop import ops
from alphaloop.exceptions import InvalidRequest
from alphaloop.ops import jobs
from alphaloop.ops import sessions as ops_sessions
from alphaloop.ops.goal import understand_goal
from alphaloop.ops.records import jsonable, report_json
from alphaloop.ops.requests import ValidateRequest
from alphaloop.ops.research import check_proposer
from alphaloop.server.answers import (
    ManualCurve,
    ManualStatus,
    PlotlyFigure,
    SessionJournal,
    Snapshot,
    SnapshotWithChart,
    Stopped,
)
from alphaloop.server.idempotency import IdempotencyKey
from alphaloop.server.models import (
    SESSION_ID,
    After,
    JobStarted,
    Page,
    ResearchBody,
    Started,
    TrainBody,
)
from alphaloop.server.routes_jobs import FAILED_RESPONSES, answer

router = APIRouter(prefix="/api")
SessionPath = Path(pattern=SESSION_ID, max_length=40)


def _settings(request: Request) -> Any:
    return request.app.state.settings


@router.get("/sessions", response_model=Page, tags=["sessions"])
def sessions(request: Request, after: int = After) -> Page:
    """Every session, oldest first, each with its ordinal ``n``; ``after=N`` gives those after
    the N-th."""
    rows = list(reversed(ops.sessions.list_sessions(_settings(request))))
    items = [
        {
            "n": n,
            **r.session.model_dump(mode="json"),
            "counted_trials": r.counted_trials,
            "resume": r.resume,
        }
        for n, r in enumerate(rows, start=1)
        if n > after
    ]
    return Page(items=items, next_after=max(after, len(rows)))


# The per-day series of a trial (754 daily returns over the embedded data's validation window,
# a weight per asset, a training curve): null in answers unless asked for. A trial's prompt and
# traceback tail are never sent.
SERIES_FIELDS = frozenset({"val_returns", "final_weights", "curve"})
_NEVER = frozenset({"prompt", "traceback_tail"})


def _cursor(rows: list[Any], after: int) -> int:
    """The cursor to poll from next, given the trials with an id above ``after``: the id before
    the first trial still running, so a row that finishes later is sent again."""
    running = [t.id for t in rows if t.status == "running"]
    if running:
        return min(running) - 1
    return max((t.id for t in rows), default=after)


def _dump(t: Any, *, series: bool = False) -> dict[str, Any]:
    """A trial as JSON; its series null unless ``series`` (the shape stays the same)."""
    if series:
        return jsonable(t.model_dump(mode="json", exclude=set(_NEVER)))
    row = t.model_dump(mode="json", exclude=set(_NEVER | SERIES_FIELDS))
    return jsonable({**row, **dict.fromkeys(SERIES_FIELDS)})


def _trial(t: Any, clips: dict[int, list[Any]], *, series: bool = False) -> dict[str, Any]:
    return {
        **_dump(t, series=series),
        "clips": [c.model_dump(mode="json") for c in clips.get(t.id, [])],
    }


@router.get("/sessions/{session_id}/journal", response_model=SessionJournal, tags=["sessions"])
def session_journal(
    request: Request,
    session_id: str = SessionPath,
    after: int = After,
    series: bool = Query(
        False,
        description="also send each trial's per-day series (val_returns: a return per "
        "validation day; final_weights; curve: the PPO training curve), in the trials and the "
        "leaderboard; without it they are null. They are most of a long session's size.",
    ),
) -> SessionJournal:
    """The journal of one session: leaderboard, trials (id above ``after``) with their clips,
    the test-window result, chart reads, the newest validation report. Trials come without
    their per-day series unless ``series=true``."""
    settings = _settings(request)
    r = ops_sessions.session_review_after(settings, session_id, after=after, series=series)
    validation = ops.validate.latest_validation(settings, session_id)
    return SessionJournal(
        session=r.session,
        counted_trials=r.counted_trials,
        leaderboard=[_dump(t, series=series) for t in r.leaderboard],
        trials=[_trial(t, r.clips, series=series) for t in r.trials],
        final=jsonable(report_json(r.session.final)),
        chart_reads=[c.model_dump(mode="json") for c in r.chart_reads],
        validation=jsonable(validation.journaled() if validation else None),
        next_after=_cursor(r.trials, after),
    )


def _newest(settings: Any, manual: bool) -> str | None:
    for row in ops.sessions.list_sessions(settings):
        if row.session.manual == manual:
            return row.session.id
    return None


def _snapshot(snap: ops_sessions.SessionSnapshot, after: int) -> dict[str, Any]:
    return {
        "session": snap.session,
        "counted_trials": snap.counted_trials,
        "best": _dump(snap.best) if snap.best else None,
        "running": snap.running,
        "resume": snap.resume,
        "trials": [_trial(t, snap.clips) for t in snap.trials],
        "next_after": _cursor(snap.trials, after),
    }


@router.get("/research/current", response_model=Snapshot | SnapshotWithChart, tags=["research"])
def research_current(
    request: Request,
    session_id: str | None = Query(None, pattern=SESSION_ID, max_length=40),
    after: int = After,
    chart: bool = Query(
        False,
        description="also send the session's research_progress chart (plotly figure JSON, "
        "null while no trial has finished), so a first poll can draw it at once",
    ),
) -> Snapshot | SnapshotWithChart:
    """The snapshot of a research session (default: the newest): status, counted trials, best
    so far, the trials running now, and the trials with an id above ``after`` with their clips
    (without per-day series; ``GET /api/sessions/{id}/journal?series=true`` has them). A poll
    reads only what changed since ``after``, so its cost does not grow with the session."""
    settings = _settings(request)
    sid = session_id or _newest(settings, manual=False)
    if sid is None:
        found: dict[str, Any] = {
            "session": None, "trials": [], "running": [], "best": None, "next_after": after
        }  # fmt: skip
    else:
        found = _snapshot(ops_sessions.session_snapshot(settings, sid, after=after), after)
    if chart:
        return SnapshotWithChart(**found, chart=_progress_figure(settings, sid) if sid else None)
    return Snapshot(**found)


def _progress_figure(settings: Any, session_id: str) -> PlotlyFigure | None:
    try:
        drawn = ops_sessions.metrics_chart(settings, "research_progress", session_id)
    except InvalidRequest:  # no trial finished yet
        return None
    return PlotlyFigure(**json.loads(drawn.figure.to_json()))


def _start_session_job(settings: Any, job: jobs.Job) -> Started | JSONResponse:
    """Starts ``job`` in a worker; answers once the worker has journaled its session (or the
    job failed first: its error, as journaled)."""
    view = jobs.start_job(settings, job)
    view = jobs.wait_for_job(settings, view.id, lambda v: v.session_id is not None)
    return answer(view, lambda v: Started(session_id=v.session_id, pid=v.pid, job_id=v.id))


@router.post(
    "/research",
    status_code=202,
    response_model=Started,
    responses=FAILED_RESPONSES,
    tags=["research"],
)
def research_start(
    request: Request, body: ResearchBody, key: str | None = IdempotencyKey
) -> Started | JSONResponse:
    """Start a research session in a worker process; answers once it is journaled. With an
    ``Idempotency-Key``, the same key starts one session, however often it is sent. The
    request is checked completely first (422, or 503 for the LLM proposer on a server with no
    endpoint configured): nothing is journaled and no process starts for a refused one."""
    settings = _settings(request)
    ops.research.session_spec(body)  # checked whole here: 422 before anything is queued
    check_proposer(body.proposer, settings)
    return request.app.state.idempotency.once(
        key, "research", body, lambda: _start_research(settings, body)
    )


def _start_research(settings: Any, body: Any) -> Started | JSONResponse:
    """Reads the goal (the settings it names, as their flags would), then starts the job."""
    body, understood = understand_goal(body, settings)
    job = jobs.ResearchJob(**body.model_dump(), understood=understood)
    started = _start_session_job(settings, job)
    if isinstance(started, Started):
        return started.model_copy(update={"understood": understood.lines()})
    return started


@router.post(
    "/research/{session_id}/resume",
    status_code=202,
    response_model=Started,
    responses=FAILED_RESPONSES,
    tags=["research"],
)
def research_resume(request: Request, session_id: str = SessionPath) -> Started | JSONResponse:
    """Continue a session after a crash, a kill or a stop, in a worker process, from its next
    trial. 409 while a live process runs it; 404 for an unknown session."""
    settings = _settings(request)
    ops.research.check_resume(session_id, settings)  # refused here, before any process starts
    return _start_session_job(settings, jobs.ResumeJob(session_id=session_id))


@router.post("/research/{session_id}/stop", response_model=Stopped, tags=["research"])
def research_stop(request: Request, session_id: str = SessionPath) -> Stopped:
    """Ask a running session to stop after its current trial (finalize still runs)."""
    stopped = ops.research.stop_session(session_id, _settings(request))
    return Stopped(session=session_id, status=stopped.status.value)


@router.post(
    "/sessions/{session_id}/validate",
    status_code=202,
    response_model=JobStarted,
    responses=FAILED_RESPONSES,
    tags=["sessions"],
)
def session_validate(
    request: Request, body: ValidateRequest, session_id: str = SessionPath
) -> JobStarted | JSONResponse:
    """Run the validation suite of a session in a worker process (a ``validate`` job): PBO,
    deflated Sharpe, walk-forward, stress and the go/no-go gates, journaled as the session's
    newest validation report (``GET /api/sessions/{session_id}/validation``). 404 for an
    unknown session, before any process starts."""
    settings = _settings(request)
    ops.sessions.get_session(settings, session_id)
    job = jobs.ValidateJob(session_id=session_id, **body.model_dump())
    view = jobs.start_job(settings, job)
    return answer(view, lambda v: JobStarted(job="validate", pid=v.pid, job_id=v.id))


def _manual_status(settings: Any) -> ManualStatus:
    sid = _newest(settings, manual=True)
    if sid is None:
        return ManualStatus(session=None, trial=None, curve=[], process_alive=False)
    status = ops.sessions.session_status(settings, sid)
    assert status is not None
    trial = status.trials[-1] if status.trials else None
    alive = any(r.process_alive for r in status.running)
    return ManualStatus(
        session=status.session,
        trial=jsonable(trial.model_dump(mode="json", exclude={"prompt", "curve"}))
        if trial
        else None,
        curve=jsonable(trial.curve or []) if trial else [],
        process_alive=alive,
    )


@router.get("/train/status", response_model=ManualStatus, tags=["train"])
def train_status(request: Request) -> ManualStatus:
    """The newest manual PPO run: its session, trial and reward curve (at most 200 points of
    ``[env steps, mean episode reward]``)."""
    return _manual_status(_settings(request))


@router.get("/train/curve", response_model=ManualCurve, tags=["train"])
def train_curve(request: Request) -> ManualCurve:
    """The newest manual run's reward curve alone."""
    status = _manual_status(_settings(request))
    session = status.session
    return ManualCurve(session_id=session.id if session else None, curve=status.curve)


@router.post(
    "/train", status_code=202, response_model=Started, responses=FAILED_RESPONSES, tags=["train"]
)
def train_start(
    request: Request, body: TrainBody, key: str | None = IdempotencyKey
) -> Started | JSONResponse:
    """Start a manual PPO run in a worker process; answers once it is journaled (once per
    ``Idempotency-Key``). The request is checked completely first (422): nothing is journaled
    and no process starts for a refused one."""
    ops.train.manual_spec(body)
    return request.app.state.idempotency.once(key, "train", body, lambda: _train(request, body))


def _train(request: Request, body: Any) -> Started | JSONResponse:
    return _start_session_job(_settings(request), jobs.TrainJob(**body.model_dump()))


__all__ = ["router"]
