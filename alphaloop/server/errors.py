"""The one shape of every error the server answers, whoever raises it.

``{"detail": message, "error": type, "exit_code": code, "http_status": status}``: the fields of
a failed job's journaled error (``alphaloop.ops.jobs.JobError``: type, message, exit code, HTTP
status) under the API's names, so a client reads a refused request, an unknown route, a bad id
and a failed job the same way. ``exit_code`` is what the command line exits with for the same
error (2 bad usage, 1 a failure; :mod:`alphaloop.exceptions`).
"""

from __future__ import annotations

import http
import json
import re
from typing import Any

from alphaloop.exceptions import EXIT_FAILURE, EXIT_USAGE, without_paths

# Answers a client caused: the command line's "bad usage".
_USAGE_BELOW = 500


# The ids of other sessions a "no session" message lists for a person at a terminal.
_RECENT_IDS = re.compile(r";\s*recent sessions: [^;]*")


def public_message(message: str) -> str:
    """``message`` as a client may read it: file paths cut to their last part, and no list of
    other sessions' ids."""
    message = _RECENT_IDS.sub("; GET /api/sessions lists the sessions", message)
    return without_paths(message)


def error_name(status: int) -> str:
    """``NotFound`` for 404, ``Forbidden`` for 403...: the type of an error with no class."""
    try:
        phrase = http.HTTPStatus(status).phrase
    except ValueError:
        return "HTTPError"
    return "".join(w.capitalize() for w in phrase.replace("-", " ").split())


def error_body(
    status: int, detail: str, error: str | None = None, exit_code: int | None = None, **extra: Any
) -> dict[str, Any]:
    """The JSON of an error answer (``extra``: further fields, e.g. ``job_id``)."""
    if exit_code is None:
        exit_code = EXIT_USAGE if status < _USAGE_BELOW else EXIT_FAILURE
    return {
        "detail": public_message(detail),
        "error": error or error_name(status),
        "exit_code": exit_code,
        "http_status": status,
        **extra,
    }


async def send_error(
    send: Any,
    status: int,
    detail: str,
    error: str | None = None,
    headers: dict[str, str] | None = None,
) -> None:
    """Answers an error from ASGI middleware (before any route runs)."""
    body = json.dumps(error_body(status, detail, error)).encode()
    extra = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
