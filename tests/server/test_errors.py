"""Every error the server answers is JSON of one shape (``alphaloop.server.errors``): bad ids of
every route read from the route table, unknown routes and methods, oversized and malformed
bodies, refused requests and bugs. Never a 500 for what a client sent, never plain text."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import typing
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute

from alphaloop import server
from alphaloop.journal import Journal
from alphaloop.server import create_app
from alphaloop.settings import Settings

from .helpers import PAGE, add_trials, api_routes, live_server, new_session

HUGE = str(10**30)
SID = "s-20000101-000000-abcd"


def assert_error(r: httpx.Response, *statuses: int) -> dict[str, Any]:
    """``r`` is an error of one of ``statuses`` in the one shape."""
    assert r.status_code in statuses, (r.request.url, r.status_code, r.text)
    assert r.headers["content-type"].startswith("application/json"), r.headers
    body = r.json()
    assert isinstance(body["detail"], str) and body["detail"], body
    assert isinstance(body["error"], str) and body["error"], body
    assert body["http_status"] == r.status_code, body
    assert body["exit_code"] == (2 if r.status_code < 500 else 1), body
    return body


def _is_int(field: Any) -> bool:
    annotation = field.field_info.annotation
    return annotation is int or int in typing.get_args(annotation)


def _fill(path: str, names: dict[str, str]) -> str:
    return path.format(**{k: names.get(k, "x") for k in _params(path)})


def _params(path: str) -> list[str]:
    return [p.split("}")[0] for p in path.split("{")[1:]]


@pytest.fixture
def home(settings: Settings) -> Settings:
    with Journal(settings.journal_path) as j:
        sid = new_session(j)
        add_trials(j, sid, 3)
        j.sessions.update(sid, status="finished", owner_pid=None)
    return settings


def test_out_of_range_and_wrongly_typed_ids_of_every_route(home: Settings) -> None:
    app = create_app(home)
    valid = {"session_id": SID, "policy_id": "1", "decision_id": "1", "job_id": "1",
             "job": "retrain", "kind": "research_progress"}  # fmt: skip
    checked = 0
    with live_server(home, app=app) as base:
        for route in api_routes(app):
            method = sorted(route.methods)[0]
            for field in route.dependant.path_params:
                bad_values = [HUGE, "-1", "1.5", "abc"] if _is_int(field) else ["x" * 5000, "%00"]
                for bad in bad_values:
                    url = base + _fill(route.path, {**valid, field.name: bad})
                    r = httpx.request(method, url, headers=PAGE, json={})
                    assert_error(r, 404, 422)
                    checked += 1
            for field in route.dependant.query_params:
                if not _is_int(field):
                    continue
                url = base + _fill(route.path, valid)
                for bad in (HUGE, "-1", "abc"):
                    r = httpx.request(method, url, params={field.name: bad}, headers=PAGE, json={})
                    assert_error(r, 404, 422)
                    checked += 1
    assert checked > 40  # ids of policies, decisions, jobs; every cursor


def test_unknown_routes_methods_and_bodies_answer_json(home: Settings) -> None:
    with live_server(home) as base:
        assert_error(httpx.get(f"{base}/api/nope"), 404)
        assert_error(httpx.get(f"{base}/static/nope.js"), 404)
        # a method no route has falls through to the page, which has no such file
        assert_error(httpx.delete(f"{base}/api/sessions", headers=PAGE), 404, 405)
        assert_error(httpx.put(f"{base}/api/research", json={"goal": "x"}), 404, 405)
        big = {"goal": "x" * (5 * 1024 * 1024)}
        assert_error(httpx.post(f"{base}/api/research", json=big), 413)
        bad_json = httpx.post(
            f"{base}/api/research",
            content=b"{not json",
            headers={"content-type": "application/json"},
        )
        assert_error(bad_json, 422)
        assert_error(httpx.post(f"{base}/api/research", json=[1, 2]), 422)
        assert_error(httpx.post(f"{base}/api/research", json={"goal": 5, "budget": "many"}), 422)
        assert_error(httpx.post(f"{base}/api/pm/halt", json={"why": "x", "book": "../etc"}), 422)
        err = assert_error(httpx.get(f"{base}/api/sessions/{SID}/journal"), 404)
        assert err["error"] == "NotFound"
        assert_error(httpx.post(f"{base}/api/research", content=b"goal=x"), 403)
        assert_error(httpx.get(f"{base}/api/charts/pie"), 422)


def test_a_bug_is_a_json_500(home: Settings) -> None:
    app = create_app(home)

    def broken() -> None:
        raise RuntimeError("a bug")

    app.router.routes.insert(0, APIRoute("/api/broken", broken, methods=["GET"]))
    with live_server(home, app=app) as base:
        err = assert_error(httpx.get(f"{base}/api/broken"), 500)
        assert err["error"] == "RuntimeError" and "a bug" not in err["detail"]


def test_docs_are_served_from_this_server_alone(home: Settings) -> None:
    with live_server(home) as base:
        page = httpx.get(f"{base}/docs")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        sources = [
            part.split('"')[1]
            for part in page.text.split("src=")[1:] + page.text.split("href=")[1:]
        ]
        assert sources and all(s.startswith("/") for s in sources), sources
        assert "cdn" not in page.text.lower()
        assert httpx.get(f"{base}/static/docs.js").status_code == 200
        schema = httpx.get(f"{base}/openapi.json").json()
        assert "/api/research" in schema["paths"]
        assert_error(httpx.get(f"{base}/redoc"), 404)
        assert_error(httpx.get(f"{base}/docs/oauth2-redirect"), 404)


def test_no_route_chooses_an_http_status_for_a_rule() -> None:
    """A refused request is an error of the table (alphaloop.exceptions), raised by ops: the
    routes raise no HTTPException, so a rule and its status are declared once."""
    routes = sorted(Path(server.__file__).parent.glob("routes_*.py"))
    assert len(routes) >= 8
    raising = [p.name for p in routes if "HTTPException" in p.read_text(encoding="utf-8")]
    assert raising == []


def test_a_route_module_whose_operations_cannot_import_stops_the_server() -> None:
    """The flywheel's routes import their operations plainly: a missing or misspelt module is
    an ImportError when the app is built, not a route quietly left out."""
    code = (
        "import sys; sys.modules['alphaloop.ops.dpo'] = None\n"
        "from alphaloop.server import create_app\n"
        "from alphaloop.settings import Settings\n"
        "app = create_app(Settings(home=sys.argv[1]))\n"
        "print(sorted(r.path for r in app.routes if '/dpo/' in r.path))\n"
    )
    with tempfile.TemporaryDirectory() as home:
        done = subprocess.run(
            [sys.executable, "-c", code, home], capture_output=True, text=True, timeout=120
        )
    assert done.returncode != 0 and "alphaloop.ops.dpo" in done.stderr, done.stdout
