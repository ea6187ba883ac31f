"""Requests from other web sites: refused before any route runs.

A page the user visits elsewhere can make the browser send requests to the loopback server:

- **Cross-site requests (CSRF).** A plain ``<form>`` POST, or ``fetch`` with a ``text/plain``
  body, reaches a server without asking it first. So every state-changing request (any method
  but GET, HEAD and OPTIONS) must carry a JSON body (``Content-Type: application/json``) or the
  header ``X-Alphaloop: 1``: a browser sends neither cross-site without a CORS preflight, which
  this server never grants. Where the browser says where the request comes from (``Origin``,
  ``Sec-Fetch-Site``) it must be this server itself. The token, when one is configured, is
  asked for on top (``security.check_token``).
- **DNS rebinding.** A name the attacker controls is pointed at 127.0.0.1 after the page has
  loaded, making the page "same-origin" with this server. The browser still sends the
  attacker's name in ``Host``, so every request (reads too) must name a host on the allow-list:
  loopback names and addresses, the address the server binds, and ``ALPHALOOP_ALLOWED_HOSTS``.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any
from urllib.parse import urlsplit

from alphaloop.server.errors import send_error
from alphaloop.server.security import is_loopback
from alphaloop.settings import Settings

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
HEADER = "x-alphaloop"  # the custom header the page sends on every call
_WILDCARDS = {"0.0.0.0", "::", ""}
_OWN_FETCH_SITES = {"same-origin", "none"}  # "none": typed in the address bar, a bookmark
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def host_name(host_header: str) -> str:
    """The name in a ``Host`` header, without its port, brackets or final dot, lower-cased."""
    host = host_header.strip().lower()
    if host.startswith("["):  # [::1]:8000
        return host[1 : host.find("]")] if "]" in host else host
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.rstrip(".")


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostPolicy:
    """Which ``Host`` names this server answers."""

    def __init__(self, bind_host: str | None, extra: tuple[str, ...]) -> None:
        bound = host_name(bind_host or "127.0.0.1")
        self.any_host = "*" in extra
        # Bound to every address: clients reach it by any of the machine's addresses (an IP
        # literal cannot be rebound, it is no name) or by the machine's own names.
        self.any_ip = bound in _WILDCARDS
        names = {bound, *extra}
        if self.any_ip:
            names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
        self.names = frozenset(names)

    def allows(self, host_header: str | None) -> bool:
        if self.any_host:
            return True
        if not host_header:
            return False
        name = host_name(host_header)
        if is_loopback(name) or name in self.names:
            return True
        return self.any_ip and _is_ip(name)


def _same_origin(origin: str, host_header: str, scheme: str) -> bool:
    """Whether ``Origin`` names this very server (the scheme and host:port it was asked on)."""
    parts = urlsplit(origin.strip().lower())
    if parts.scheme not in _DEFAULT_PORTS or not parts.netloc:
        return False  # "null" (a sandboxed frame, a file:// page) or junk
    default = _DEFAULT_PORTS[parts.scheme]

    def canon(netloc: str) -> str:
        return netloc.removesuffix(":" + default)

    return parts.scheme == scheme and canon(parts.netloc) == canon(host_header.strip().lower())


def mutation_refusal(headers: dict[str, str], scheme: str) -> str | None:
    """Why a state-changing request is refused (None: it may go on to the token check)."""
    media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/json" and headers.get(HEADER, "").strip() != "1":
        return (
            "a request that changes state needs a JSON body (Content-Type: application/json) "
            "or the header 'X-Alphaloop: 1'; a plain form or text post from another web page "
            "is refused"
        )
    origin = headers.get("origin")
    if origin is not None and not _same_origin(origin, headers.get("host", ""), scheme):
        return f"cross-site request refused: Origin {origin[:100]!r} is not this server"
    site = headers.get("sec-fetch-site")
    if site is not None and site.strip().lower() not in _OWN_FETCH_SITES:
        return f"cross-site request refused: Sec-Fetch-Site is {site[:40]!r}, not same-origin"
    return None


def _headers(scope: dict[str, Any]) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


class RequestGuard:
    """ASGI middleware: 403 for a ``Host`` off the allow-list (any request), and for a
    state-changing request another site could have sent (see the module's docstring)."""

    def __init__(self, app: Any, settings: Settings, bind_host: str | None = None) -> None:
        self.app = app
        self.hosts = HostPolicy(bind_host, settings.extra_hosts)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        if not self.hosts.allows(headers.get("host")):
            host = headers.get("host", "")[:100]
            await send_error(
                send,
                403,
                f"host {host!r} is not one this server answers to (loopback, the address it "
                "binds, or ALPHALOOP_ALLOWED_HOSTS); a web page that renamed 127.0.0.1 is "
                "refused",
            )
            return
        if scope["method"] not in SAFE_METHODS:
            why = mutation_refusal(headers, scope.get("scheme", "http"))
            if why is not None:
                await send_error(send, 403, why)
                return
        await self.app(scope, receive, send)


__all__ = ["HEADER", "HostPolicy", "RequestGuard", "host_name", "mutation_refusal"]
