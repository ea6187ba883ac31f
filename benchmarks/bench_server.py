"""The REST API under load: ``python -m benchmarks.bench_server [--quick]``.

1. Latency of the session snapshot and of the full journal of a 1,000-trial session (median and
   p95 of sequential requests) while a writer thread appends trials to it through the Journal.
2. Page load to first chart drawn (Playwright with the system Chromium; median of a few loads).
3. Concurrent pollers: 8/32/64/128 clients each polling the snapshot in a loop for a few
   seconds against one uvicorn; errors (any non-200 or transport error) and requests per second.

Reports numbers only; it asserts nothing.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx

from alphaloop.journal import Journal
from alphaloop.settings import Settings
from benchmarks._report import SummaryRow, parse_quick, print_rows
from tests.server.helpers import add_trials, live_server, new_session


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _latency(base: str, path: str, n: int) -> tuple[float, float]:
    times = []
    with httpx.Client(base_url=base, timeout=60) as c:
        for _ in range(n):
            t0 = time.perf_counter()
            c.get(path).raise_for_status()
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3, _pct(times, 0.95) * 1e3


async def _pollers(base: str, path: str, clients: int, seconds: float) -> tuple[int, int]:
    ok = errors = 0
    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as c:
        end = time.monotonic() + seconds

        async def one() -> None:
            nonlocal ok, errors
            while time.monotonic() < end:
                try:
                    r = await c.get(path)
                    ok, errors = (ok + 1, errors) if r.status_code == 200 else (ok, errors + 1)
                except httpx.HTTPError:
                    errors += 1

        await asyncio.gather(*(one() for _ in range(clients)))
    return ok, errors


def _page_load(base: str, loads: int) -> float | None:
    chromium = shutil.which("chromium")
    if chromium is None:
        return None
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=chromium, args=["--no-sandbox", "--disable-gpu"]
        )
        for _ in range(loads):
            page = browser.new_page()
            t0 = time.perf_counter()
            page.goto(base + "/")
            page.wait_for_function(
                "() => Number(document.querySelector('#research-chart').dataset.points) > 0",
                timeout=60_000,
            )
            times.append(time.perf_counter() - t0)
            page.close()
        browser.close()
    return statistics.median(times)


def main(argv: list[str] | None = None) -> list[SummaryRow]:
    quick = parse_quick(__doc__ or "", argv)
    n_trials, n_req, loads = (300, 20, 2) if quick else (1000, 60, 3)
    ramp, seconds = ((8, 32), 2.0) if quick else ((8, 32, 64, 128), 4.0)
    rows: list[SummaryRow] = []
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(ALPHALOOP_HOME=str(Path(tmp) / "home"))
        with Journal(settings.journal_path) as j:
            sid = new_session(j, budget=n_trials * 2)
            add_trials(j, sid, n_trials)
        stop = threading.Event()

        def write() -> None:
            with Journal(settings.journal_path) as j:
                while not stop.is_set():
                    add_trials(j, sid, 1)
                    time.sleep(0.05)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        try:
            with live_server(settings) as base:
                snap = _latency(
                    base, f"/api/research/current?session_id={sid}&after=999999999", n_req
                )
                full = _latency(base, f"/api/sessions/{sid}/journal", max(5, n_req // 4))
                load = _page_load(base, loads)
                ramp_rows = []
                for clients in ramp:
                    path = f"/api/research/current?session_id={sid}&after=999999999"
                    ok, errors = asyncio.run(_pollers(base, path, clients, seconds))
                    ramp_rows.append((clients, ok / seconds, errors))
        finally:
            stop.set()
            writer.join()
    print(f"REST API over a {n_trials}-trial session with a writer appending trials")
    print_rows(
        [
            ("snapshot latency median / p95", f"{snap[0]:.1f} ms / {snap[1]:.1f} ms"),
            (f"journal ({n_trials} trials) median / p95", f"{full[0]:.1f} ms / {full[1]:.1f} ms"),
            ("page load to first chart (median)", f"{load:.2f} s" if load else "no chromium"),
            *[(f"{c} pollers", f"{rps:.0f} req/s, {e} errors") for c, rps, e in ramp_rows],
        ]
    )
    rows.append(
        ("API snapshot latency, median (p95)", f"{snap[0]:.1f} ms ({snap[1]:.1f})", "with a writer")
    )
    rows.append(
        (
            f"API journal of {n_trials} trials, median (p95)",
            f"{full[0]:.0f} ms ({full[1]:.0f})",
            "with a writer",
        )
    )
    if load:
        rows.append(("page load to first chart", f"{load:.2f} s", "median"))
    held = max((c for c, _, e in ramp_rows if e == 0), default=0)
    rows.append(("concurrent pollers held with no error", str(held), f"of {ramp[-1]} tried"))
    return rows


if __name__ == "__main__":
    main()
