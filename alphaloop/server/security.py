"""Who may call the API, and how much they may send.

- Loopback by default. Binding any other address needs ``ALPHALOOP_API_TOKEN``; then every API
  route asks for ``Authorization: Bearer <token>``.
- Whenever a token is set, mutating routes (POST) ask for it, loopback or not.
- Tokens are compared in constant time. The page's files (HTML, JS, plotly.js) hold no data and
  are served without a token: the page sends the token it is given on every API call.
- Request bodies are capped before they are read whole, whether their size is announced
  (``Content-Length``) or not (chunked): 413 either way.
- Every answer refuses to be framed by another page (clickjacking: a click inside a frame is
  same-origin, one away from Halt or "activate anyway"), refuses content sniffing, and carries
  a content security policy that runs scripts from this server only: no inline script, no
  ``eval``, no other origin (the page and plotly.js are served from here).
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any

from fastapi import HTTPException, Request
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from alphaloop.exceptions import InvalidRequest
from alphaloop.server.errors import send_error
from alphaloop.settings import Settings

MAX_BODY_BYTES = 4 * 1024 * 1024  # a base64 chart image (capped at 2 MB) plus its JSON
_LOOPBACK_NAMES = {"localhost", "ip6-localhost"}


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
        InvalidRequest: a non-loopback host and no ``ALPHALOOP_API_TOKEN``.
    """
    if is_loopback(host):
        return False
    if not settings.api_token:
        raise InvalidRequest(
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

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
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
                    raise _BodyTooLarge(self.limit)
            return message

        try:
            await self.app(scope, counted, send)
        except _BodyTooLarge:
            await _too_large(send, self.limit)


def _too_large_message(limit: int) -> str:
    return f"request body over {limit:,} bytes; send a smaller image or fewer fields"


class _BodyTooLarge(StarletteHTTPException):
    """Raised while a body streams in: a route reading it answers 413 (FastAPI passes HTTP
    exceptions on, where any other error would become a 400)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, _too_large_message(limit))


async def _too_large(send: Send, limit: int) -> None:
    await send_error(send, 413, _too_large_message(limit))


# Scripts and everything else from this server only; styles inline too (plotly.js writes its
# own <style> and style attributes); images from data: and blob: URLs (a chart saved as PNG).
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "worker-src 'self' blob:",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
SECURITY_HEADERS = (
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)


class SecurityHeaders:
    """ASGI middleware: :data:`SECURITY_HEADERS` on every answer, errors included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                given = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in SECURITY_HEADERS if k not in given]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, with_headers)


class HeadAsGet:
    """ASGI middleware: ``HEAD`` answers wherever ``GET`` does, with the same status and
    headers and no body (FastAPI's routes take only the methods they declare)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: dict) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)
