"""The validation suite as a tool: PBO, deflated Sharpe, walk-forward, stress and gates of a
session, answered in a few numbers a model can quote."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from alphaloop import ops
from alphaloop.ops.requests import SessionId, ValidateRequest, derive
from alphaloop.tools.base import Tool, ToolContext

# The validate request as declared once, with the session it validates.
ValidateArgs: Any = derive(
    ValidateRequest,
    "ValidateArgs",
    extra={"session_id": (SessionId, Field(description="a session id as listed by list_sessions"))},
)


def validate_session(args: Any, ctx: ToolContext) -> dict[str, Any]:
    ctx.progress(f"validating {args.session_id}")
    r = ops.validate.validate_session(
        ctx.settings,
        args.session_id,
        n_blocks=args.blocks,
        n_windows=args.windows,
        gates=ValidateRequest(gates=args.gates).gate_thresholds() if args.gates else None,
        oos_start=None if args.oos_start is None else args.oos_start.isoformat(),
        on_step=ctx.progress,
    )
    return {
        "session_id": r.session_id,
        "trial_idx": r.trial_idx,
        "reported": r.reported,
        "deflated_sharpe": {
            "dsr": r.deflated_sharpe.dsr,
            "n_trials": r.deflated_sharpe.n_trials,
            "n_effective": r.deflated_sharpe.n_effective,
            "dsr_effective": r.deflated_sharpe.dsr_effective,
            "set": r.dsr_set,
        },
        "pbo": {k: v for k, v in r.pbo.model_dump().items() if not k.startswith("histogram")},
        "walk_forward": [s.model_dump() for s in r.walk_forward.summaries]
        if r.walk_forward
        else r.walk_forward_note,
        "stress": {
            c.scenario: {k: round(m.sharpe, 3) for k, m in c.metrics.items()}
            for c in r.stress.cases
        },
        "gates": r.gates.summary(),
        "gates_evidence": r.gates_evidence,
        "elapsed_s": round(r.elapsed_s, 2),
    }


TOOLS = (
    Tool(
        "validate_session",
        "Run the validation suite of a session (takes seconds for Mean-CVaR sessions, longer "
        "for PPO): PBO by CSCV, deflated Sharpe under N and N effective, walk-forward, stress "
        "tests and pass/fail per go/no-go gate; the report is journaled.",
        ValidateArgs,
        validate_session,
        acts=True,
    ),
)
