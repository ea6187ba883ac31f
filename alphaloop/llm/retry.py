"""Which failures of an OpenAI-compatible endpoint are worth another attempt, how long to wait,
and the error each one becomes when it is the last.

Only what ran no generation is retried, with exponential backoff and a little jitter: a
connection that could not be made, 408/409/429 (honouring ``Retry-After``, capped by
``llm_backoff_max_s``) and 5xx. A request the server took and then timed out on, dropped, or
answered with something that is not a completion is not sent again: the server was generating,
and a second attempt generates as long again (a small model that never stops ran one chat
question past ten minutes that way, five times 120 s). 400/401/403/404/422 are not retried
either, and raise an :class:`~alphaloop.exceptions.LLMError` subclass saying what to change.
A 5xx that names a missing capability ("image input is not supported", a chat template without
tools) is not retried: llama.cpp's server answers those with 500, and asking again cannot
change the answer. A refusal of streaming itself ("Cannot use tools with stream", an unknown
``stream_options``) is answered by sending the request again at once without it (``fallback``).
"""

from __future__ import annotations

import email.utils
import random
import re
import time
from collections.abc import Callable, Mapping
from functools import partial

import openai

from alphaloop.exceptions import LLMError, LLMUnavailable, Unsupported

RETRYABLE_STATUS = {408, 409, 429}
# Wording of "no tool calling here" across servers: vLLM without --enable-auto-tool-choice,
# llama.cpp without --jinja (a 500), Ollama models without tool support, NIM and others.
TOOLS_UNSUPPORTED = re.compile(
    r"tool.{0,40}(not supported|unsupported|requires|not enabled|not available)"
    r"|(unsupported param|does not support|doesn't support|not support).{0,40}tool",
    re.IGNORECASE,
)
IMAGES_UNSUPPORTED = re.compile(
    r"image.{0,30}(not supported|unsupported)|(does not|doesn't) support (image|vision)"
    r"|mmproj|multimodal.{0,30}(not supported|unsupported)",
    re.IGNORECASE,
)
RESPONSE_FORMAT_UNSUPPORTED = re.compile(
    r"(response_format|json_schema|response format).{0,60}"
    r"(not supported|unsupported|invalid|unknown|not implemented)"
    r"|(unsupported|invalid|unknown).{0,30}(response_format|json_schema)",
    re.IGNORECASE,
)
# A server error that names a missing capability is permanent, whatever its status says.
PERMANENT_5XX = re.compile(r"not supported|unsupported|not implemented", re.IGNORECASE)
# llama-server builds of early 2025 refuse tools in a stream with a 500 "Cannot use tools with
# stream"; strict servers refuse an unknown ``stream_options`` field.
STREAM_UNSUPPORTED = re.compile(
    r"(cannot|can't|does not|doesn't|not) .{0,30}\bstream|"
    r"\bstream(ing)?\b.{0,30}(not supported|unsupported|not implemented|not allowed)",
    re.IGNORECASE,
)
STREAM_OPTIONS = re.compile(r"stream_options", re.IGNORECASE)
# The failures of ``httpx`` (and its successor) that mean no connection was made: nothing
# reached the server, so nothing was generated.
CONNECT_FAILURES = frozenset({"ConnectError", "ConnectTimeout", "PoolTimeout"})
JITTER = 0.1  # fraction of the backoff added at random, so clients desync


