"""The LLM client: one model on one OpenAI-compatible endpoint (see :mod:`alphaloop.llm`)."""

from __future__ import annotations

import base64
import json
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import openai

from alphaloop import telemetry
from alphaloop.exceptions import InvalidRequest, LLMUnavailable
from alphaloop.llm.models import LLMCallRecord, LLMReply, ToolCall
from alphaloop.llm.retry import Failure, backoff_s, bad_response, status_failure
from alphaloop.llm.usage import UsageMeter, estimate_tokens
from alphaloop.llm_json import strip_think
from alphaloop.settings import Settings

logger = logging.getLogger(__name__)
# The GenAI semantic conventions name the API spoken: every endpoint here speaks OpenAI's.
GENAI_PROVIDER = "openai"


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


def wire_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message as every server accepts it.

    An assistant turn carrying tool calls gets ``content: ""`` instead of null or nothing:
    llama-cpp-python answers a null content with 500, and an empty string means the same to
    every other server.
    """
    out = dict(message)
    if out.get("role") == "assistant" and out.get("tool_calls") and out.get("content") is None:
        out["content"] = ""
    return out


def features(request: Mapping[str, Any]) -> frozenset[str]:
    """The optional features a request uses, to pin a refusal on one of them."""
    used = set()
    if request.get("tools"):
        used.add("tools")
    if request.get("response_format"):
        used.add("response_format")
    for m in request.get("messages", ()):
        content = m.get("content")
        if isinstance(content, list) and any(
            isinstance(p, Mapping) and p.get("type") == "image_url" for p in content
        ):
            used.add("images")
    return frozenset(used)


class LLMClient:
    """A chat client for one model on one OpenAI-compatible endpoint.

    Args:
        settings: endpoint, key, timeout, retries, backoff and temperature.
        on_call: called with an :class:`LLMCallRecord` after every attempt, ok or not.
        model: overrides ``settings.llm_model`` (e.g. the vision model).

    Raises:
        InvalidRequest: no base URL or no model.
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
            raise InvalidRequest(
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
        self.usage = UsageMeter()

    @classmethod
    def for_vision(
        cls, settings: Settings, *, on_call: Callable[[LLMCallRecord], None] | None = None
    ) -> LLMClient:
        """A client for ``settings.vlm_model`` (falling back to the text model)."""
        return cls(settings, on_call=on_call, model=settings.vlm_model or settings.llm_model)

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens of every successful call so far."""
        return self.usage.total_tokens

    @property
    def prompt_tokens_total(self) -> int:
        return self.usage.prompt_tokens

    @property
    def completion_tokens_total(self) -> int:
        return self.usage.completion_tokens

    @property
    def calls(self) -> int:
        """Successful calls so far."""
        return self.usage.calls

    def system_prompt(self, base_text: str) -> str:
        """``base_text`` with the Nemotron reasoning switch from ``settings.llm_reasoning``."""
        return nemotron_system_prompt(base_text, self.settings.llm_reasoning)

    def max_tokens_for(self, purpose: str) -> int:
        """The reply cap of a call made for ``purpose`` (``chat`` and ``chart_read`` have their
        own; everything else is a proposal)."""
        caps = {
            "chat": self.settings.llm_chat_max_tokens,
            "chart_read": self.settings.vlm_max_tokens,
        }
        return caps.get(purpose, self.settings.llm_max_tokens)

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
        response_format: Mapping[str, Any] | None = None,
        mode: str | None = None,
    ) -> LLMReply:
        """Sends one chat completion request, retrying transient failures.

        Every request carries ``max_tokens`` and a timeout: a small model that never emits a
        stop token is cut at the cap instead of generating for minutes.

        Args:
            messages: OpenAI-format messages (content a string or a list of parts).
            tools: OpenAI tool specs (see :func:`openai_tool`).
            tool_choice: ``"auto"``, ``"required"``, ``"none"`` or a named function.
            purpose: what the call is for (``"propose"``, ``"chart_read"``...), journaled.
            session_id: journaled with each attempt.
            trial_id: journaled with each attempt.
            temperature: defaults to ``settings.llm_temperature``.
            max_tokens: cap on the completion length; defaults to :meth:`max_tokens_for`.
            response_format: e.g. ``{"type": "json_schema", ...}``, sent as given.
            mode: how the answer is asked for, journaled with each attempt (default: ``tools``
                when tools are sent, else ``text``).

        Returns:
            The reply of the first successful attempt.

        Raises:
            LLMError: a subclass saying what went wrong; ``Unsupported`` when the
                endpoint cannot do tool calling.
        """
        request = self._request(messages, tools, tool_choice, temperature, max_tokens, purpose)
        if response_format is not None:
            request["response_format"] = dict(response_format)
        ids = dict(
            purpose=purpose,
            model=self.model,
            session_id=session_id,
            trial_id=trial_id,
            mode=mode or ("tools" if tools else "text"),
        )
        return self._traced(request, ids)

    def _traced(self, request: dict[str, Any], ids: dict[str, Any]) -> LLMReply:
        # One "chat <model>" span per call (retries included), with the GenAI attributes.
        attrs = telemetry.genai_attributes(provider=GENAI_PROVIDER, request_model=self.model)
        with telemetry.span(f"chat {self.model}", attrs) as current:
            reply = self._chat(request, ids)
            telemetry.set_attributes(
                current,
                {
                    **telemetry.genai_attributes(
                        provider=GENAI_PROVIDER,
                        request_model=self.model,
                        response_model=reply.model,
                        input_tokens=reply.prompt_tokens,
                        output_tokens=reply.completion_tokens,
                    ),
                    "alphaloop.llm.purpose": ids["purpose"],
                    "alphaloop.llm.attempts": reply.attempts,
                },
            )
            return reply

    def _request(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        tool_choice: str | Mapping[str, Any] | None,
        temperature: float | None,
        max_tokens: int | None,
        purpose: str,
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [wire_message(m) for m in messages],
            "temperature": self.settings.llm_temperature if temperature is None else temperature,
            "max_tokens": max_tokens if max_tokens is not None else self.max_tokens_for(purpose),
        }
        if tools:
            request["tools"] = [dict(t) for t in tools]
            if tool_choice is not None:
                request["tool_choice"] = tool_choice
        return request

    def _chat(self, request: dict[str, Any], ids: dict[str, Any]) -> LLMReply:
        attempts = self.settings.llm_max_retries + 1
        purpose = ids["purpose"]
        for attempt in range(1, attempts + 1):
            start = time.perf_counter()
            try:
                reply = self._attempt(request, attempt, start)
            except Failure as failure:
                latency = time.perf_counter() - start
                error = f"attempt {attempt}/{attempts}: {failure.message}"
                self._report(LLMCallRecord(**ids, latency_s=latency, ok=False, error=error))
                if not failure.retryable or attempt == attempts:
                    note = f" (gave up after {attempt} attempts)" if attempt > 1 else ""
                    logger.warning("LLM %s failed: %s%s", purpose, failure.message, note)
                    raise failure.kind(
                        failure.message + note, status_code=failure.status, attempts=attempt
                    ) from failure.__cause__
                wait = backoff_s(
                    attempt,
                    failure.retry_after,
                    base_s=self.settings.llm_backoff_base_s,
                    max_s=self.settings.llm_backoff_max_s,
                )
                logger.warning("LLM %s: %s; retrying in %.2f s", purpose, error, wait)
                time.sleep(wait)
                continue
            self.usage.add(reply.prompt_tokens, reply.completion_tokens)
            self._report(
                LLMCallRecord(
                    **ids,
                    prompt_tokens=reply.prompt_tokens,
                    completion_tokens=reply.completion_tokens,
                    latency_s=reply.latency_s,
                    ok=True,
                    finish_reason=reply.finish_reason,
                )
            )
            return reply
        raise AssertionError("unreachable: the retry loop returns or raises")

    def _report(self, record: LLMCallRecord) -> None:
        if self.on_call is not None:
            self.on_call(record)

    def _attempt(self, request: dict[str, Any], attempt: int, start: float) -> LLMReply:
        try:
            completion = self._client.chat.completions.create(
                **request, timeout=self.settings.llm_timeout_s
            )
        except openai.APITimeoutError as err:
            raise Failure(
                LLMUnavailable,
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
            raise Failure(LLMUnavailable, message, retryable=True) from err
        except openai.APIStatusError as err:
            raise status_failure(
                err, sent=features(request), base_url=self.base_url, model=self.model
            ) from err
        except (openai.APIResponseValidationError, ValueError) as err:
            raise bad_response(self.base_url, f"{type(err).__name__}: {err}") from err
        latency = time.perf_counter() - start
        return self._to_reply(completion, request, latency, attempt)

    def _to_reply(
        self, completion: Any, request: dict[str, Any], latency: float, attempt: int
    ) -> LLMReply:
        choices = getattr(completion, "choices", None)
        message = getattr(choices[0], "message", None) if choices else None
        if message is None:
            raise bad_response(self.base_url, f"no choices[0].message in {str(completion)[:200]!r}")
        raw = message.content if isinstance(message.content, str) else None
        calls = []
        for i, tc in enumerate(message.tool_calls or []):
            fn = getattr(tc, "function", None)
            if fn is None or not getattr(fn, "name", None):
                raise bad_response(self.base_url, f"tool call without a function name: {tc!r:.200}")
            args = fn.arguments if isinstance(fn.arguments, str) else json.dumps(fn.arguments)
            calls.append(ToolCall(id=tc.id or f"call_{i}", name=fn.name, arguments_raw=args))
        usage = getattr(completion, "usage", None)
        estimated = usage is None or usage.prompt_tokens is None
        if estimated:
            reply_chars = len(raw or "") + sum(len(c.arguments_raw) for c in calls)
            prompt, done = estimate_tokens(request["messages"], reply_chars)
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
