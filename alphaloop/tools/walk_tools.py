"""Walks as tools: start one (the research loop replayed over history, run to its verdict) and
read a walk's verdict, in the numbers a model can quote."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from alphaloop import ops
from alphaloop.ops.requests import WalkId, WalkRequest, derive
from alphaloop.ops.research import check_proposer
from alphaloop.tools.base import Tool, ToolContext

if TYPE_CHECKING:
    from alphaloop.ops.records import RuleRecord, WalkReport
    from alphaloop.ops.walk import WalkEvent

_ARGS = ConfigDict(frozen=True, extra="forbid")
_EPOCHS_SHOWN = 24  # a monthly walk has hundreds: the model reads the latest

# The walk request as declared once, less the fields only the command line takes; a chat starts
# small walks by default, and the confirmation asked before it runs is its guard.
StartWalkArgs: Any = derive(
    WalkRequest,
    "StartWalkArgs",
    exclude=WalkRequest.LOCAL,  # type: ignore[attr-defined]
    defaults={"budget": 5, "proposer": "tpe"},
)


def check_walk(args: Any, ctx: ToolContext) -> None:
    """Refuses a walk the walk operation would refuse, its epochs on the data included (a
    start the data cannot hold answers 422 as the API does), before anyone confirms it."""
    ops.walk.check_walk(args)
    check_proposer(args.proposer, ctx.settings)


def start_walk(args: Any, ctx: ToolContext) -> dict[str, Any]:
    spec = ops.walk.walk_spec(args)  # checked whole by check_walk, before the confirmation
    walk_id = ops.walk.start_walk(spec, ctx.settings)
    ctx.progress(f"walk {walk_id} started")

    def on_event(event: WalkEvent) -> None:
        if event.name == "epoch_begun":
            ctx.progress(
                f"epoch {event.epoch + 1}/{event.n_epochs}: {event.first_day}..{event.last_day}"
            )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # data warnings are the CLI's to show
        ops.walk.run_walk(walk_id, ctx.settings, on_event)
    return verdict_of(ops.walk.get_walk(walk_id, ctx.settings))


class WalkVerdictArgs(BaseModel):
    model_config = _ARGS

    walk_id: WalkId | None = Field(default=None, description="the walk (default: the newest)")


def walk_verdict(args: WalkVerdictArgs, ctx: ToolContext) -> dict[str, Any]:
    walk_id = args.walk_id
    if walk_id is None:
        walks = ops.walk.list_walks(ctx.settings)
        if not walks:
            return {"walks": 0, "note": "no walk yet: start one with start_walk"}
        walk_id = walks[0].id
    return verdict_of(ops.walk.get_walk(walk_id, ctx.settings))


def _record(record: RuleRecord) -> dict[str, Any]:
    tests = {
        ref: {"difference": e.test.difference, "p_value": e.test.p_value}
        if hasattr(e, "test")
        else {"note": e.note}
        for ref, e in record.excess.items()
    }
    return {
        "rule": record.rule,
        "go": record.go,
        "sharpe": record.metrics.get("sharpe"),
        "max_drawdown": record.metrics.get("max_drawdown"),
        "tests": tests,
        "minimum_detectable_edge": record.detectable,
        "epochs_on_default": record.n_default,
        "pick_changes": record.n_changes,
    }


def _report(report: WalkReport) -> dict[str, Any]:
    shown = report.epochs[-_EPOCHS_SHOWN:]
    return {
        "verdict": report.verdict,
        "go": report.go,
        "rule": report.rule,
        "cadence": report.cadence,
        "out_of_sample": f"{report.first_day}..{report.last_day}",
        "n_days": report.n_days,
        "n_epochs": len(report.epochs),
        "records": [_record(r) for r in report.records],
        "epochs": [
            {
                "epoch": e.epoch,
                "period": f"{e.start}..{e.end}",
                "traded": "default config" if e.trial_id is None else f"trial {e.trial_id}",
                "changed": e.changed,
                "sharpe": {
                    "pick": e.sharpe_pick,
                    "default": e.sharpe_default,
                    "equal_weight": e.sharpe_equal_weight,
                },
            }
            for e in shown
        ],
        "epochs_left_out": len(report.epochs) - len(shown),
        "preference_pairs": report.pairs.model_dump(),
    }


def verdict_of(detail: ops.walk.WalkDetail) -> dict[str, Any]:
    """A walk as a model reads it: where it is and, once finished, its verdict and records."""
    walk = detail.walk
    out: dict[str, Any] = {
        "walk_id": walk.id,
        "goal": walk.goal,
        "status": walk.status.value,
        "epochs_begun": len(detail.epochs),
        "epochs_traded": sum(e.result is not None for e in detail.epochs),
    }
    if walk.error:
        out["error"] = walk.error
    if detail.resume_command:
        out["resume"] = detail.resume_command
    if walk.report is not None:
        out |= _report(walk.report)
    return out


TOOLS = (
    Tool(
        "start_walk",
        "Replay the research loop over history and return its verdict (blocks until it ends; "
        "keep the budget small): at each epoch a research session on the data cut there, its "
        "pick traded over the period after it beside the default config and 1/N; the verdict "
        "tests those periods end to end and says the smallest Sharpe edge they could detect.",
        StartWalkArgs,
        start_walk,
        acts=True,
        check=check_walk,
    ),
    Tool(
        "walk_verdict",
        "A walk's verdict (default: the newest walk): GO or NO-GO, each rule's out-of-sample "
        "record against the default and 1/N, the minimum detectable edge, the pick per epoch.",
        WalkVerdictArgs,
        walk_verdict,
    ),
)