class Failure(Exception):
    """One failed attempt: which error to raise if it is the last, and whether to retry."""

    def __init__(
        self,
        kind: Callable[..., LLMError],
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
        fallback: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind, self.message, self.retryable = kind, message, retryable
        self.status, self.retry_after = status, retry_after
        # "stream" or "stream_options": the request goes again at once without it
        self.fallback = fallback


def never_connected(err: BaseException) -> bool:
    """Whether ``err`` (an ``openai`` connection error, or what it wraps) means no connection
    was made, as opposed to one the server took and then dropped or left waiting."""
    seen: BaseException | None = err
    while seen is not None:
        if type(seen).__name__ in CONNECT_FAILURES:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def backoff_s(attempt: int, retry_after: float | None, *, base_s: float, max_s: float) -> float:
    """Seconds to wait before attempt ``attempt + 1``: the server's ``Retry-After`` when it gave
    one, else ``base_s * 2 ** (attempt - 1)`` plus jitter; never more than ``max_s``."""
    if retry_after is not None:
        return min(max_s, retry_after)
    delay = base_s * 2 ** (attempt - 1)
    return min(max_s, delay * (1 + JITTER * random.random()))


def _server_message(err: openai.APIStatusError) -> str:
    body = err.body
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        return body["message"]
    if body is not None and not isinstance(body, Mapping):
        return str(body)[:300]
    return err.message


def _retry_after_s(headers: Mapping[str, str]) -> float | None:
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


def _capability_failure(
    status: int, detail: str, said: str, *, sent: frozenset[str], model: str
) -> Failure | None:
    """A refusal naming a capability the server or model lacks: what to change, not retried."""
    if status not in (400, 404, 422) and status < 500:
        return None
    if "stream" in sent and STREAM_OPTIONS.search(detail):
        message = f"the endpoint refuses stream_options ({said}); usage is estimated instead"
        return Failure(LLMError, message, retryable=False, status=status, fallback="stream_options")
    if "stream" in sent and STREAM_UNSUPPORTED.search(detail):
        message = (
            f"the endpoint refuses to stream this request ({said}); replies are read whole, "
            "bounded by the server's max_tokens and the timeouts only"
        )
        return Failure(LLMError, message, retryable=False, status=status, fallback="stream")
    if "tools" in sent and TOOLS_UNSUPPORTED.search(detail):
        message = (
            f"the endpoint does not support tool calling for '{model}' ({said}); proposals "
            "switch to JSON in the message text (vLLM: start it with --enable-auto-tool-choice "
            "--tool-call-parser ...; llama.cpp: a model whose chat template has tools)"
        )
        refused = partial(Unsupported, capability="tools")
        return Failure(refused, message, retryable=False, status=status)
    if "images" in sent and IMAGES_UNSUPPORTED.search(detail):
        message = (
            f"model '{model}' takes no image input ({said}); set ALPHALOOP_VLM_MODEL to a vision "
            "model (llama.cpp: start it with the model's --mmproj); chart reads use the "
            "embedded reader meanwhile"
        )
        refused = partial(Unsupported, capability="images")
        return Failure(refused, message, retryable=False, status=status)
    if "response_format" in sent and RESPONSE_FORMAT_UNSUPPORTED.search(detail):
        message = (
            f"the endpoint refuses response_format json_schema for '{model}' ({said}); "
            "proposals ask for plain JSON in the message text instead"
        )
        refused = partial(Unsupported, capability="response_format")
        return Failure(refused, message, retryable=False, status=status)
    if status >= 500 and PERMANENT_5XX.search(detail):
        message = f"the endpoint cannot do what was asked; change the request or model ({said})"
        return Failure(LLMError, message, retryable=False, status=status)
    return None


def status_failure(
    err: openai.APIStatusError, *, sent: frozenset[str], base_url: str, model: str
) -> Failure:
    """What an HTTP error status means for the caller: which error, and whether to retry.

    Args:
        err: the ``openai`` client's error.
        sent: the optional features the request used (``tools``, ``images``,
            ``response_format``), so a refusal can be pinned on one of them.
        base_url: the endpoint, for the message.
        model: the model asked for, for the message.
    """
    status, detail = err.status_code, _server_message(err)
    said = f"HTTP {status} from {base_url}: {detail}"
    kind: type[LLMError] = LLMError
    message = f"the endpoint refused the request ({said})"
    retryable, retry_after = False, None
    capability = _capability_failure(status, detail, said, sent=sent, model=model)
    if capability is not None:
        return capability
    if status in (401, 403):
        message = (
            f"the endpoint rejected the API key: set ALPHALOOP_LLM_API_KEY (or OPENAI_API_KEY) "
            f"to a key it accepts; {said}"
        )
    elif status == 404:
        message = (
            f"unknown model '{model}' or wrong base URL '{base_url}' (check "
            "ALPHALOOP_LLM_MODEL / ALPHALOOP_LLM_BASE_URL; GET /v1/models lists what the "
            f"server serves): {detail}"
        )
    elif status >= 500 or status in RETRYABLE_STATUS:
        kind, retryable = LLMUnavailable, True
        what = "rate limited" if status == 429 else "server error"
        message = f"{what} ({said})"
        retry_after = _retry_after_s(err.response.headers)
    return Failure(kind, message, retryable=retryable, status=status, retry_after=retry_after)


def bad_response(base_url: str, detail: str) -> Failure:
    """A reply that is not a chat completion. The server took the request and answered, so it
    may have generated all it was asked: not retried."""
    message = (
        f"the LLM endpoint at {base_url} answered with something that is not a chat "
        f"completion ({detail[:300]})"
    )
    return Failure(LLMError, message, retryable=False, status=200)
