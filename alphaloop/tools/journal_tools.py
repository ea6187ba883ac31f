"""Read-only tools over the journal: sessions, leaderboards, single trials and comparisons."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from alphaloop import ops
from alphaloop.ops.records import report_json
from alphaloop.tools.base import Tool, ToolContext

_ARGS = ConfigDict(frozen=True, extra="forbid")


def _session_id() -> Any:
    return Field(min_length=1, description="a session id as listed by list_sessions")


# Per-day arrays are long and say little to a reader; every other trial field is shown.
_HEAVY = {"val_returns", "final_weights", "baselines", "curve"}


def trial_summary(t: Any) -> dict[str, Any]:
    """The fields of a trial a reader needs in a listing."""
    delta = t.delta or {}
    return {
        "id": t.id,
        "idx": t.idx,
        "kind": t.kind,
        "status": t.status,
        "objective": t.objective,
        "proposer": getattr(t, "proposer", None),
        "changes": delta.get("changes", {}),
        "rationale": t.rationale,
        "reason": t.reason,
        "error": t.error,
        "sharpe": (t.metrics or {}).get("sharpe"),
        "max_drawdown": (t.metrics or {}).get("max_drawdown"),
        "annual_return": (t.metrics or {}).get("annual_return"),
    }


class ListSessionsArgs(BaseModel):
    model_config = _ARGS
    limit: int = Field(default=20, ge=1, le=200, description="newest sessions first")


def list_sessions(args: ListSessionsArgs, ctx: ToolContext) -> dict[str, Any]:
    rows = ops.sessions.list_sessions(
        ctx.settings, limit=args.limit, with_best=True, missing_ok=False
    )
    return {
        "sessions": [
            {
                "id": r.session.id,
                "goal": r.session.goal,
                "mode": r.session.mode,
                "status": r.session.status,
                "proposer": r.session.proposer,
                "budget": r.session.budget,
                "counted_trials": r.counted_trials,
                "best_validation_objective": r.best.objective if r.best else None,
                "created_at": r.session.created_at,
            }
            for r in rows
        ]
    }


class SessionArgs(BaseModel):
    model_config = _ARGS
    session_id: str = _session_id()


def summarize_session(args: SessionArgs, ctx: ToolContext) -> dict[str, Any]:
    d = ops.sessions.session_digest(ctx.settings, args.session_id)
    s, trials, calls = d.session, d.trials, d.llm_calls
    baseline = [t.objective for t in trials if t.kind == "baseline" and t.objective is not None]
    return {
        "session": {
            "id": s.id,
            "goal": s.goal,
            "mode": s.mode,
            "status": s.status,
            "objective": s.objective,
            "proposer": s.proposer,
            "budget": s.budget,
            "counted_trials": d.counted_trials,
            "noise_floor": s.noise_floor,
            "created_at": s.created_at,
            "error": getattr(s, "error", None),
        },
        "status_counts": dict(Counter(t.status for t in trials if t.kind == "search")),
        "baseline_mean_objective": sum(baseline) / len(baseline) if baseline else None,
        "best_trial": trial_summary(d.best) if d.best else None,
        "proposers": dict(
            Counter(getattr(t, "proposer", None) for t in trials if t.kind == "search")
        ),
        "events": dict(Counter(e.kind for e in d.events)),
        "llm": {
            "calls": len(calls),
            "failed_calls": sum(not c.ok for c in calls),
            "tokens": sum(c.prompt_tokens + c.completion_tokens for c in calls),
        },
        # The test-window result of the finished session (evaluated once, at the end).
        "final": report_json(s.final),
    }


class LeaderboardArgs(BaseModel):
    model_config = _ARGS
    session_id: str = _session_id()
    k: int = Field(default=10, ge=1, le=100, description="how many trials")


def leaderboard(args: LeaderboardArgs, ctx: ToolContext) -> dict[str, Any]:
    board = ops.sessions.leaderboard(ctx.settings, args.session_id, args.k)
    return {
        "session_id": board.session.id,
        "objective": board.session.objective,
        "trials": [trial_summary(t) for t in board.trials],
    }


class TrialArgs(BaseModel):
    model_config = _ARGS
    trial_id: int = Field(ge=1, description="the journal id of a trial (the `id` in listings)")


def explain_trial(args: TrialArgs, ctx: ToolContext) -> dict[str, Any]:
    d = ops.sessions.trial_detail(ctx.settings, args.trial_id)
    data = {k: v for k, v in d.trial.model_dump(mode="json").items() if k not in _HEAVY}
    data["baselines"] = d.trial.baselines
    data["clips"] = [c.model_dump(mode="json") for c in d.clips]
    if d.parent is not None:
        data["parent"] = trial_summary(d.parent)
    return {"trial": data}


class CompareArgs(BaseModel):
    model_config = _ARGS
    trial_a: int = Field(ge=1, description="journal id of the first trial")
    trial_b: int = Field(ge=1, description="journal id of the second trial")


def compare_trials(args: CompareArgs, ctx: ToolContext) -> dict[str, Any]:
    c = ops.sessions.compare_trials(ctx.settings, args.trial_a, args.trial_b)
    return {
        "a": trial_summary(c.a),
        "b": trial_summary(c.b),
        "same_session": c.same_session,
        "config_differences": c.config_differences,
        "metrics": {k: m.model_dump() for k, m in c.metrics.items()},
        "objective_b_minus_a": c.objective_b_minus_a,
    }


TOOLS = (
    Tool(
        "list_sessions",
        "List research sessions, newest first, with their best validation objective.",
        ListSessionsArgs,
        list_sessions,
    ),
    Tool(
        "summarize_session",
        "Summarise one session: goal, status, trial counts, best trial, "
        "LLM usage and the final test-window result.",
        SessionArgs,
        summarize_session,
    ),
    Tool(
        "leaderboard",
        "The best trials of a session by validation objective, best first.",
        LeaderboardArgs,
        leaderboard,
    ),
    Tool(
        "explain_trial",
        "Everything about one trial: config, delta, rationale, clips, metrics, "
        "baselines, verdict and its parent.",
        TrialArgs,
        explain_trial,
    ),
    Tool(
        "compare_trials",
        "Compare two trials: knobs that differ and metric differences.",
        CompareArgs,
        compare_trials,
    ),
)
