"""The OpenAPI document says what the server does: every error it can answer, in the one body it
sends, and the links a client follows from one answer to the next.

FastAPI documents the answers a route returns; this module adds, on every operation, the
errors that reach it from outside the route (:func:`error_statuses`), each with
:class:`ErrorBody`, the one shape :mod:`alphaloop.server.errors` gives every error. The document
is checked against the running server by schemathesis in the tests (every operation, every
check, and the stateful phase that follows the links declared here), and a client generated
from it runs a session, a validation and a tick.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

_STRICT = ConfigDict(frozen=True, extra="forbid")


class FieldError(BaseModel):
    """One invalid field of a refused request."""

    model_config = _STRICT

    loc: list[str] = Field(description="where: the parameter or body field, then its path")
    msg: str = Field(description="what is wrong with it")


class ErrorBody(BaseModel):
    """Every error the server answers, whoever raised it: a refused request, an unknown route,
    a bad id, a state that forbids the action, a failed job."""

    model_config = _STRICT

    detail: str = Field(description="what went wrong and what to do, in words")
    error: str = Field(description="the error's type (ValidationError, NotFound, ...)")
    exit_code: Literal[1, 2] = Field(
        description="what the command line exits with for the same error: 2 bad usage, 1 a failure"
    )
    http_status: int = Field(ge=400, le=599, description="the answer's status, repeated")
    job_id: int | None = Field(
        default=None, description="the job that failed, when a route started one"
    )
    errors: list[FieldError] | None = Field(
        default=None, description="each invalid field (422 for a refused request)"
    )


WHY: dict[int, str] = {
    400: "the body cannot be read (not UTF-8 text)",
    401: "the API token is missing or wrong (a token is configured: send "
    "'Authorization: Bearer <token>')",
    403: "refused before any route ran: a Host off the allow-list, or a state-changing "
    "request another web site could have sent (no JSON body and no 'X-Alphaloop: 1')",
    404: "no such thing: an unknown id or name, or no journal yet in this home",
    409: "the current state forbids it (something runs, it was done already, a rule of the "
    "book or the library)",
    413: "the request body is too large",
    422: "the request is invalid: ``errors`` names each field at fault",
    500: "a failure of the server or of the work; the server log has the details",
    503: "a service it needs is unavailable (the journal locked for too long, the LLM "
    "endpoint not configured or down): try later",
}

# Routes that never open the journal: no 404 for a missing journal, no 503 for a locked one.
_NO_JOURNAL = frozenset({"/api/health", "/api/env", "/api/knobs", "/api/frontier"})
_MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def api_routes(app: FastAPI) -> list[Any]:
    """Every route of ``app`` as FastAPI resolves it (``path``, ``methods``, ``dependant``,
    ``body_field``): routers included in it are expanded (FastAPI 0.165 keeps them whole)."""
    found = []
    for route in app.routes:
        contexts = getattr(route, "effective_route_contexts", None)
        if contexts is not None:
            found.extend(contexts())
        elif isinstance(route, APIRoute):
            found.append(route)
    return found


def error_statuses(route: Any, method: str) -> set[int]:
    """The errors an operation can answer besides those its route declares itself."""
    statuses = {401, 403, 500}
    if route.dependant.path_params or route.dependant.query_params or route.body_field:
        statuses.add(422)
    if route.dependant.header_params:
        statuses.add(422)
    if route.body_field is not None:
        statuses.add(400)
    if route.body_field is not None or method in _MUTATING:
        statuses.add(413)
    if route.path not in _NO_JOURNAL:
        statuses |= {404, 503}
    if method in _MUTATING:
        statuses.add(409)  # every action checks the state it acts on first
    return statuses


def allowed_methods(app: FastAPI, path: str) -> list[str]:
    """The methods ``app`` answers at ``path`` (its ``Allow`` header for a 405): those of the
    routes written exactly as ``path`` when there are any, else those of the routes whose
    pattern matches it (``/api/charts/interpret`` is not a chart kind)."""
    from starlette.routing import compile_path

    exact: set[str] = set()
    pattern: set[str] = set()
    for route in [*api_routes(app), *app.routes]:
        methods, route_path = getattr(route, "methods", None), getattr(route, "path", None)
        if not methods or not route_path:
            continue
        if route_path == path:
            exact |= methods
        elif compile_path(route_path)[0].match(path):
            pattern |= methods
    found = exact or pattern
    if "GET" in found:
        found.add("HEAD")  # answered wherever GET is (security.HeadAsGet)
    return sorted(found)


class ExactPathMethods:
    """ASGI middleware: a path written out in full names one resource, whose methods are its
    routes' own, even when a route with a parameter would also match it (``GET
    /api/charts/interpret`` is a 405, not a chart of kind "interpret")."""

    def __init__(self, app: Any, api: FastAPI) -> None:
        self.app, self.api = app, api
        self._exact: dict[str, set[str]] | None = None

    def _methods(self, path: str) -> set[str] | None:
        if self._exact is None:
            exact: dict[str, set[str]] = {}
            for route in [*api_routes(self.api), *self.api.routes]:
                methods, route_path = getattr(route, "methods", None), getattr(route, "path", "")
                if methods and route_path and "{" not in route_path:
                    exact.setdefault(route_path, set()).update(methods)
            self._exact = exact
        return self._exact.get(path)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        methods = self._methods(scope["path"]) if scope["type"] == "http" else None
        if methods is not None and scope["method"] not in methods:
            from alphaloop.server.errors import send_error

            allow = ", ".join(allowed_methods(self.api, scope["path"]))
            await send_error(send, 405, "Method Not Allowed", headers={"Allow": allow})
            return
        await self.app(scope, receive, send)


def _error_response(status: int, given: dict[str, Any] | None) -> dict[str, Any]:
    description = (given or {}).get("description") or WHY.get(status, "an error")
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }


def _integers(node: Any) -> None:
    """Integer bounds as integers (FastAPI's document model writes them as floats)."""
    if isinstance(node, dict):
        if node.get("type") == "integer":
            for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                value = node.get(key)
                if isinstance(value, float) and value.is_integer():
                    node[key] = int(value)
        for value in node.values():
            _integers(value)
    elif isinstance(node, list):
        for value in node:
            _integers(value)


# The links a client follows (and schemathesis's stateful phase): from an answer's field to the
# operation that reads or acts on what it names.
LINKS: dict[tuple[str, str, str], dict[str, tuple[str, str, str]]] = {
    ("post", "/api/research", "202"): {
        "GetJob": ("get", "/api/jobs/{job_id}", "$response.body#/job_id"),
        "GetSessionJournal": (
            "get",
            "/api/sessions/{session_id}/journal",
            "$response.body#/session_id",
        ),
        "StopSession": ("post", "/api/research/{session_id}/stop", "$response.body#/session_id"),
    },
    ("post", "/api/train", "202"): {
        "GetJob": ("get", "/api/jobs/{job_id}", "$response.body#/job_id"),
    },
    ("post", "/api/pm/tick", "202"): {
        "GetJob": ("get", "/api/jobs/{job_id}", "$response.body#/job_id"),
    },
    ("post", "/api/sessions/{session_id}/validate", "202"): {
        "GetJob": ("get", "/api/jobs/{job_id}", "$response.body#/job_id"),
    },
    ("post", "/api/schedule/{job}/run", "202"): {
        "GetJob": ("get", "/api/jobs/{job_id}", "$response.body#/job_id"),
    },
    ("put", "/api/sessions/{session_id}/notes", "200"): {
        "GetNote": ("get", "/api/sessions/{session_id}/notes", "$request.path.session_id"),
    },
    ("post", "/api/pm/halt", "200"): {
        "GetBook": ("get", "/api/pm/status", "$response.body#/name"),
        "ResumeBook": ("post", "/api/pm/resume", "$response.body#/name"),
    },
}
_LINK_PARAMETER = {
    "/api/jobs/{job_id}": "job_id",
    "/api/sessions/{session_id}/journal": "session_id",
    "/api/research/{session_id}/stop": "session_id",
    "/api/sessions/{session_id}/notes": "session_id",
    "/api/pm/status": "book",
    "/api/pm/resume": "book",
}


def _links(paths: dict[str, Any]) -> None:
    for (method, path, status), links in LINKS.items():
        response = paths.get(path, {}).get(method, {}).get("responses", {}).get(status)
        if response is None:
            continue
        found = {}
        for name, (to_method, to_path, value) in links.items():
            target = paths.get(to_path, {}).get(to_method)
            if target is None:
                continue
            found[name] = {
                "operationId": target["operationId"],
                "parameters": {_LINK_PARAMETER[to_path]: value},
            }
        response["links"] = found


def build_document(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document of ``app``, with every operation's errors and links declared."""
    doc = get_openapi(
        title=app.title,
        version=app.version,
        summary=app.summary,
        description=app.description,
        routes=app.routes,
    )
    routes = {
        (method.lower(), route.path): route
        for route in api_routes(app)
        if route.include_in_schema
        for method in route.methods
    }
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            route = routes.get((method, path))
            if route is None:
                continue
            responses = operation.setdefault("responses", {})
            declared = {int(s) for s in responses if str(s).isdigit() and int(s) >= 400}
            for status in sorted(declared | error_statuses(route, method.upper())):
                responses[str(status)] = _error_response(status, responses.get(str(status)))
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    _, defs = models_json_schema(
        [(ErrorBody, "serialization")], ref_template="#/components/schemas/{model}"
    )
    schemas.update(defs["$defs"])
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    _links(doc["paths"])
    _integers(doc)
    return doc


def declare_contract(app: FastAPI) -> None:
    """Serves :func:`build_document` as ``app``'s OpenAPI document (built once)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build_document(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


__all__ = [
    "ErrorBody",
    "allowed_methods",
    "api_routes",
    "build_document",
    "declare_contract",
    "error_statuses",
]
