"""The FastAPI application: the REST API under ``/api`` and the page at ``/``.

Every request opens the journal for itself (through the operations layer), so any number of
readers poll while a session's worker writes: SQLite's WAL lets readers read the last commit
without waiting, and writers queue on the busy timeout.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import logging
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from alphaloop.exceptions import (
    USAGE_STATUS,
    AlphaloopError,
    NoJournal,
    exit_code_of,
    http_status_of,
)
from alphaloop.server import (
    routes_dashboard,
    routes_export,
    routes_flywheel,
    routes_frontier,
    routes_jobs,
    routes_loop,
    routes_research,
    routes_walks,
)
from alphaloop.server.answers import Health
from alphaloop.server.contract import ExactPathMethods, allowed_methods, declare_contract
from alphaloop.server.errors import error_body
from alphaloop.server.guard import RequestGuard
from alphaloop.server.idempotency import Idempotency
from alphaloop.server.security import BodyLimit, HeadAsGet, SecurityHeaders, check_token
from alphaloop.settings import Settings

logger = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"


def plotly_js() -> Path:
    """plotly.js as the installed ``plotly`` package ships it: the page needs no network."""
    spec = importlib.util.find_spec("plotly")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / "package_data" / "plotly.min.js"


# The page's files: revalidated on every load (a 304 when unchanged, so an upgraded page is
# picked up at once), and plotly.js under an address naming its version, kept for a year.
REVALIDATE = "no-cache"
IMMUTABLE = "public, max-age=31536000, immutable"


def plotly_version() -> str:
    return importlib.metadata.version("plotly")


class RevalidatedFiles(StaticFiles):
    """Static files with ``Cache-Control: no-cache``: the browser keeps them and asks with
    their ETag each time, and StaticFiles answers 304 when nothing changed."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers["Cache-Control"] = REVALIDATE
        return response


def _index_html() -> bytes:
    """index.html with plotly.js under its versioned address."""
    text = (STATIC / "index.html").read_text(encoding="utf-8")
    return text.replace(
        'href="/plotly.min.js"', f'href="/plotly.min.js?v={plotly_version()}"'
    ).encode()


def _not_modified(request: Request, etag: str) -> bool:
    given = request.headers.get("if-none-match", "")
    return etag in [tag.strip().removeprefix("W/") for tag in given.split(",")]


def _validators(headers: Any) -> dict[str, str]:
    return {k: headers[k] for k in ("etag", "cache-control", "last-modified") if k in headers}


def _cached(request: Request, body: bytes, media_type: str, cache: str) -> Response:
    """``body`` with an ETag of its content; 304 when the browser already has it."""
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    headers = {"ETag": etag, "Cache-Control": cache}
    if _not_modified(request, etag):
        return Response(status_code=304, headers=headers)
    return Response(content=body, media_type=media_type, headers=headers)


def _message(err: Exception) -> str:
    if isinstance(err, NoJournal):
        return (
            "no journal yet in this home: start a research session (POST /api/research) or a "
            "manual run (POST /api/train) first"
        )
    return str(err)


async def _alphaloop_error(request: Request, err: Exception) -> JSONResponse:
    status = http_status_of(err)  # the one error table (alphaloop.exceptions)
    if status >= 500:
        logger.error("%s %s: %r", request.method, request.url.path, err)
    body = error_body(status, _message(err), type(err).__name__, exit_code_of(err))
    return JSONResponse(body, status_code=status)


async def _http_error(request: Request, err: Exception) -> JSONResponse:
    """An error a route or the framework raised by status (401, 404 no such route, 405...)."""
    assert isinstance(err, StarletteHTTPException)
    detail = err.detail if isinstance(err.detail, str) else str(err.detail)
    headers = dict(err.headers or {})
    if err.status_code == 405:  # every method of the path, not only the first route's
        headers["Allow"] = ", ".join(allowed_methods(request.app, request.url.path))
    return JSONResponse(
        error_body(err.status_code, detail), status_code=err.status_code, headers=headers
    )


async def _bug(request: Request, err: Exception) -> JSONResponse:
    """Anything else is a bug: logged with its traceback, answered as JSON all the same."""
    logger.error("%s %s failed", request.method, request.url.path, exc_info=err)
    return JSONResponse(
        error_body(
            500,
            f"internal error ({type(err).__name__}); the server log has the details",
            type(err).__name__,
        ),
        status_code=500,
    )


