"""Read-only tools over the journal: sessions, leaderboards, single trials and comparisons."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from alphaloop.tools.base import Tool, ToolContext, ToolError

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


def _trial_detail(t: Any, clips: list[Any]) -> dict[str, Any]:
    data = {k: v for k, v in t.model_dump(mode="json").items() if k not in _HEAVY}
    data["baselines"] = t.baselines
    data["clips"] = [c.model_dump(mode="json") for c in clips]
    return data


class ListSessionsArgs(BaseModel):
    model_config = _ARGS
    limit: int = Field(default=20, ge=1, le=200, description="newest sessions first")


def list_sessions(args: ListSessionsArgs, ctx: ToolContext) -> dict[str, Any]:
    with ctx.journal() as j:
        rows = j.list_sessions()[: args.limit]
        sessions = []
        for s in rows:
            best = j.best_trial(s.id)
            sessions.append(
                {
                    "id": s.id,
                    "goal": s.goal,
                    "mode": s.mode,
                    "status": s.status,
                    "proposer": s.proposer,
                    "budget": s.budget,
                    "counted_trials": j.counted_trials(s.id),
                    "best_validation_objective": best.objective if best else None,
                    "created_at": s.created_at,
                }
            )
    return {"sessions": sessions}


class SessionArgs(BaseModel):
    model_config = _ARGS
    session_id: str = _session_id()


def summarize_session(args: SessionArgs, ctx: ToolContext) -> dict[str, Any]:
    with ctx.journal() as j:
        s = j.get_session(args.session_id)
        trials = j.trials(s.id)
        best = j.best_trial(s.id)
        calls = j.llm_calls(s.id)
        events = j.events(s.id)
        counted = j.counted_trials(s.id)
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
            "counted_trials": counted,
            "noise_floor": s.noise_floor,
            "created_at": s.created_at,
            "error": getattr(s, "error", None),
        },
        "status_counts": dict(Counter(t.status for t in trials if t.kind == "search")),
        "baseline_mean_objective": sum(baseline) / len(baseline) if baseline else None,
        "best_trial": trial_summary(best) if best else None,
        "proposers": dict(
            Counter(getattr(t, "proposer", None) for t in trials if t.kind == "search")
        ),
        "events": dict(Counter(e.kind for e in events)),
        "llm": {
            "calls": len(calls),
            "failed_calls": sum(not c.ok for c in calls),
            "tokens": sum(c.prompt_tokens + c.completion_tokens for c in calls),
        },
        # The test-window result of the finished session (evaluated once, at the end).
        "final": s.final,
    }


class LeaderboardArgs(BaseModel):
    model_config = _ARGS
    session_id: str = _session_id()
    k: int = Field(default=10, ge=1, le=100, description="how many trials")


def leaderboard(args: LeaderboardArgs, ctx: ToolContext) -> dict[str, Any]:
    with ctx.journal() as j:
        s = j.get_session(args.session_id)
        board = j.leaderboard(s.id, args.k)
    return {
        "session_id": s.id,
        "objective": s.objective,
        "trials": [trial_summary(t) for t in board],
    }


class TrialArgs(BaseModel):
    model_config = _ARGS
    trial_id: int = Field(ge=1, description="the journal id of a trial (the `id` in listings)")


def explain_trial(args: TrialArgs, ctx: ToolContext) -> dict[str, Any]:
    with ctx.journal() as j:
        t = j.get_trial(args.trial_id)
        clips = j.clips(t.id)
        parent = j.get_trial(t.parent_id) if t.parent_id else None
    data = _trial_detail(t, clips)
    if parent is not None:
        data["parent"] = trial_summary(parent)
    return {"trial": data}


class CompareArgs(BaseModel):
    model_config = _ARGS
    trial_a: int = Field(ge=1, description="journal id of the first trial")
    trial_b: int = Field(ge=1, description="journal id of the second trial")


def compare_trials(args: CompareArgs, ctx: ToolContext) -> dict[str, Any]:
    if args.trial_a == args.trial_b:
        raise ToolError("compare_trials needs two different trial ids")
    with ctx.journal() as j:
        a, b = j.get_trial(args.trial_a), j.get_trial(args.trial_b)
    config_diff = {
        k: {"a": a.config[k], "b": b.config[k]}
        for k in a.config
        if a.config.get(k) != b.config.get(k)
    }
    ma, mb = a.metrics or {}, b.metrics or {}
    metrics = {
        k: {
            "a": ma.get(k),
            "b": mb.get(k),
            "b_minus_a": (mb[k] - ma[k])
            if ma.get(k) is not None and mb.get(k) is not None
            else None,
        }
        for k in sorted(set(ma) | set(mb))
    }
    return {
        "a": trial_summary(a),
        "b": trial_summary(b),
        "same_session": a.session_id == b.session_id,
        "config_differences": config_diff,
        "metrics": metrics,
        "objective_b_minus_a": (b.objective - a.objective)
        if a.objective is not None and b.objective is not None
        else None,
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
