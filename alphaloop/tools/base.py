"""What a tool is, the context tools run in, and the one entry point that calls them.

A tool is a plain function ``fn(args, ctx) -> dict`` plus a pydantic argument model that
generates its OpenAI tool schema. :func:`call_tool` never raises: bad JSON, arguments that fail
validation, unknown sessions or trials and anything else a tool trips over come back as an
``{"error": ..., "status": ...}`` result, so the model can read the problem and try again. The
status is the HTTP status the REST API answers the same error with (the one error table of
:mod:`alphaloop.exceptions`): 404 and 422 say to change the arguments, 409 to change the state
first, 503 to try later, 500 that retrying the same call will not help; 403 is a person declining
to run it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from alphaloop.exceptions import (
    USAGE_STATUS,
    AlphaloopError,
    ReplyParseError,
    http_status_of,
    without_paths,
)
from alphaloop.llm import ToolCall, openai_tool
from alphaloop.ops.records import jsonable
from alphaloop.settings import Settings

logger = logging.getLogger(__name__)
MAX_RESULT_CHARS = 12_000  # a tool result is read by a model: keep one answer in its context


@dataclass(frozen=True)
class Tool:
    """One function the model may call."""

    name: str
    description: str
    args_model: type[BaseModel]
    fn: Callable[[Any, ToolContext], dict[str, Any]]
    acts: bool = False  # runs or stops work (asks for confirmation when someone can answer)
    # Refuses arguments the operation would refuse (an error of the table), before anyone is
    # asked to confirm a call that could not run.
    check: Callable[[Any, ToolContext], object] | None = None

    def spec(self) -> dict[str, Any]:
        return openai_tool(self.name, self.description, self.args_model)


@dataclass
class ToolContext:
    """What tools run with.

    Attributes:
        settings: where the journal lives, and the endpoint a started session would use (every
            tool goes through :mod:`alphaloop.ops` with them).
        confirm: asked before a tool that runs or stops work; None means nobody is there to
            ask (one-shot use), and the call goes ahead unless ``describe_only``.
        describe_only: tools that run or stop work answer with what they would do instead of
            doing it (a one-shot question without ``--yes``).
        on_progress: told what a long tool is doing (trials of a session being run).
    """

    settings: Settings
    confirm: Callable[[str], bool] | None = None
    on_progress: Callable[[str], None] | None = None
    describe_only: bool = False

    def progress(self, text: str) -> None:
        if self.on_progress is not None:
            self.on_progress(text)


class ToolResult(BaseModel):
    """What one tool call returned: ``content`` is the JSON the model reads."""

    name: str
    ok: bool
    content: str
    data: dict[str, Any]


def _validation_message(err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"]) or "arguments"
        # "Value error, " is pydantic's prefix for a rule of ours: the rule speaks for itself,
        # in the words the API answers it with.
        parts.append(f"{where}: {str(e['msg']).removeprefix('Value error, ')}")
    return "invalid arguments: " + "; ".join(parts)


def _error_message(err: Exception) -> str:
    """What the model reads of an error a tool raised."""
    if isinstance(err, ValidationError):
        return _validation_message(err)
    if isinstance(err, AlphaloopError):
        return str(err)
    return f"{type(err).__name__}: {err}"


def call_tool(
    tools: Mapping[str, Tool], name: str, arguments: str | Mapping[str, Any], ctx: ToolContext
) -> ToolResult:
    """Runs tool ``name`` with ``arguments`` (a JSON string as the model sent it, or a dict).

    Never raises on the model's or the tool's errors: they become ``{"error": ...}``.
    """

    def failed(message: str, status: int) -> ToolResult:
        # The result goes to the LLM endpoint, a remote service: it names no file of ours.
        data = {"error": without_paths(message), "status": status}
        return ToolResult(name=name, ok=False, content=json.dumps(data), data=data)

    tool = tools.get(name)
    if tool is None:
        return failed(f"unknown tool {name!r}; available: {', '.join(tools)}", 404)
    try:
        raw = (
            ToolCall(id="-", name=name, arguments_raw=arguments or "{}").arguments()
            if isinstance(arguments, str)
            else dict(arguments)
        )
        args = tool.args_model.model_validate(raw)
    except ReplyParseError as err:  # the model's arguments, not a reply of ours: bad input
        return failed(f"arguments are not a JSON object: {err.reason}", USAGE_STATUS)
    except ValidationError as err:
        return failed(_validation_message(err), http_status_of(err))
    if tool.check is not None:
        try:
            tool.check(args, ctx)
        except AlphaloopError as err:
            return failed(_error_message(err), http_status_of(err))
    given = args.model_dump(mode="json", exclude_defaults=True)  # dates as text
    question = f"{tool.name}({json.dumps(given)})"
    if tool.acts and ctx.describe_only:
        return failed(
            f"not run: this would call {question}. Nothing was changed; tell the user what "
            "this would do and that asking again with --yes lets it run",
            403,
        )
    if tool.acts and ctx.confirm is not None and not ctx.confirm(question):
        return failed("the user declined to run this; ask what they want instead", 403)
    try:
        data = jsonable(tool.fn(args, ctx))
    except Exception as err:  # a tool bug must not end the conversation: logged, then reported
        status = http_status_of(err)
        if status >= 500:  # not the model's input: the model may never mention it, so log it
            bug = not isinstance(err, AlphaloopError)
            logger.warning("tool %s failed: %r", name, err, exc_info=bug)
        return failed(_error_message(err), status)
    content = json.dumps(data, separators=(",", ":"))
    if len(content) > MAX_RESULT_CHARS:
        content = content[: MAX_RESULT_CHARS - 40] + '..." (result truncated)'
    return ToolResult(name=name, ok=True, content=content, data=data)
