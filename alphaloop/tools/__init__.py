"""Functions the chat model may call, each with a pydantic argument model that generates its
OpenAI tool schema.

``TOOLS`` maps names to :class:`Tool`; :func:`tool_specs` lists the schemas to send and
:func:`call_tool` runs one call, turning every error into a result the model can read.
"""

from alphaloop.tools import journal_tools, knob_tools, run_tools, validate_tools, walk_tools
from alphaloop.tools.base import (
    Tool,
    ToolContext,
    ToolResult,
    call_tool,
    jsonable,
)

TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        *journal_tools.TOOLS,
        *knob_tools.TOOLS,
        *run_tools.TOOLS,
        *validate_tools.TOOLS,
        *walk_tools.TOOLS,
    )
}


def tool_specs() -> list[dict]:
    """The OpenAI tool specs of every tool in :data:`TOOLS`."""
    return [t.spec() for t in TOOLS.values()]


__all__ = [
    "TOOLS",
    "Tool",
    "ToolContext",
    "ToolResult",
    "call_tool",
    "jsonable",
    "tool_specs",
]
