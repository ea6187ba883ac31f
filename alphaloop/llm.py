"""The one place alphaloop talks to an OpenAI-compatible LLM endpoint.

Any server speaking ``/v1/chat/completions`` works: vLLM, NVIDIA NIM, Ollama, llama.cpp's
server, serving Nemotron, Llama, Qwen and others. :class:`LLMClient` wraps the official
``openai`` client with the habits an unattended research loop needs:

* **Our own retries.** The ``openai`` client is built with ``max_retries=0`` so every attempt
  (failed ones too) is reported through ``on_call`` and can be journaled. Timeouts, refused
  connections, 408/409/429 and 5xx are retried with exponential backoff and a little jitter,
  honouring ``Retry-After`` (capped by ``llm_backoff_max_s``); 400/401/403/404/422 are not,
  and raise an :class:`~alphaloop.exceptions.LLMError` subclass saying what to check.
* **Reasoning stripped.** ``<think>`` blocks are removed from ``content``; ``reasoning_content``
  (vLLM/NIM reasoning parsers) is ignored.
* **Usage accounted.** Token counts of every call add up in :attr:`LLMClient.total_tokens`, for
  a session's token budget. A server that reports no usage gets an estimate (characters / 4)
  rather than zero, so a budget still bites; the reply says so in ``usage_estimated``.

This module imports nothing from the journal: callers pass ``on_call`` and write the rows.
"""

from __future__ import annotations

import base64
import email.utils
import json
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import openai
from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import (
    LLMAuthError,
    LLMBadRequest,
    LLMBadResponse,
    LLMError,
    LLMNotConfigured,
    LLMNotFound,
    LLMTimeout,
    LLMUnavailable,
    ReplyParseError,
    ToolsUnsupported,
)
from alphaloop.llm_json import openai_tool, parse_json_object, strip_think
from alphaloop.settings import Settings

