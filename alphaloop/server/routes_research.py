"""Routes of research sessions and manual PPO runs: start (in a worker), stop, read."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Path, Query, Request

from alphaloop import ops
from alphaloop.server import workers
from alphaloop.server._json import jsonable
from alphaloop.server.models import SESSION_ID, Page, ResearchRequest, Started, TrainRequest

router = APIRouter(prefix="/api")
_MANUAL = "manual"  # the proposer manual runs are journaled with
After = Query(0, ge=0, description="only items after this cursor (the last answer's next_after)")
SessionPath = Path(pattern=SESSION_ID, max_length=40)


def _settings(request: Request) -> Any:
    return request.app.state.settings


@router.get("/sessions", response_model=Page, tags=["sessions"])
def sessions(request: Request, after: int = After) -> Page:
    """Every session, oldest first, each with its ordinal ``n``; ``after=N`` gives those after
    the N-th."""
    rows = list(reversed(ops.list_sessions(_settings(request))))
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


def _trials_after(trials: list[Any], after: int) -> tuple[list[Any], int]:
    """Trials with a (journal-wide) id above ``after``, and the cursor to poll from next: the id
    before the first trial still running, so a row that finishes later is sent again."""
    rows = [t for t in trials if t.id > after]
    running = [t.id for t in rows if t.status == "running"]
    if running:
        return rows, min(running) - 1
    return rows, max((t.id for t in rows), default=after)


@router.get("/sessions/{session_id}/journal", tags=["sessions"])
def session_journal(
    request: Request, session_id: str = SessionPath, after: int = After
) -> dict[str, Any]:
    """The full journal of one session: leaderboard, trials (id above ``after``) with their
    clips, the test-window result, chart reads, the newest validation report."""
    settings = _settings(request)
    r = ops.session_review(settings, session_id)
    trials, nxt = _trials_after(r.trials, after)
    return {
        "session": r.session.model_dump(mode="json"),
        "counted_trials": r.counted_trials,
        "leaderboard": [t.model_dump(mode="json") for t in r.leaderboard],
        "trials": [
            {
                **t.model_dump(mode="json", exclude={"prompt", "traceback_tail"}),
                "clips": [c.model_dump(mode="json") for c in r.clips.get(t.id, [])],
            }
            for t in trials
        ],
        "final": jsonable(r.session.final),
        "chart_reads": [c.model_dump(mode="json") for c in r.chart_reads],
        "validation": jsonable(ops.latest_validation(settings, session_id)),
        "next_after": nxt,
    }


def _newest(settings: Any, manual: bool) -> str | None:
    for row in ops.list_sessions(settings):
        if (row.session.proposer == _MANUAL) == manual:
            return row.session.id
    return None


def _snapshot(status: ops.SessionStatus, after: int) -> dict[str, Any]:
    trials, nxt = _trials_after(status.trials, after)
    return {
        "session": status.session.model_dump(mode="json"),
        "counted_trials": status.counted_trials,
        "best": status.best.model_dump(mode="json") if status.best else None,
        "running": [r.model_dump(mode="json") for r in status.running],
        "resume": status.resume,
        "trials": [t.model_dump(mode="json", exclude={"prompt", "traceback_tail"}) for t in trials],
        "next_after": nxt,
    }


@router.get("/research/current", tags=["research"])
def research_current(
    request: Request,
    session_id: str | None = Query(None, pattern=SESSION_ID, max_length=40),
    after: int = After,
) -> dict[str, Any]:
    """The snapshot of a research session (default: the newest): status, counted trials, best
    so far, the trials running now, and the trials with an id above ``after``."""
    settings = _settings(request)
    sid = session_id or _newest(settings, manual=False)
    if sid is None:
        return {"session": None, "trials": [], "running": [], "best": None, "next_after": after}
    status = ops.session_status(settings, sid)
    assert status is not None  # an id was given
    return _snapshot(status, after)


def _research_args(body: ResearchRequest) -> list[str]:
    args = ["research", "start", "--json", "--mode", body.mode, "--budget", str(body.budget)]
    args += ["--metric", body.metric, "--data", body.data, "--proposer", body.proposer]
    args += ["--noise-seeds", str(body.noise_seeds), "--seed", str(body.seed)]
    if body.symbols:
        args += ["--symbols", ",".join(body.symbols)]
    if body.total_timesteps is not None:
        args += ["--total-timesteps", str(body.total_timesteps)]
    lim = body.limits
    if lim.max_drawdown is not None:
        args += ["--max-drawdown", repr(lim.max_drawdown)]
    if lim.max_turnover is not None:
        args += ["--max-turnover", repr(lim.max_turnover)]
    if lim.time_budget_s is not None:
        args += ["--time-budget", f"{lim.time_budget_s:.3f}s"]
    if lim.max_tokens_total is not None:
        args += ["--max-tokens-total", str(lim.max_tokens_total)]
    return [*args, "--", body.goal]  # after "--": a goal starting with "-" is not a flag


@router.post("/research", status_code=202, response_model=Started, tags=["research"])
def research_start(request: Request, body: ResearchRequest) -> Started:
    """Start a research session in a worker process; answers once it is journaled."""
    settings = _settings(request)
    worker = workers.spawn(settings, "research", _research_args(body))
    return Started(session_id=workers.wait_for_session(settings, worker), pid=worker.pid)


@router.post("/research/{session_id}/stop", tags=["research"])
def research_stop(request: Request, session_id: str = SessionPath) -> dict[str, Any]:
    """Ask a running session to stop after its current trial (finalize still runs)."""
    stopped = ops.stop_session(session_id, _settings(request))
    return {"session": session_id, "status": stopped.status.value}


def _manual_status(settings: Any) -> dict[str, Any]:
    sid = _newest(settings, manual=True)
    if sid is None:
        return {"session": None, "trial": None, "curve": [], "process_alive": False}
    status = ops.session_status(settings, sid)
    assert status is not None
    trial = status.trials[-1] if status.trials else None
    alive = any(r.process_alive for r in status.running)
    return {
        "session": status.session.model_dump(mode="json"),
        "trial": trial.model_dump(mode="json", exclude={"prompt", "curve"}) if trial else None,
        "curve": jsonable(trial.curve or []) if trial else [],
        "process_alive": alive,
    }


@router.get("/train/status", tags=["train"])
def train_status(request: Request) -> dict[str, Any]:
    """The newest manual PPO run: its session, trial and reward curve (at most 200 points of
    ``[env steps, mean episode reward]``)."""
    return _manual_status(_settings(request))


@router.get("/train/curve", tags=["train"])
def train_curve(request: Request) -> dict[str, Any]:
    """The newest manual run's reward curve alone."""
    status = _manual_status(_settings(request))
    session = status["session"]
    return {"session_id": session["id"] if session else None, "curve": status["curve"]}


@router.post("/train", status_code=202, response_model=Started, tags=["train"])
def train_start(request: Request, body: TrainRequest) -> Started:
    """Start a manual PPO run in a worker process; answers once it is journaled."""
    settings = _settings(request)
    ops.list_knobs(list(body.knobs))  # UnknownKnob (422) before any process starts
    args = ["train", "--json", "--data", body.data, "--seed", str(body.seed)]
    args += ["--metric", body.metric]
    if body.symbols:
        args += ["--symbols", ",".join(body.symbols)]
    if body.total_timesteps is not None:
        args += ["--total-timesteps", str(body.total_timesteps)]
    for name, value in body.knobs.items():
        args += ["--set", f"{name}={value!r}"]
    worker = workers.spawn(settings, "train", args)
    return Started(session_id=workers.wait_for_session(settings, worker), pid=worker.pid)


__all__ = ["router"]
