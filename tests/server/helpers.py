"""A live uvicorn server on 127.0.0.1 (in a thread, or a subprocess) and journal factories."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from alphaloop.journal import Journal
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.server import create_app
from alphaloop.settings import Settings

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextmanager
def page_at(
    base: str, height: int = 1600, view: str = "", **options: Any
) -> Iterator[tuple[Any, list[str]]]:
    """The page served at ``base`` in the system chromium, 1280 px wide, opened at ``view``
    (an address such as ``#/lab``; default: the sessions), and the errors its scripts raise
    (the caller asserts there were none, after the block)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": height}, **options)
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(base + "/" + view)
            yield page, errors
        finally:
            browser.close()


def open_page(browser: Any, width: int, height: int = 900) -> tuple[Any, list[str]]:
    """A new page of ``browser`` ``width`` px wide, and the list its script errors and console
    errors are put in (each with the address it was at)."""
    page = browser.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(f"{page.url}: {e}"))
    page.on(
        "console", lambda m: errors.append(f"{page.url}: {m.text}") if m.type == "error" else None
    )
    return page, errors


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def live_server(
    settings: Settings, *, auth_reads: bool = False, app: Any | None = None
) -> Iterator[str]:
    """The app (default: ``create_app(settings)``) served by a real uvicorn on a free loopback
    port, in a thread."""
    port = free_port()
    app = app if app is not None else create_app(settings, auth_reads=auth_reads)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join(10)


@contextmanager
def serve_subprocess(home: Path, extra_env: dict[str, str] | None = None) -> Iterator[str]:
    """``python -m alphaloop serve`` in a subprocess on a free port."""
    port = free_port()
    env = {**os.environ, "ALPHALOOP_HOME": str(home), **(extra_env or {})}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    proc = subprocess.Popen(
        [sys.executable, "-m", "alphaloop", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(base + "/api/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"alphaloop serve did not start (exit {proc.poll()})")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(15)


def new_session(journal: Journal, **overrides: Any) -> str:
    values: dict[str, Any] = dict(
        goal="maximise Sharpe",
        mode="cufolio_only",
        objective={"metric": "sharpe", "max_drawdown": None, "max_turnover": None},
        proposer="tpe",
        budget=1000,
        seed=0,
        data_source="synthetic",
        data_fingerprint="fp",
        settings={},
        baseline_config=TrialConfig().model_dump(),
    )
    return journal.sessions.create(**{**values, **overrides})


def add_trials(journal: Journal, session_id: str, n: int, *, start: float = 0.5) -> None:
    """``n`` finished search trials with objectives ``start + i/100`` (every 3rd kept)."""
    config = TrialConfig(lookback=30)
    for i in range(n):
        row = journal.trials.start(
            session_id,
            kind="search",
            config=config.model_dump(),
            config_hash=config_hash(config),
            delta={"changes": {"lookback": 30}, "rationale": "r"},
            parent_id=None,
            seed=i,
            rationale="r",
            proposer="tpe",
        )
        journal.trials.finish(
            row.id,
            status="keep" if i % 3 == 0 else "discard",
            objective=start + i / 100,
            metrics={"sharpe": start + i / 100, "max_drawdown": 0.1},
            elapsed_s=0.01,
        )


# What the page sends on every call (see alphaloop.server.guard).
PAGE = {"X-Alphaloop": "1"}
MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def api_routes(app: Any) -> list[Any]:
    """Every route of the application as FastAPI resolves it (``path``, ``methods``,
    ``dependant``, ``body_field``), read from its route table: routers included in it are
    expanded, so a route added to any router is listed without naming it here."""
    found = []
    for route in app.routes:
        contexts = getattr(route, "effective_route_contexts", None)
        if contexts is not None:  # an included router (FastAPI >= 0.165)
            found.extend(contexts())
        elif hasattr(route, "dependant"):
            found.append(route)
    return found


def mutating_routes(app: Any) -> list[tuple[str, str, Any]]:
    """(method, path, route) of every state-changing route of ``app``."""
    return sorted(
        (method, r.path, r)
        for r in api_routes(app)
        for method in sorted(set(r.methods or ()) & MUTATING)
    )