__all__ = [
    "LLMCallRecord",
    "LLMClient",
    "LLMReply",
    "ToolCall",
    "image_part",
    "nemotron_system_prompt",
    "openai_tool",
    "strip_think",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")
_RETRYABLE_STATUS = {408, 409, 429}
# Wording of "no tool calling here" across servers: vLLM without --enable-auto-tool-choice,
# llama.cpp without --jinja (a 500), Ollama models without tool support, NIM and others.
_TOOLS_UNSUPPORTED = re.compile(
    r"tool.{0,40}(not supported|unsupported|requires|not enabled|not available)"
    r"|(unsupported param|does not support|doesn't support|not support).{0,40}tool",
    re.IGNORECASE,
)
_JITTER = 0.1  # fraction of the backoff added at random, so clients desync


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


class _Failure(Exception):
    """One failed attempt: which error to raise if it is the last, and whether to retry."""

    def __init__(
        self,
        kind: type[LLMError],
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind, self.message, self.retryable = kind, message, retryable
        self.status, self.retry_after = status, retry_after


def nemotron_system_prompt(base_text: str, reasoning: bool) -> str:
    """Puts Nemotron's reasoning switch on the first line of a system prompt.

    NVIDIA's Llama-Nemotron models turn their reasoning trace on or off with the system
    line ``detailed thinking on`` / ``detailed thinking off``. Other models read it as a
    harmless instruction. An existing switch line is replaced, not repeated.
    """
    switch = f"detailed thinking {'on' if reasoning else 'off'}"
    lines = base_text.splitlines()
    if lines and re.fullmatch(r"\s*detailed thinking (on|off)\s*", lines[0], re.IGNORECASE):
        lines = lines[1:]
    return "\n".join([switch, *lines])


def image_part(png_bytes: bytes, *, mime: str = "image/png") -> dict[str, Any]:
    """A user-message content part carrying an image as a base64 data URL (for a VLM)."""
    if not png_bytes:
        raise ValueError("image_part needs non-empty image bytes")
    data = base64.b64encode(png_bytes).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}


def _chars(messages: Sequence[Mapping[str, Any]]) -> int:
    total = 0
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(len(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return total


def _server_message(err: openai.APIStatusError) -> str:
    body = err.body
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        return body["message"]
    if body is not None and not isinstance(body, Mapping):
        return str(body)[:300]
    return err.message


def _retry_after(headers: Mapping[str, str]) -> float | None:
    for header, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            return max(0.0, float(value) / scale)
        except ValueError:
            pass
        try:  # Retry-After may also be an HTTP date
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            continue
    return None


class LLMClient:
    """A chat client for one model on one OpenAI-compatible endpoint.

    Args:
        settings: endpoint, key, timeout, retries, backoff and temperature.
        on_call: called with an :class:`LLMCallRecord` after every attempt, ok or not.
        model: overrides ``settings.llm_model`` (e.g. the vision model).

    Raises:
        LLMNotConfigured: no base URL or no model.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        on_call: Callable[[LLMCallRecord], None] | None = None,
        model: str | None = None,
    ) -> None:
        self.settings = settings
        self.model = model or settings.llm_model or ""
        self.base_url = settings.llm_base_url or ""
        if not self.base_url or not self.model:
            raise LLMNotConfigured(
                "no LLM endpoint configured: set ALPHALOOP_LLM_BASE_URL and ALPHALOOP_LLM_MODEL "
                "(without them the embedded proposer runs)"
            )
        self.on_call = on_call
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=settings.llm_api_key or "not-needed",  # local servers ignore the key
            timeout=settings.llm_timeout_s,
            max_retries=0,
        )
        self._lock = threading.Lock()
        self.prompt_tokens_total = 0
        self.completion_tokens_total = 0
        self.calls = 0

    @classmethod
    def for_vision(
        cls, settings: Settings, *, on_call: Callable[[LLMCallRecord], None] | None = None
    ) -> LLMClient:
        """A client for ``settings.vlm_model`` (falling back to the text model)."""
        return cls(settings, on_call=on_call, model=settings.vlm_model or settings.llm_model)

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens of every successful call so far."""
        return self.prompt_tokens_total + self.completion_tokens_total

    def system_prompt(self, base_text: str) -> str:
        """``base_text`` with the Nemotron reasoning switch from ``settings.llm_reasoning``."""
        return nemotron_system_prompt(base_text, self.settings.llm_reasoning)

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        purpose: str,
        session_id: str | None = None,
        trial_id: int | str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> LLMReply:
        """Sends one chat completion request, retrying transient failures.

        Args:
            messages: OpenAI-format messages (content a string or a list of parts).
            tools: OpenAI tool specs (see :func:`openai_tool`).
            tool_choice: ``"auto"``, ``"required"``, ``"none"`` or a named function.
            purpose: what the call is for (``"propose"``, ``"chart_read"``...), journaled.
            session_id: journaled with each attempt.
            trial_id: journaled with each attempt.
            temperature: defaults to ``settings.llm_temperature``.
            max_tokens: cap on the completion length.

        Returns:
            The reply of the first successful attempt.

        Raises:
            LLMError: a subclass saying what went wrong; ``ToolsUnsupported`` when the
                endpoint cannot do tool calling.
        """
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": self.settings.llm_temperature if temperature is None else temperature,
        }
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        if tools:
            request["tools"] = [dict(t) for t in tools]
            if tool_choice is not None:
                request["tool_choice"] = tool_choice
        attempts = self.settings.llm_max_retries + 1
        ids = dict(purpose=purpose, model=self.model, session_id=session_id, trial_id=trial_id)
        for attempt in range(1, attempts + 1):
            start = time.perf_counter()
            try:
                reply = self._attempt(request, attempt, start)
            except _Failure as failure:
                latency = time.perf_counter() - start
                error = f"attempt {attempt}/{attempts}: {failure.message}"
                self._report(LLMCallRecord(**ids, latency_s=latency, ok=False, error=error))
                if not failure.retryable or attempt == attempts:
                    note = f" (gave up after {attempt} attempts)" if attempt > 1 else ""
                    raise failure.kind(
                        failure.message + note, status_code=failure.status, attempts=attempt
                    ) from failure.__cause__
                time.sleep(self._backoff(attempt, failure.retry_after))
                continue
            with self._lock:
                self.prompt_tokens_total += reply.prompt_tokens
                self.completion_tokens_total += reply.completion_tokens
                self.calls += 1
            self._report(
                LLMCallRecord(
                    **ids,
                    prompt_tokens=reply.prompt_tokens,
                    completion_tokens=reply.completion_tokens,
                    latency_s=reply.latency_s,
                    ok=True,
                )
            )
            return reply
        raise AssertionError("unreachable: the retry loop returns or raises")

    def _report(self, record: LLMCallRecord) -> None:
        if self.on_call is not None:
            self.on_call(record)

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        cap = self.settings.llm_backoff_max_s
        if retry_after is not None:
            return min(cap, retry_after)
        delay = self.settings.llm_backoff_base_s * 2 ** (attempt - 1)
        return min(cap, delay * (1 + _JITTER * random.random()))

    def _attempt(self, request: dict[str, Any], attempt: int, start: float) -> LLMReply:
        try:
            completion = self._client.chat.completions.create(**request)
        except openai.APITimeoutError as err:
            raise _Failure(
                LLMTimeout,
                f"no answer from the LLM endpoint at {self.base_url} within "
                f"{self.settings.llm_timeout_s:g}s (model '{self.model}'); raise "
                "ALPHALOOP_LLM_TIMEOUT or check the server's load",
                retryable=True,
            ) from err
        except openai.APIConnectionError as err:
            message = (
                f"cannot reach the LLM endpoint at {self.base_url} ({err.__cause__ or err}); "
                "is the server running?"
            )
            raise _Failure(LLMUnavailable, message, retryable=True) from err
        except openai.APIStatusError as err:
            raise self._status_failure(err, bool(request.get("tools"))) from err
        except (openai.APIResponseValidationError, ValueError) as err:
            raise self._bad_response(f"{type(err).__name__}: {err}") from err
        latency = time.perf_counter() - start
        return self._to_reply(completion, request, latency, attempt)

    def _status_failure(self, err: openai.APIStatusError, sent_tools: bool) -> _Failure:
        status, detail = err.status_code, _server_message(err)
        said = f"HTTP {status} from {self.base_url}: {detail}"
        kind: type[LLMError] = LLMBadRequest
        message = f"the endpoint refused the request ({said})"
        retryable, retry_after = False, None
        if status in (401, 403):
            kind = LLMAuthError
            message = f"the endpoint rejected the API key (set ALPHALOOP_LLM_API_KEY); {said}"
        elif (
            sent_tools and status in (400, 404, 422, 500, 501) and _TOOLS_UNSUPPORTED.search(detail)
        ):
            kind = ToolsUnsupported
            message = f"the endpoint does not support tool calling for '{self.model}' ({said})"
        elif status == 404:
            kind = LLMNotFound
            message = (
                f"unknown model '{self.model}' or wrong base URL '{self.base_url}' (check "
                "ALPHALOOP_LLM_MODEL / ALPHALOOP_LLM_BASE_URL; GET /v1/models lists what the "
                f"server serves): {detail}"
            )
        elif status >= 500 or status in _RETRYABLE_STATUS:
            kind, retryable = LLMUnavailable, True
            what = "rate limited" if status == 429 else "server error"
            message = f"{what} ({said})"
            retry_after = _retry_after(err.response.headers)
        return _Failure(kind, message, retryable=retryable, status=status, retry_after=retry_after)

    def _bad_response(self, detail: str) -> _Failure:
        # A truncated or garbled body is usually a proxy or server hiccup: worth a retry.
        message = (
            f"the LLM endpoint at {self.base_url} answered with something that is not a chat "
            f"completion ({detail[:300]})"
        )
        return _Failure(LLMBadResponse, message, retryable=True, status=200)

    def _to_reply(
        self, completion: Any, request: dict[str, Any], latency: float, attempt: int
    ) -> LLMReply:
        choices = getattr(completion, "choices", None)
        message = getattr(choices[0], "message", None) if choices else None
        if message is None:
            raise self._bad_response(f"no choices[0].message in {str(completion)[:200]!r}")
        raw = message.content if isinstance(message.content, str) else None
        calls = []
        for i, tc in enumerate(message.tool_calls or []):
            fn = getattr(tc, "function", None)
            if fn is None or not getattr(fn, "name", None):
                raise self._bad_response(f"tool call without a function name: {tc!r:.200}")
            args = fn.arguments if isinstance(fn.arguments, str) else json.dumps(fn.arguments)
            calls.append(ToolCall(id=tc.id or f"call_{i}", name=fn.name, arguments_raw=args))
        usage = getattr(completion, "usage", None)
        estimated = usage is None or usage.prompt_tokens is None
        if estimated:
            reply_chars = len(raw or "") + sum(len(c.arguments_raw) for c in calls)
            prompt, done = _chars(request["messages"]) // 4, reply_chars // 4
        else:
            prompt, done = usage.prompt_tokens, usage.completion_tokens or 0
        return LLMReply(
            content=strip_think(raw),
            tool_calls=calls,
            model=getattr(completion, "model", None) or self.model,
            prompt_tokens=prompt,
            completion_tokens=done,
            latency_s=latency,
            finish_reason=choices[0].finish_reason,
            raw_content=raw,
            attempts=attempt,
            usage_estimated=estimated,
        )
