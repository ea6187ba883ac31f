"""Time limits of an LLM call: a caller's deadline, and the watchdog that makes a streamed read
give up at one.

A request is bounded three ways: ``max_tokens`` (cut on the client's side, see
:mod:`.replies`), the per-request ``llm_timeout_s``, and a caller's :class:`Deadline` over many
calls (one chat answer). The read timeout of an HTTP client counts from the last byte, so it
never fires on a server that streams forever, nor in time on one that stalls after a minute of
streaming: :class:`Watchdog` shuts the socket down at the moment instead, which ends a blocked
read at once and tells the server to stop generating (llama.cpp and vLLM cancel a request whose
client went away).
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any
from urllib.parse import urlsplit

from alphaloop.exceptions import LLMUnavailable
from alphaloop.llm.retry import Failure

logger = logging.getLogger(__name__)
# A model named by its file (llama.cpp servers take a path) is shown by its file name only.
MODEL_FILE = re.compile(r"\.(gguf|bin|safetensors|pt|pth|onnx)$", re.IGNORECASE)


@dataclass(frozen=True)
class Deadline:
    """A moment (``time.monotonic()``) by which a caller needs its answer.

    Attributes:
        at: the moment.
        limit_s: the whole allowance it stands for, for the message.
        what: what it bounds, for the message (``"one chat answer"``).
        setting: the environment variable that sets the allowance.
    """

    at: float
    limit_s: float
    what: str
    setting: str

    @classmethod
    def after(cls, seconds: float, *, limit_s: float, what: str, setting: str) -> Deadline:
        """The deadline ``seconds`` from now (what is left of an allowance of ``limit_s``)."""
        return cls(time.monotonic() + seconds, limit_s, what, setting)

    def remaining(self) -> float:
        return self.at - time.monotonic()


class Watchdog:
    """Shuts a streamed response's connection down at ``at`` unless cancelled first.

    Use as a context manager around reading the stream; ``fired`` says whether it struck. The
    socket comes from the response's ``network_stream`` extension (httpx and httpcore's public
    extension); without one the response is closed instead, which ends the read at the next
    chunk.
    """

    def __init__(self, response: Any, at: float) -> None:
        self.response, self.at = response, at
        self.fired = False
        self._timer = threading.Timer(max(0.0, at - time.monotonic()), self._fire)
        self._timer.daemon = True

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def _fire(self) -> None:
        self.fired = True
        extensions = getattr(self.response, "extensions", None) or {}
        stream = extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        try:
            if isinstance(sock, socket.socket):
                sock.shutdown(socket.SHUT_RDWR)
            else:
                self.response.close()
        except (OSError, RuntimeError) as err:  # already closed: the read has ended anyway
            logger.debug("watchdog: closing the LLM stream: %s", err)


def endpoint_label(base_url: str, model: str) -> str:
    """``model 'NAME' at HOST:PORT``: a model given as a file path (llama.cpp servers accept
    one) shows its file name only, and the URL neither its path nor a password."""
    if model.startswith(("/", "~", ".")) or "\\" in model or MODEL_FILE.search(model):
        model = PurePath(model.replace("\\", "/")).name
    parts = urlsplit(base_url)
    host = parts.hostname or "the configured endpoint"
    return f"model '{model}' at {host}{f':{parts.port}' if parts.port else ''}"


def late_failure(
    deadline: Deadline, endpoint: str, detail: str, *, cap: tuple[str, int]
) -> Failure:
    """A caller's deadline passed: what happened, and what to change (``cap``: the setting of
    the reply's max tokens and its value). Not retried: there is no time left for it."""
    setting, value = cap
    message = (
        f"no answer from {endpoint} within the {deadline.limit_s:g} s {deadline.what} may take "
        f"({deadline.setting}): {detail}. Raise {deadline.setting}, lower {setting} (now "
        f"{value}), or use a faster server, or a bigger model that stops on its own"
    )
    return Failure(LLMUnavailable, message, retryable=False)