async def _validation_error(request: Request, err: Exception) -> JSONResponse:
    errors = err.errors() if isinstance(err, RequestValidationError | ValidationError) else []
    parts = []
    for e in errors[:5]:
        where = ".".join(str(p) for p in e.get("loc", ()) if p != "body")
        # "Value error, " is pydantic's prefix for a rule of ours: the rule speaks for itself.
        parts.append(f"{where or 'body'}: {str(e.get('msg', '')).removeprefix('Value error, ')}")
    message = "invalid request: " + "; ".join(parts) if parts else str(err)
    body = error_body(USAGE_STATUS, message, "ValidationError")
    return JSONResponse(
        {**body, "errors": [jsonable_error(e) for e in errors[:20]]}, status_code=USAGE_STATUS
    )


def jsonable_error(e: dict[str, Any]) -> dict[str, Any]:
    return {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))}


def answer_errors_as_json(app: FastAPI) -> None:
    """Every error ``app`` answers takes the one shape (``alphaloop.server.errors``)."""
    app.add_exception_handler(AlphaloopError, _alphaloop_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _bug)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(ValidationError, _validation_error)


def create_app(
    settings: Settings, *, auth_reads: bool = False, bind_host: str | None = None
) -> FastAPI:
    """The application for one alphaloop home.

    Args:
        settings: the home, the endpoint, ``api_token`` and ``allowed_hosts``.
        auth_reads: ask for the token on reads too (a non-loopback bind).
        bind_host: the address the server binds (default loopback): a ``Host`` it answers to.
    """
    app = FastAPI(
        title="alphaloop",
        summary="Goal-driven autoresearch on portfolio strategies: sessions, manual training, "
        "charts, the policy library, the preference flywheel and the scheduler.",
        # Swagger UI and ReDoc load their scripts from a CDN: off. /docs is a reference page
        # of our own, drawn from /openapi.json (see below).
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.auth_reads = auth_reads
    app.state.idempotency = Idempotency()
    app.add_middleware(ExactPathMethods, api=app)
    app.add_middleware(BodyLimit)
    app.add_middleware(HeadAsGet)
    app.add_middleware(SecurityHeaders)
    app.add_middleware(RequestGuard, settings=settings, bind_host=bind_host)  # the outermost
    answer_errors_as_json(app)
    # The token guards the API; the page's files carry no data and are served without it.
    token = [Depends(check_token)]
    for router in (
        routes_research.router,
        routes_loop.router,
        routes_jobs.router,
        routes_frontier.router,
        routes_dashboard.router,
        routes_export.router,
        routes_walks.router,
        *routes_flywheel.routers(),
    ):
        app.include_router(router, dependencies=token)

    @app.get("/api/health", response_model=Health, tags=["setup"], dependencies=token)
    def health(request: Request) -> Health:
        home = request.app.state.settings
        return Health(ok=True, home=home.home.name, journal=home.journal_path.exists())

    _add_page(app)
    declare_contract(app)
    return app


def _add_page(app: FastAPI) -> None:
    """The page's routes and files, on the app itself: a path the page does not serve is the
    app's 404, and a method a route does not take its 405 with ``Allow``."""
    app.mount("/static", RevalidatedFiles(directory=STATIC), name="static")
    index_html = _index_html()
    docs_html = (STATIC / "docs.html").read_bytes()

    @app.get("/", include_in_schema=False)
    def index(request: Request) -> Response:
        return _cached(request, index_html, "text/html; charset=utf-8", REVALIDATE)

    @app.get("/docs", include_in_schema=False)
    def docs(request: Request) -> Response:
        return _cached(request, docs_html, "text/html; charset=utf-8", REVALIDATE)

    @app.get("/plotly.min.js", include_in_schema=False)
    def plotly(request: Request, v: str | None = None) -> Response:
        # The versioned address the page uses never changes content: cached for good.
        cache = IMMUTABLE if v == plotly_version() else REVALIDATE
        path = plotly_js()
        response = FileResponse(path, media_type="application/javascript", stat_result=path.stat())
        response.headers["Cache-Control"] = cache
        if _not_modified(request, response.headers["etag"]):
            return Response(status_code=304, headers=_validators(response.headers))
        return response
