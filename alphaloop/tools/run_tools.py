"""Tools that do work: run one trial, run a research session, stop a session.

They ask ``ctx.confirm`` first when someone is there to answer (see :func:`call_tool`). A trial
run from here goes through the same ``clip`` as a session's trials and is scored on the
validation window only; it is not journaled (it belongs to no session).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from alphaloop import ops
from alphaloop.ops.goal import understand_goal
from alphaloop.ops.records import report_json
from alphaloop.ops.requests import ResearchRequest, SessionId, derive
from alphaloop.ops.research import check_proposer, session_spec
from alphaloop.tools.base import Tool, ToolContext
from alphaloop.tools.journal_tools import trial_summary
from alphaloop.vocabulary import DEFAULT_METRIC, Metric, Mode

if TYPE_CHECKING:
    from alphaloop.ops.research import LoopEvent

_ARGS = ConfigDict(frozen=True, extra="forbid")
_DATA = "sp500 (the embedded S&P 500 set), synthetic[:SEED], or a CSV/Parquet path"


class RunTrialArgs(BaseModel):
    model_config = _ARGS

    mode: Mode = "cufolio_only"
    changes: dict[str, float | str] = Field(
        default_factory=dict, description="knob -> value, applied to the starting config"
    )
    from_session: str | None = Field(
        default=None, description="start from this session's best config (default: defaults)"
    )
    data: str = Field(default="sp500", description=_DATA)
    seed: int = 0
    metric: Metric = DEFAULT_METRIC
    total_timesteps: int | None = Field(default=None, ge=64, description="PPO env steps")


def run_by_hand(args: RunTrialArgs, ctx: ToolContext) -> dict[str, Any]:
    request = ops.trial.TrialRequest(
        mode=args.mode,
        changes=args.changes,
        rationale="run from chat",
        from_session=args.from_session,
        data=args.data,
        seed=args.seed,
        metric=args.metric,
        total_timesteps=args.total_timesteps,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # data warnings are the CLI's to show
        run = ops.trial.run_by_hand(
            request,
            ctx.settings,
            policy_dir=ctx.settings.policies_dir / "chat",
            on_start=ctx.progress,
        )
    result = run.result
    return {
        "window": f"validation {result.start_date}..{result.end_date}",
        "objective": result.objective,
        "metric": args.metric,
        "metrics": result.metrics,
        "baselines": result.baselines,
        "config": run.config,
        "clips": run.clips,
        "elapsed_s": result.elapsed_s,
        "journaled": False,
    }


# The research request as declared once, less the fields only the command line takes; a chat
# starts small sessions by default, and the confirmation asked before it runs is its guard.
StartResearchArgs: Any = derive(
    ResearchRequest,
    "StartResearchArgs",
    exclude=ResearchRequest.LOCAL,
    defaults={"budget": 5, "proposer": "tpe"},
)


def check_research(args: Any, ctx: ToolContext) -> None:
    """Refuses a session the research operation would refuse (before anyone confirms it)."""
    session_spec(args)
    check_proposer(args.proposer, ctx.settings)


def start_research(args: Any, ctx: ToolContext) -> dict[str, Any]:
    check_proposer(args.proposer, ctx.settings)
    args, understood = understand_goal(args, ctx.settings)
    spec = session_spec(ResearchRequest(**args.model_dump()))
    for line in understood.lines():
        ctx.progress(line)

    def on_event(event: LoopEvent) -> None:
        if event.name == "session_created":
            ctx.progress(f"session {event.session_id} started ({args.budget} trials)")
        elif event.name == "trial_finished":
            t = event.trial
            objective = "-" if t.objective is None else f"{t.objective:.4f}"
            ctx.progress(f"trial {t.idx} ({t.kind}) {t.status}, objective {objective}")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session_id = ops.research.run_research(spec, ctx.settings, on_event, understood)
    review = ops.sessions.session_review(ctx.settings, session_id, top=5)
    return {
        "session_id": session_id,
        "understood": understood.lines(),
        "counted_trials": review.counted_trials,
        "final": report_json(review.session.final),
        "leaderboard": [trial_summary(t) for t in review.leaderboard],
    }


class StopResearchArgs(BaseModel):
    model_config = _ARGS

    session_id: SessionId = Field(description="the session to stop")


def stop_research(args: StopResearchArgs, ctx: ToolContext) -> dict[str, Any]:
    s = ops.sessions.get_session(ctx.settings, args.session_id)
    if s.status in ("finished",):
        return {
            "session_id": s.id,
            "stop_requested": False,
            "note": "the session has already finished",
        }
    ops.research.stop_session(s.id, ctx.settings)
    return {
        "session_id": s.id,
        "stop_requested": True,
        "status_before": s.status,
        "note": "a running session stops after its current trial; finalize still runs",
    }


TOOLS = (
    Tool(
        "run_trial",
        "Run one trial now (validation window only, not journaled) with some knobs "
        "changed from the defaults or from a session's best config; values are clipped to "
        "their bounds.",
        RunTrialArgs,
        run_by_hand,
        acts=True,
    ),
    Tool(
        "start_research",
        "Start and run a research session to completion (blocks until it "
        "ends; keep the budget small) and return its result.",
        StartResearchArgs,
        start_research,
        acts=True,
        check=check_research,
    ),
    Tool(
        "stop_research",
        "Ask a running session to stop after its current trial.",
        StopResearchArgs,
        stop_research,
        acts=True,
    ),
)
