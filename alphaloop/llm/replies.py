"""What a server answered, read into an :class:`~alphaloop.llm.models.LLMReply`: a stream put
together and cut at ``max_tokens`` whatever the server does, or a whole completion.

What the servers stream differs (all read through the ``openai`` client's chunk objects):

* vLLM and NIM: a first chunk with the role, one chunk a token, a tool call as a first delta
  with its id and name followed by argument fragments, ``finish_reason`` in a last chunk, and
  the usage in a chunk of its own (no choices) when ``stream_options`` asks for it.
* llama.cpp's ``llama-server``: the same deltas; the usage rides on the ``finish_reason`` chunk.
* llama-cpp-python: every tool-call delta repeats the call's id and name beside the next
  argument fragment (and a legacy ``function_call`` beside it); no usage, ever.
* Ollama: a tool call whole in one chunk; the usage only with ``stream_options``.

So a tool call's parts are joined by their index: its id and name are taken once (a repeat is
not appended), its arguments concatenated.

**Counting tokens without a tokenizer.** A chunk carrying generated text (content, reasoning, a
tool call's name or arguments) holds at least one token: servers send a token a chunk, or a few
when they batch, never part of one. The number of such chunks is therefore a lower bound of the
tokens generated, and the characters divided by :data:`MAX_CHARS_PER_TOKEN` another (for servers
that batch). The stream is cut when the larger passes ``max_tokens``: a server that honours the
cap is not cut, one that ignores it is cut at once, and the reply keeps what came up to the cap.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from alphaloop.llm.models import LLMReply, ToolCall
from alphaloop.llm.retry import bad_response
from alphaloop.llm.usage import CHARS_PER_TOKEN, estimate_tokens
from alphaloop.llm_json import strip_think

# No tokenizer in use averages more characters a token over a whole reply; only a server that
# batches many tokens into a chunk makes this bound the tighter one.
MAX_CHARS_PER_TOKEN = 8
REASONING_FIELDS = ("reasoning_content", "reasoning")  # vLLM's older and newer names


@dataclass(frozen=True)
class _Legacy:
    """A legacy ``function_call`` delta, read as tool call 0."""

    function: Any
    id: str | None = None


@dataclass
class _Call:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


class StreamReader:
    """Puts a streamed chat completion together, chunk by chunk, up to ``max_tokens``."""

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        self.content: list[str] | None = None
        self.reasoning_chars = 0
        self.calls: dict[int, _Call] = {}
        self.finish_reason: str | None = None
        self.usage: tuple[int, int] | None = None
        self.model: str | None = None
        self.chunks = 0  # chunks read, text or not
        self.tokens = 0  # chunks that carried generated text
        self.chars = 0
        self.cut = False

    @property
    def counted(self) -> int:
        """Tokens generated so far, at least (see the module docstring)."""
        return max(self.tokens, self.chars // MAX_CHARS_PER_TOKEN)

    def add(self, chunk: Any) -> bool:
        """Takes one chunk; False (and the chunk left out) once the server is past the cap."""
        self.chunks += 1
        self.model = self.model or getattr(chunk, "model", None)
        usage = getattr(chunk, "usage", None)
        if usage is not None and getattr(usage, "prompt_tokens", None) is not None:
            self.usage = (usage.prompt_tokens, usage.completion_tokens or 0)
        choices = getattr(chunk, "choices", None) or []
        choice = next((c for c in choices if getattr(c, "index", 0) == 0), None)
        if choice is None:
            return True
        delta = getattr(choice, "delta", None)
        pieces = self._pieces(delta) if delta is not None else []
        chars = sum(len(p) for p in pieces)
        if pieces:
            after = max(self.tokens + 1, (self.chars + chars) // MAX_CHARS_PER_TOKEN)
            if after > self.max_tokens:
                self.cut, self.finish_reason = True, "length"
                return False
            self.tokens, self.chars = self.tokens + 1, self.chars + chars
            self._keep(delta)
        if getattr(choice, "finish_reason", None):
            self.finish_reason = choice.finish_reason
        return True

    def _pieces(self, delta: Any) -> list[str]:
        """The generated text a delta carries (empty strings and repeated names are none)."""
        pieces = [_text(getattr(delta, "content", None))]
        pieces += [_text(getattr(delta, f, None)) for f in REASONING_FIELDS]
        for i, tc in self._tool_deltas(delta):
            fn = getattr(tc, "function", None)
            name = getattr(fn, "name", None)
            known = self.calls.get(i)
            if name and not (known and known.name == name):
                pieces.append(name)
            pieces.append(_text(getattr(fn, "arguments", None)))
        return [p for p in pieces if p]

    def _tool_deltas(self, delta: Any) -> list[tuple[int, Any]]:
        calls = getattr(delta, "tool_calls", None)
        if calls:
            return [
                (tc.index if getattr(tc, "index", None) is not None else k, tc)
                for k, tc in enumerate(calls)
            ]
        legacy = getattr(delta, "function_call", None)  # servers speaking the old API only
        return [] if legacy is None else [(0, _Legacy(function=legacy))]

    def _keep(self, delta: Any) -> None:
        content = getattr(delta, "content", None)
        if isinstance(content, str):
            self.content = [*(self.content or []), content]
        self.reasoning_chars += sum(len(_text(getattr(delta, f, None))) for f in REASONING_FIELDS)
        for i, tc in self._tool_deltas(delta):
            call = self.calls.setdefault(i, _Call())
            fn = getattr(tc, "function", None)
            call.id = call.id or getattr(tc, "id", None)
            call.name = call.name or getattr(fn, "name", None)
            call.arguments.append(_text(getattr(fn, "arguments", None)))

    def reply(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        base_url: str,
        model: str,
        latency: float,
        attempt: int,
    ) -> LLMReply:
        """The reply so far; the usage is estimated when the server sent none.

        Raises:
            Failure: an empty stream, or a tool call without a name (not retried).
        """
        if self.chunks == 0:
            raise bad_response(base_url, "the stream held no chunk")
        raw = "".join(self.content) if self.content is not None else None
        calls = []
        for k, (_, call) in enumerate(sorted(self.calls.items())):
            if not call.name:
                raise bad_response(base_url, f"streamed tool call {k} has no function name")
            args = "".join(call.arguments)
            calls.append(ToolCall(id=call.id or f"call_{k}", name=call.name, arguments_raw=args))
        estimated = self.usage is None
        if self.usage is None:
            prompt, _ = estimate_tokens(messages, 0)
            done = max(self.tokens, self.chars // CHARS_PER_TOKEN)
        else:
            prompt, done = self.usage
        return LLMReply(
            content=strip_think(raw),
            tool_calls=calls,
            model=self.model or model,
            prompt_tokens=prompt,
            completion_tokens=done,
            latency_s=latency,
            finish_reason=self.finish_reason,
            raw_content=raw,
            attempts=attempt,
            usage_estimated=estimated,
        )


def read_completion(
    completion: Any,
    messages: Sequence[Mapping[str, Any]],
    *,
    base_url: str,
    model: str,
    latency: float,
    attempt: int,
) -> LLMReply:
    """A whole (not streamed) chat completion as a reply.

    Raises:
        Failure: no ``choices[0].message``, or a tool call without a name.
    """
    choices = getattr(completion, "choices", None)
    message = getattr(choices[0], "message", None) if choices else None
    if message is None:
        raise bad_response(base_url, f"no choices[0].message in {str(completion)[:200]!r}")
    raw = message.content if isinstance(message.content, str) else None
    calls = []
    for i, tc in enumerate(message.tool_calls or []):
        fn = getattr(tc, "function", None)
        if fn is None or not getattr(fn, "name", None):
            raise bad_response(base_url, f"tool call without a function name: {tc!r:.200}")
        args = _text(fn.arguments)
        calls.append(ToolCall(id=tc.id or f"call_{i}", name=fn.name, arguments_raw=args))
    usage = getattr(completion, "usage", None)
    estimated = usage is None or usage.prompt_tokens is None
    if estimated:
        reply_chars = len(raw or "") + sum(len(c.arguments_raw) for c in calls)
        prompt, done = estimate_tokens(messages, reply_chars)
    else:
        prompt, done = usage.prompt_tokens, usage.completion_tokens or 0
    return LLMReply(
        content=strip_think(raw),
        tool_calls=calls,
        model=getattr(completion, "model", None) or model,
        prompt_tokens=prompt,
        completion_tokens=done,
        latency_s=latency,
        finish_reason=choices[0].finish_reason,
        raw_content=raw,
        attempts=attempt,
        usage_estimated=estimated,
    )


def whole_body(stream: Any, base_url: str) -> Any:
    """The completion a server sent whole (JSON) to a request for a stream, closed after.

    Raises:
        Failure: a body that is not JSON, or not a chat completion.
    """
    from openai.types.chat import ChatCompletion
    from pydantic import ValidationError

    try:
        body = stream.response.read()
    finally:
        stream.close()
    try:
        return ChatCompletion.model_validate(json.loads(body))
    except (ValueError, ValidationError):
        raise bad_response(base_url, f"no choices[0].message in {body[:200]!r}") from None
