"""The API keeps the contract its OpenAPI document states, and its page cannot be abused: one
error body declared on every operation with the statuses it answers, the enums and ranges the
server enforces in the schema, 405 with ``Allow``, ``HEAD`` wherever ``GET``, 413 for any
oversized body, headers that refuse framing and sniffing, error bodies that name no file."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from alphaloop.journal import Journal
from alphaloop.server import create_app
from alphaloop.server.security import MAX_BODY_BYTES
from alphaloop.settings import Settings

from .helpers import PAGE, live_server, new_session

ERROR_FIELDS = {"detail", "error", "exit_code", "http_status"}


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as c:
        yield c


def _schema(client: TestClient) -> dict[str, Any]:
    return client.get("/openapi.json").json()


def test_every_operation_declares_its_errors_with_the_one_body(client: TestClient) -> None:
    doc = _schema(client)
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    error = doc["components"]["schemas"]["ErrorBody"]
    assert ERROR_FIELDS <= set(error["required"])
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            statuses = {int(s) for s in op["responses"] if s.isdigit()}
            assert {401, 403, 500} <= statuses, (method, path)
            params = op.get("parameters") or op.get("requestBody")
            assert (422 in statuses) == bool(params), (method, path, statuses)
            if "{" in path:
                assert 404 in statuses, (method, path)
            for status in statuses - {200, 201, 202, 204}:
                body = op["responses"][str(status)]["content"]["application/json"]["schema"]
                assert body == {"$ref": "#/components/schemas/ErrorBody"}, (method, path, status)


def _named(schema: dict[str, Any]) -> bool:
    """A schema that names its model (``$ref``), or a union of such."""
    if "$ref" in schema:
        return True
    options = schema.get("anyOf") or schema.get("oneOf") or []
    return bool(options) and all(_named(o) for o in options)


def test_every_operation_declares_what_it_answers(client: TestClient) -> None:
    """A client reads each success answer's fields from the document: a JSON answer names its
    model, never a bare object; a file or a CSV names its media type."""
    untyped = []
    for path, methods in _schema(client)["paths"].items():
        for method, op in methods.items():
            ok = next(op["responses"][c] for c in sorted(op["responses"]) if c.startswith("2"))
            content = ok.get("content", {})
            json_schema = content.get("application/json", {}).get("schema")
            declared = _named(json_schema) if json_schema is not None else bool(content)
            if not declared:
                untyped.append(f"{method.upper()} {path}")
    assert untyped == []


def test_the_schema_holds_the_servers_enums_and_ranges(client: TestClient) -> None:
    doc = _schema(client)
    text = client.get("/openapi.json").text
    assert "9223372036854775807" not in text and "e+18" not in text  # no float 2^63 maximum
    schemas = doc["components"]["schemas"]
    research = schemas["ResearchRequest"]["properties"]
    assert research["metric"]["enum"] == ["sharpe", "sortino", "calmar", "return"]
    assert research["proposer"]["enum"] == ["auto", "tpe", "random", "llm"]
    assert research["budget"]["maximum"] == 100_000 and isinstance(
        research["budget"]["maximum"], int
    )
    tick = schemas["TickRequest"]["properties"]["date"]
    assert {"type": "string", "format": "date"} in tick["anyOf"]  # a real date, not a pattern
    knobs = schemas["TrainRequest"]["properties"]["knobs"]["propertyNames"]["enum"]
    assert len(knobs) == 16 and "learning_rate" in knobs
    chart = doc["paths"]["/api/charts/{kind}"]["get"]["parameters"][0]["schema"]
    assert "research_progress" in chart["enum"]
    run = doc["paths"]["/api/schedule/{job}/run"]["post"]["parameters"][0]["schema"]
    assert set(run["enum"]) >= {"prefs_extract", "dpo_check", "retrain"}
    frontier = {p["name"]: p["schema"] for p in doc["paths"]["/api/frontier"]["get"]["parameters"]}
    assert (frontier["assets"]["minimum"], frontier["assets"]["maximum"]) == (5, 20)


def test_what_the_server_refuses_is_what_the_schema_says(client: TestClient) -> None:
    r = client.post("/api/pm/tick", json={"date": "2022-13-45"})
    assert r.status_code == 422 and ERROR_FIELDS <= set(r.json())
    assert r.json()["errors"][0]["loc"] == ["body", "date"]
    assert client.get("/api/frontier", params={"assets": 21}).status_code == 422
    assert client.get("/api/frontier", params={"assets": 4}).status_code == 422


def test_unsupported_methods_answer_405_with_allow(client: TestClient) -> None:
    for method, path, allowed in (
        ("DELETE", "/api/sessions", "GET"),
        ("PUT", "/api/pm/tick", "POST"),
        ("POST", "/", "GET"),
    ):
        r = client.request(method, path, headers=PAGE)
        assert r.status_code == 405, (method, path, r.status_code)
        assert allowed in r.headers["allow"] and r.json()["http_status"] == 405
    assert client.get("/api/nothing-here").status_code == 404


def test_head_answers_wherever_get_does(client: TestClient) -> None:
    from alphaloop.server.app import STATIC

    script = next(p.name for p in sorted(STATIC.glob("*.js")))
    for path in ("/", "/docs", "/api/health", "/api/knobs", "/openapi.json", f"/static/{script}"):
        got, head = client.get(path), client.head(path)
        assert head.status_code == got.status_code == 200, path
        assert head.content == b"" and head.headers["content-type"] == got.headers["content-type"]


def test_every_answer_refuses_framing_and_sniffing(client: TestClient) -> None:
    for r in (client.get("/"), client.get("/api/health"), client.get("/api/sessions/x/journal")):
        assert r.headers["x-frame-options"] == "DENY"
        assert r.headers["x-content-type-options"] == "nosniff"
        policy = dict(
            part.strip().split(" ", 1) for part in r.headers["content-security-policy"].split(";")
        )
        assert policy["frame-ancestors"] == "'none'"
        assert policy["script-src"] == "'self'"  # no inline script, no eval, no other origin
        assert "unsafe" not in policy["default-src"]


def test_the_page_has_no_inline_script(client: TestClient) -> None:
    """What the policy would block: an inline script or handler on the page."""
    for path in ("/", "/docs"):
        html = client.get(path).text
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), path
        assert not re.search(r"\son[a-z]+\s*=", html), path


def test_an_oversized_body_is_413_chunked_or_not(settings: Settings) -> None:
    big = b'{"goal": "' + b"x" * (MAX_BODY_BYTES + 10) + b'"}'

    def chunks() -> Iterator[bytes]:
        for i in range(0, len(big), 65536):
            yield big[i : i + 65536]

    with live_server(settings) as base:
        sized = httpx.post(f"{base}/api/research", content=big, headers=PAGE)
        chunked = httpx.post(f"{base}/api/research", content=chunks(), headers=PAGE)
    assert "content-length" not in chunked.request.headers  # sent chunked
    for r in (sized, chunked):
        assert r.status_code == 413 and r.json()["http_status"] == 413
    assert not settings.journal_path.exists()


def test_error_bodies_name_no_file_path(settings: Settings) -> None:
    with Journal(settings.journal_path) as j:
        sid = new_session(j)
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        answers = [
            client.get("/api/sessions/s-20000101-000000-abcd/journal"),
            client.get("/api/jobs/5"),
            client.post("/api/research/s-20000101-000000-abcd/resume", headers=PAGE),
        ]
    home = str(settings.home.absolute())
    for r in answers:
        assert r.status_code == 404, r.text
        assert home not in r.text and "/tmp" not in r.text and sid not in r.text, r.text


def test_the_llm_proposer_without_an_endpoint_is_422_naming_the_setting(
    settings: Settings,
) -> None:
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        r = client.post("/api/research", json={"goal": "g", "proposer": "llm", "data": "synthetic"})
    assert r.status_code == 422 and "ALPHALOOP_LLM_BASE_URL" in r.json()["detail"]
    assert not settings.journal_path.exists()  # nothing journaled, no worker started


def test_an_unknown_metric_is_422_with_nothing_written(
    client: TestClient, settings: Settings
) -> None:
    before = sorted(os.listdir(settings.home)) if settings.home.exists() else []
    r = client.post("/api/research", json={"goal": "g", "metric": "alpha"})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "metric"]
    after = sorted(os.listdir(settings.home)) if settings.home.exists() else []
    assert after == before and not settings.journal_path.exists()


def test_actions_on_an_unknown_book_are_refused_and_create_none(settings: Settings) -> None:
    with Journal(settings.journal_path) as j:
        j.books.create("main", "paper", 1000.0)
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        halt = client.post("/api/pm/halt", json={"why": "x", "book": "junk"})
        resume = client.post("/api/pm/resume", params={"book": "junk"}, headers=PAGE)
        status = client.get("/api/pm/status", params={"book": "junk"})
    assert [r.status_code for r in (halt, resume, status)] == [404, 404, 404]
    assert "no book named 'junk'" in halt.json()["detail"]
    with Journal(settings.journal_path) as j:
        assert [b.name for b in j.books.list()] == ["main"]
