"""The LLM client: one model on one OpenAI-compatible endpoint (see :mod:`alphaloop.llm`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import openai

from alphaloop import telemetry
from alphaloop.exceptions import InvalidRequest, LLMError, LLMUnavailable
from alphaloop.llm.deadline import Deadline, Watchdog, endpoint_label, late_failure
from alphaloop.llm.messages import features, nemotron_system_prompt, wire_message
from alphaloop.llm.models import LLMCallRecord, LLMReply
from alphaloop.llm.replies import StreamReader, read_completion, whole_body
from alphaloop.llm.retry import (
    Failure,
    backoff_s,
    bad_response,
    never_connected,
    status_failure,
)
from alphaloop.llm.usage import UsageMeter
from alphaloop.settings import Settings

logger = logging.getLogger(__name__)
# The GenAI semantic conventions name the API spoken: every endpoint here speaks OpenAI's.
GENAI_PROVIDER = "openai"
# The setting that caps a call's reply, by purpose (every other purpose is a proposal).
MAX_TOKENS_SETTINGS = {
    "chat": "ALPHALOOP_LLM_CHAT_MAX_TOKENS",
    "chart_read": "ALPHALOOP_VLM_MAX_TOKENS",
    "propose": "ALPHALOOP_LLM_MAX_TOKENS",
}
TIMEOUT_SETTING = "ALPHALOOP_LLM_TIMEOUT"
# The deadline of the calls made inside ``LLMClient.within`` (per thread and task).
_DEADLINE: ContextVar[Deadline | None] = ContextVar("llm_deadline", default=None)
# The packages whose exceptions, out of a stream, mean the connection failed.
HTTP_LIBRARIES = frozenset({"httpx", "httpcore", "h11", "httpx2", "httpcore2", "anyio"})


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
        # Learned from refusals, for the life of this client: some servers cannot stream a
        # request with tools, or refuse the ``stream_options`` that asks for usage.
        self._stream = True
        self._stream_usage = True

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
        """Sends one chat completion request, retrying what ran no generation.

        The reply is streamed and cut at ``max_tokens`` on this side, whatever the server does:
        a small model that never emits a stop token is cut at the cap instead of generating
        for minutes (its reply has ``finish_reason`` ``length``). Each attempt ends within
        ``llm_timeout_s``, and all of them (waits included) by the deadline of an enclosing
        :meth:`within`, past which the call ends with an ``LLMUnavailable`` naming the
        deadline's setting and what to change.

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
        return self._traced(request, ids, _DEADLINE.get())

    @contextmanager
    def within(self, deadline: Deadline) -> Iterator[None]:
        """Calls made inside (in this thread or task) end by ``deadline``."""
        token = _DEADLINE.set(deadline)
        try:
            yield
        finally:
            _DEADLINE.reset(token)

    def _traced(
        self, request: dict[str, Any], ids: dict[str, Any], deadline: Deadline | None
    ) -> LLMReply:
        # One "chat <model>" span per call (retries included), with the GenAI attributes.
        attrs = telemetry.genai_attributes(provider=GENAI_PROVIDER, request_model=self.model)
        with telemetry.span(f"chat {self.model}", attrs) as current:
            reply = self._chat(request, ids, deadline)
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

    def _chat(
        self, request: dict[str, Any], ids: dict[str, Any], deadline: Deadline | None
    ) -> LLMReply:
        attempts = self.settings.llm_max_retries + 1
        purpose = ids["purpose"]
        attempt = 0
        while attempt < attempts:
            attempt += 1
            if deadline is not None and deadline.remaining() <= 0:
                late = self._late(deadline, purpose, "no time was left for another call")
                raise self._given_up(late, attempt - 1, purpose)
            start = time.perf_counter()
            try:
                reply = self._attempt(request, attempt, purpose, deadline)
            except Failure as failure:
                latency = time.perf_counter() - start
                error = f"attempt {attempt}/{attempts}: {failure.message}"
                self._report(LLMCallRecord(**ids, latency_s=latency, ok=False, error=error))
                if failure.fallback is not None:  # streaming refused: no generation ran
                    self._fall_back(failure)
                    attempt -= 1
                    continue
                if not failure.retryable or attempt == attempts:
                    raise self._given_up(failure, attempt, purpose) from failure.__cause__
                wait = backoff_s(
                    attempt,
                    failure.retry_after,
                    base_s=self.settings.llm_backoff_base_s,
                    max_s=self.settings.llm_backoff_max_s,
                )
                if deadline is not None and wait >= deadline.remaining():
                    late = self._late(deadline, purpose, f"the last attempt: {failure.message}")
                    raise self._given_up(late, attempt, purpose) from failure.__cause__
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

    def _given_up(self, failure: Failure, attempt: int, purpose: str) -> Exception:
        note = f" (gave up after {attempt} attempts)" if attempt > 1 else ""
        logger.warning("LLM %s failed: %s%s", purpose, failure.message, note)
        return failure.kind(
            failure.message + note, status_code=failure.status, attempts=max(attempt, 1)
        )

    def _fall_back(self, failure: Failure) -> None:
        if failure.fallback == "stream":
            self._stream = False
        self._stream_usage = False
        logger.warning("%s", failure.message)

    def _report(self, record: LLMCallRecord) -> None:
        if self.on_call is not None:
            self.on_call(record)

    @property
    def endpoint(self) -> str:
        """``model 'NAME' at HOST:PORT``, for messages (see :func:`.deadline.endpoint_label`)."""
        return endpoint_label(self.base_url, self.model)

    def _limit(self, deadline: Deadline | None) -> Deadline:
        """When this attempt must end: ``llm_timeout_s`` from now, or the caller's deadline if
        that comes first."""
        timeout = self.settings.llm_timeout_s
        own = Deadline.after(timeout, limit_s=timeout, what="one request", setting=TIMEOUT_SETTING)
        return deadline if deadline is not None and deadline.at <= own.at else own

    def _attempt(
        self, request: dict[str, Any], attempt: int, purpose: str, deadline: Deadline | None
    ) -> LLMReply:
        start = time.perf_counter()
        limit = self._limit(deadline)
        sent = set(features(request))
        body = dict(request)
        if self._stream:
            sent.add("stream")
            body["stream"] = True
            if self._stream_usage:
                body["stream_options"] = {"include_usage": True}
        wait = max(0.001, limit.remaining())
        try:
            answer = self._client.chat.completions.create(**body, timeout=wait)
        except openai.APIStatusError as err:
            raise status_failure(
                err, sent=frozenset(sent), base_url=self.base_url, model=self.model
            ) from err
        except openai.APIConnectionError as err:  # timeouts included
            raise self._transport(err, purpose, limit, tokens=None) from err
        except (openai.APIResponseValidationError, ValueError) as err:
            raise bad_response(self.base_url, f"{type(err).__name__}: {err}") from err
        if self._stream and "json" in answer.response.headers.get("content-type", ""):
            answer = whole_body(answer, self.base_url)  # answered whole: a server or proxy
        if not isinstance(answer, openai.Stream):
            latency = time.perf_counter() - start
            return read_completion(
                answer,
                request["messages"],
                base_url=self.base_url,
                model=self.model,
                latency=latency,
                attempt=attempt,
            )
        reader = StreamReader(request["max_tokens"])
        self._read(answer, reader, limit, purpose)
        return reader.reply(
            request["messages"],
            base_url=self.base_url,
            model=self.model,
            latency=time.perf_counter() - start,
            attempt=attempt,
        )

    def _read(self, stream: Any, reader: StreamReader, limit: Deadline, purpose: str) -> None:
        """Reads ``stream`` into ``reader`` until it ends, passes the cap, or time is up; then
        closes it, which stops a server that is still generating."""
        dog, ended = Watchdog(stream.response, limit.at), False
        try:
            with dog:
                for chunk in stream:
                    if not reader.add(chunk):
                        return
                    if limit.remaining() <= 0:
                        dog.fired = True
                        break
                else:
                    ended = True
        except openai.APIConnectionError as err:
            if dog.fired:
                raise self._out_of_time(purpose, limit, tokens=reader.counted) from err
            raise self._transport(err, purpose, limit, tokens=reader.counted) from err
        except openai.APIError as err:  # an error event in the stream
            raise Failure(
                LLMError,
                f"the endpoint reported an error while answering ({self.endpoint}): {err.message}",
                retryable=False,
            ) from err
        except ValueError as err:  # a chunk that is not JSON
            raise bad_response(self.base_url, f"{type(err).__name__}: {err}") from err
        except Exception as err:
            # openai before 2.x let the HTTP library's own errors out of a stream
            if type(err).__module__.split(".")[0] not in HTTP_LIBRARIES:
                raise
            if dog.fired:
                raise self._out_of_time(purpose, limit, tokens=reader.counted) from err
            raise self._transport(err, purpose, limit, tokens=reader.counted) from err
        finally:
            stream.close()
        if dog.fired and not ended:
            raise self._out_of_time(purpose, limit, tokens=reader.counted)

    def _transport(
        self, err: BaseException, purpose: str, limit: Deadline, tokens: int | None
    ) -> Failure:
        """A failure below HTTP: retried only when no connection was made."""
        if never_connected(err):
            message = (
                f"cannot reach the LLM endpoint at {self.base_url} ({err.__cause__ or err}); "
                "is the server running?"
            )
            return Failure(LLMUnavailable, message, retryable=True)
        if isinstance(err, openai.APITimeoutError) or "Timeout" in type(err).__name__:
            return self._out_of_time(purpose, limit, tokens)
        cause = err.__cause__ or err
        what = "before answering" if tokens is None else f"after {tokens} tokens of its answer"
        message = (
            f"the LLM endpoint dropped the connection {what} ({self.endpoint}: {cause}); not "
            "sent again, since the server had taken the request (a server that crashed at its "
            "context limit does it again: check its log, lower the max tokens or raise its "
            "context size)"
        )
        return Failure(LLMUnavailable, message, retryable=False)

    def _out_of_time(self, purpose: str, limit: Deadline, tokens: int | None) -> Failure:
        """The attempt's time is up while the server had the request: not retried, since it
        would generate as long again."""
        doing = f"was still generating after {tokens} tokens" if tokens else "sent nothing back"
        return self._late(limit, purpose, f"it {doing}, and is not asked again")

    def _late(self, deadline: Deadline, purpose: str, detail: str) -> Failure:
        cap = MAX_TOKENS_SETTINGS.get(purpose, MAX_TOKENS_SETTINGS["propose"])
        return late_failure(
            deadline, self.endpoint, detail, cap=(cap, self.max_tokens_for(purpose))
        )
