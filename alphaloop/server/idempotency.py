"""Start requests carrying an ``Idempotency-Key``: the same key starts work once.

A double click, or a client retrying after a timeout, sends the same start twice. The first
request with a key runs; one that arrives while it runs waits for it; either way every request
with that key gets the first one's answer (its status and body). A key sent again with another
request body is refused (422): it names another request.

Answers are kept in this server process, the newest :data:`KEEP` keys, which is what a double
click or a retry needs; a restarted server starts afresh.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from fastapi import Header
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse

from alphaloop.exceptions import InvalidRequest

KEEP = 1024
KEY_PATTERN = r"^[A-Za-z0-9_\-]{8,80}$"

IdempotencyKey = Header(
    None,
    alias="Idempotency-Key",
    pattern=KEY_PATTERN,
    description="a fresh random key per start (e.g. a UUID): a request sent again with the same "
    "key gets the first one's answer instead of starting a second session",
)


class _Entry:
    def __init__(self, fingerprint: str) -> None:
        self.fingerprint = fingerprint
        self.done = threading.Event()
        self.answer: tuple[int, Any] | None = None


class Idempotency:
    """The answers of the keyed requests this server has run."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def _claim(self, key: str, fingerprint: str) -> tuple[_Entry, bool]:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                if entry.fingerprint != fingerprint:
                    raise InvalidRequest(
                        f"Idempotency-Key {key!r} was sent with another request; use a fresh "
                        "key for each new start",
                    )
                return entry, False
            entry = self._entries[key] = _Entry(fingerprint)
            while len(self._entries) > self.keep:
                self._entries.popitem(last=False)
            return entry, True

    def once(
        self, key: str | None, route: str, body: Any, run: Callable[[], Any], status: int = 202
    ) -> Any:
        """``run()`` the first time ``key`` comes (for ``route`` and ``body``); its answer
        (``status`` unless it is a response of its own), as JSON with the same status, every
        time after."""
        if key is None:
            return run()
        fingerprint = hashlib.sha256(
            json.dumps([route, jsonable_encoder(body)], sort_keys=True).encode()
        ).hexdigest()
        entry, first = self._claim(key, fingerprint)
        if not first:
            entry.done.wait()
            if entry.answer is None:  # the first request failed: this one runs afresh
                return self.once(key, route, body, run, status)
            status, content = entry.answer
            return JSONResponse(content, status_code=status, headers={"Idempotent-Replay": "1"})
        try:
            result = run()
            entry.answer = _recorded(result, status)
        except BaseException:
            with self._lock:
                self._entries.pop(key, None)
            raise
        finally:
            entry.done.set()
        return result


def _recorded(result: Any, status: int) -> tuple[int, Any]:
    if isinstance(result, JSONResponse):
        return result.status_code, json.loads(bytes(result.body))
    return status, jsonable_encoder(result)


__all__ = ["KEY_PATTERN", "Idempotency", "IdempotencyKey"]
