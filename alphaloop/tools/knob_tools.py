"""The knob reference as a tool: meanings, bounds, scales, defaults and where each applies."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from alphaloop.knobs import KNOBS, MODE_GROUPS, Mode
from alphaloop.tools.base import Tool, ToolContext, ToolError


class KnobInfoArgs(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    names: list[str] | None = Field(default=None, description="knobs to describe (default all)")
    mode: Mode | None = Field(default=None, description="only the knobs this mode uses")


def knob_info(args: KnobInfoArgs, ctx: ToolContext) -> dict[str, Any]:
    unknown = [n for n in args.names or [] if n not in KNOBS]
    if unknown:
        raise ToolError(f"unknown knobs {', '.join(unknown)}; known: {', '.join(KNOBS)}")
    chosen = [KNOBS[n] for n in args.names] if args.names else list(KNOBS.values())
    if args.mode:
        chosen = [k for k in chosen if k.group in MODE_GROUPS[args.mode]]
    return {
        "knobs": [
            {
                "name": k.name,
                "group": k.group,
                "low": k.low,
                "high": k.high,
                "scale": k.scale,
                "default": k.default,
                "meaning": k.doc,
                "used_in_modes": [m for m, groups in MODE_GROUPS.items() if k.group in groups],
            }
            for k in chosen
        ],
        "rules": [
            "out-of-bounds values are clipped to the nearest bound; integer knobs are rounded",
            "max_position_pct x n_assets >= 1 (else the cap is raised to 1/n_assets)",
            "(1 - cvar_alpha) x n_scenarios >= 50 tail scenarios (else n_scenarios is raised)",
            "batch_size <= n_steps x n_envs (else batch_size is lowered)",
        ],
    }


TOOLS = (
    Tool(
        "knob_info",
        "Meaning, bounds, scale, default and modes of the 16 knobs, and the clipping rules.",
        KnobInfoArgs,
        knob_info,
    ),
)
