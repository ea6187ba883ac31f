"""Who may call the API, and how much they may send.

- Loopback by default. Binding any other address needs ``ALPHALOOP_API_TOKEN``; then every API
  route asks for ``Authorization: Bearer <token>``.
- Whenever a token is set, mutating routes (POST) ask for it, loopback or not.
- Tokens are compared in constant time. The page's files (HTML, JS, plotly.js) hold no data and
  are served without a token: the page sends the token it is given on every API call.
- Request bodies are capped before they are read whole.
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any

from fastapi import HTTPException, Request

from alphaloop.exceptions import EXIT_USAGE, USAGE_STATUS, AlphaloopError
from alphaloop.server.errors import send_error
from alphaloop.settings import Settings

MAX_BODY_BYTES = 4 * 1024 * 1024  # a base64 chart image (capped at 2 MB) plus its JSON
MAX_IMAGE_BYTES = 2 * 1024 * 1024
_LOOPBACK_NAMES = {"localhost", "ip6-localhost"}


class UnsafeBind(AlphaloopError):
    """A non-loopback address without an API token."""

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, settings: Settings) -> bool:
    """Whether reads need the token too (any non-loopback bind).

    Raises:
        UnsafeBind: a non-loopback host and no ``ALPHALOOP_API_TOKEN``.
    """
    if is_loopback(host):
        return False
    if not settings.api_token:
        raise UnsafeBind(
            f"refusing to bind {host}: anything but loopback needs a token; set "
            "ALPHALOOP_API_TOKEN (clients then send 'Authorization: Bearer <token>') or bind "
            "127.0.0.1"
        )
    return True


def _presented(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def check_token(request: Request) -> None:
    """The route dependency: reads need the token on a non-loopback bind, writes whenever a
    token is set.

    Raises:
        HTTPException: 401 with a message saying which header to send.
    """
    state: Any = request.app.state
    token: str | None = state.settings.api_token
    if not token:
        return
    mutating = request.method not in ("GET", "HEAD", "OPTIONS")
    if not (mutating or state.auth_reads):
        return
    given = _presented(request)
    if given is None or not hmac.compare_digest(given.encode(), token.encode()):
        raise HTTPException(
            status_code=401,
            detail="missing or wrong API token; send 'Authorization: Bearer <ALPHALOOP_API_TOKEN>'",
            headers={"WWW-Authenticate": "Bearer"},
        )


class BodyLimit:
    """ASGI middleware: 413 for a body over ``limit`` bytes, by its Content-Length or, when it
    has none, as it streams in."""

    def __init__(self, app: Any, limit: int = MAX_BODY_BYTES) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await _too_large(send, self.limit)
            return
        seen = 0

        async def counted() -> dict:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _BodyTooLarge
            return message

        try:
            await self.app(scope, counted, send)
        except _BodyTooLarge:
            await _too_large(send, self.limit)


class _BodyTooLarge(Exception):
    pass


async def _too_large(send: Any, limit: int) -> None:
    await send_error(
        send, 413, f"request body over {limit:,} bytes; send a smaller image or fewer fields"
    )


def image_kind(data: bytes) -> str:
    """``png`` or ``jpeg`` by the file's magic bytes.

    Raises:
        ValueError: neither (or over :data:`MAX_IMAGE_BYTES`).
    """
    if len(data) > MAX_IMAGE_BYTES:
        raise ValueError(
            f"image of {len(data):,} bytes is over the {MAX_IMAGE_BYTES:,}-byte cap; send a "
            "smaller PNG or JPEG"
        )
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    raise ValueError("image_b64 is not a PNG or JPEG (checked by its first bytes)")
