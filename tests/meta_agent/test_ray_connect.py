"""A Ray address that does not answer fails the session within the connect timeout, naming the
address and what to do, before anything is journaled: from the command line, the REST API (a
failed job with that message) and the chat tools; ``RAY_ADDRESS`` is read as Ray's own tools
read it. No cluster is needed: the addresses are a closed port and a port that accepts TCP
connections and never speaks."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.journal import Journal
from alphaloop.placement.cluster import check_address, resolve_address
from alphaloop.settings import Settings, get_settings
from alphaloop.tools import TOOLS, ToolContext, call_tool

pytest.importorskip("ray", reason="Ray is not installed (pip install 'alphaloop[ray]')")

SESSION = ["--mode", "cufolio_only", "--budget", "2", "--data", "synthetic", "--noise-seeds", "2"]


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts TCP connections (the kernel's backlog) and never answers:
    what a stale head, a firewall that lets the handshake through, or a wrong service looks
    like to a client."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield int(s.getsockname()[1])


def nothing_journaled(settings: Settings) -> bool:
    if not settings.journal_path.exists():
        return True
    with Journal(settings.journal_path) as j:
        return j.sessions.list() == [] and j.jobs.list() == []


def test_a_closed_port_fails_at_once_naming_the_address(
    settings: Settings, closed_port: int
) -> None:
    address = f"127.0.0.1:{closed_port}"
    started = time.monotonic()
    result = CliRunner().invoke(app, ["research", "g", *SESSION, "--ray-address", address])
    took = time.monotonic() - started
    assert result.exit_code == 1, result.output
    assert f"cannot reach the Ray cluster at {address}" in result.stderr
    assert "connection refused" in result.stderr and "--ray-address local" in result.stderr
    assert took < 30  # refused is known at once: no wait for the timeout
    assert nothing_journaled(settings)


def test_a_silent_address_fails_within_the_connect_timeout(
    settings: Settings, silent_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALPHALOOP_RAY_CONNECT_TIMEOUT", "2")
    address = f"127.0.0.1:{silent_port}"
    started = time.monotonic()
    result = CliRunner().invoke(
        app, ["research", "g", *SESSION, "--ray-address", address, "--json"]
    )
    took = time.monotonic() - started
    assert result.exit_code == 1, result.output
    assert result.stdout == ""  # --json: an error prints no document
    assert f"cannot reach the Ray cluster at {address}" in result.stderr
    assert "within 2 s" in result.stderr and "ALPHALOOP_RAY_CONNECT_TIMEOUT" in result.stderr
    assert 2 <= took < 20
    assert nothing_journaled(settings)


def test_ray_address_is_read_as_rays_tools_read_it(
    settings: Settings, closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    address = f"127.0.0.1:{closed_port}"
    monkeypatch.setenv("RAY_ADDRESS", address)
    env = get_settings()
    assert resolve_address(None, env) == address  # no address named: RAY_ADDRESS
    assert resolve_address("local", env) == "local"  # local wins over it
    assert resolve_address("ray://head:10001", env) == "ray://head:10001"
    result = CliRunner().invoke(app, ["research", "g", *SESSION])
    assert result.exit_code == 1 and address in result.stderr
    assert nothing_journaled(settings)
    monkeypatch.setenv("RAY_ADDRESS", "head")  # no port
    with pytest.raises(ValueError, match="RAY_ADDRESS: expected local, auto, HOST:PORT"):
        resolve_address(None, get_settings())


@pytest.mark.parametrize("bad", ["head", "head:", "head:port", "ray://head", "head:70000", ""])
def test_an_address_that_names_no_place_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="expected local, auto, HOST:PORT or ray://HOST:PORT"):
        check_address(bad)


def test_a_bad_address_flag_exits_2_naming_it(settings: Settings) -> None:
    result = CliRunner().invoke(app, ["research", "g", *SESSION, "--ray-address", "head"])
    moved = CliRunner().invoke(app, ["research", "resume", "s-1", "--ray-address", "head:"])
    assert moved.exit_code == 2 and "expected local, auto, HOST:PORT" in moved.stderr
    assert result.exit_code == 2 and "ray_address" in result.stderr.replace("-", "_")
    assert "expected local, auto, HOST:PORT or ray://HOST:PORT" in result.stderr
    assert nothing_journaled(settings)


def test_the_chat_tool_reports_the_unreachable_cluster(
    settings: Settings, closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{closed_port}")
    args = {"goal": "g", "data": "synthetic", "budget": 2, "noise_seeds": 2}
    result = call_tool(TOOLS, "start_research", json.dumps(args), ToolContext(get_settings()))
    assert not result.ok and result.data["status"] == 503
    assert f"cannot reach the Ray cluster at 127.0.0.1:{closed_port}" in result.data["error"]
    assert nothing_journaled(settings)


@pytest.mark.slow
def test_the_api_answers_the_unreachable_cluster_with_the_failed_job(
    settings: Settings, closed_port: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tests.server.helpers import live_server

    address = f"127.0.0.1:{closed_port}"
    monkeypatch.setenv("RAY_ADDRESS", address)  # the job's worker process reads it
    body = {"goal": "g", "data": "synthetic", "budget": 2, "noise_seeds": 2}
    with live_server(settings) as base:
        r = httpx.post(f"{base}/api/research", json=body, timeout=90)
        job = httpx.get(f"{base}/api/jobs/{r.json()['job_id']}").json()
        sessions = httpx.get(f"{base}/api/sessions").json()
    assert r.status_code == 503, r.text
    assert r.json()["error"] == "Unavailable" and address in r.json()["detail"]
    assert job["status"] == "failed" and job["session_id"] is None
    assert job["error"]["message"] == r.json()["detail"]
    assert sessions["items"] == []  # no empty session listed as "interrupted, resume it"
