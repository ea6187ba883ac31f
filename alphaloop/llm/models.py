"""What the LLM client returns and reports: replies, tool calls and per-attempt call records."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import ReplyParseError
from alphaloop.llm_json import parse_json_object

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class ToolCall(BaseModel):
    """One tool call from the model; ``arguments_raw`` is the JSON string as sent."""

    model_config = _FROZEN

    id: str
    name: str
    arguments_raw: str

    def arguments(self) -> dict[str, Any]:
        """The arguments as a dict, repairing sloppy JSON like a text reply.

        Raises:
            ReplyParseError: the arguments hold no JSON object.
        """
        try:
            value = json.loads(self.arguments_raw)
        except ValueError:
            return parse_json_object(self.arguments_raw)
        if not isinstance(value, dict):
            raise ReplyParseError("tool arguments are not a JSON object", self.arguments_raw)
        return value


class LLMReply(BaseModel):
    """A model's answer. ``content`` has reasoning stripped; ``raw_content`` is as sent."""

    model_config = _FROZEN

    content: str
    tool_calls: list[ToolCall]
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    finish_reason: str | None
    raw_content: str | None
    attempts: int = 1
    usage_estimated: bool = False


class LLMCallRecord(BaseModel):
    """One attempt at one call, ok or not: what the caller journals in ``llm_calls``."""

    model_config = _FROZEN

    purpose: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float
    ok: bool
    error: str | None = None
    session_id: str | None = None
    trial_id: int | str | None = None
    # How the answer was asked for (``tools``, ``json_schema``, ``json_text``, ``text``) and why
    # generation ended (``length`` means the max_tokens cap cut it).
    mode: str | None = None
    finish_reason: str | None = None
