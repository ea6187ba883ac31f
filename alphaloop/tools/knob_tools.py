"""The knob reference as a tool: meanings, bounds, scales, defaults and where each applies."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from alphaloop import ops
from alphaloop.tools.base import Tool, ToolContext
from alphaloop.vocabulary import Mode


class KnobInfoArgs(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    names: list[str] | None = Field(default=None, description="knobs to describe (default all)")
    mode: Mode | None = Field(default=None, description="only the knobs this mode uses")


def knob_info(args: KnobInfoArgs, ctx: ToolContext) -> dict[str, Any]:
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
                "used_in_modes": k.used_in_modes,
            }
            for k in ops.knobs.list_knobs(args.names, args.mode)
        ],
        "rules": list(ops.knobs.CLIP_RULES),
    }


TOOLS = (
    Tool(
        "knob_info",
        "Meaning, bounds, scale, default and modes of the 16 knobs, and the clipping rules.",
        KnobInfoArgs,
        knob_info,
    ),
)
