"""The REST API under load: ``python -m benchmarks.bench_server [--quick]``.

A 1,000-trial session whose trials carry what real ones do (754 daily validation returns, final
weights, the prompt of an LLM proposal), while a writer thread appends more through the Journal.
Each measure is taken twice in one run, side by side:

- *before*: the former full reads, kept here as baseline routes (every trial of the session
  read with its series, then filtered, on every request);
- *after*: the routes as served (trials after the poller's cursor only, no series unless asked).

1. Latency of the snapshot (an up-to-date poller, and a first poll with ``after=0``) and of the
   session's journal (median and p95 of sequential requests).
2. Page load to first chart drawn (Playwright with the system Chromium): cold (a new browser
   context each time, nothing cached) and warm (a reload, plotly.js from the cache).
3. Concurrent pollers: 8/32/64/128 clients each polling the snapshot in a loop for a few seconds
   against one uvicorn; errors (any non-200 or transport error) and requests per second.
4. At scale (:func:`scale`): a 50,000-trial session (5,000 with ``--quick``) and a small one.
   In chromium, medians of cold loads: the first useful render (the first table rows, the
   history chart: first drawn, then interactive once plotly.js has run), a switch to the big
   session from the session list once the small one is shown (its status line, its table
   page, its chart drawn, plotly's chart of it), and the DOM's size; and the median latency of
   the polls the page makes (the session's pulse, the session list; and the list's first read
   by the server). Times in the page are the first painted frame showing each, marked in the
   page from the navigation's start or from the click. The server stays up across the loads
   (its caches of the history and of each session's tally are warm after the first): the
   first load is reported on its own.

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
from typing import Any

import httpx
from fastapi import APIRouter, FastAPI

from alphaloop import ops
from alphaloop.journal import Journal
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.server import create_app
from alphaloop.settings import Settings
from benchmarks._report import SummaryRow, parse_quick, print_rows
from tests.server.helpers import live_server, new_session

N_DAYS = 754  # validation days of the embedded S&P 500 data
N_ASSETS = 20
WRITE_EVERY_S = 0.2  # the writer: a trial every 0.2 s, faster than any real trial ends
PROMPT = "x" * 3000  # an LLM proposal's prompt: the goal, the knob table, the top trials


def _add_trials(journal: Journal, session_id: str, n: int, start: int = 0) -> None:
    """``n`` finished search trials with the series a real trial journals."""
    config = TrialConfig(lookback=30)
    for i in range(start, start + n):
        row = journal.trials.start(
            session_id,
            kind="search",
            config=config.model_dump(),
            config_hash=config_hash(config),
            delta={"changes": {"lookback": 30}, "rationale": "r"},
            parent_id=None,
            seed=i,
            rationale="r",
            proposer="llm",
            prompt=PROMPT,
        )
        journal.trials.finish(
            row.id,
            status="keep" if i % 3 == 0 else "discard",
            objective=0.5 + i / 1000,
            metrics={"sharpe": 0.5 + i / 1000, "max_drawdown": 0.1},
            val_returns=[0.0004 * ((d * 7 + i) % 11 - 5) for d in range(N_DAYS)],
            final_weights=[1 / N_ASSETS] * N_ASSETS,
            elapsed_s=0.01,
        )


def _before_routes(settings: Settings) -> APIRouter:
    """The former snapshot and journal routes: every trial read in full, then filtered."""
    router = APIRouter(prefix="/before")
    never = {"prompt", "traceback_tail"}

    def cursor(rows: list[Any], after: int) -> int:
        running = [t.id for t in rows if t.status == "running"]
        return min(running) - 1 if running else max((t.id for t in rows), default=after)

    @router.get("/snapshot")
    def snapshot(session_id: str, after: int = 0) -> dict[str, Any]:
        status = ops.session_status(settings, session_id)
        assert status is not None
        rows = [t for t in status.trials if t.id > after]
        return {
            "session": status.session.model_dump(mode="json"),
            "counted_trials": status.counted_trials,
            "best": status.best.model_dump(mode="json") if status.best else None,
            "running": [r.model_dump(mode="json") for r in status.running],
            "resume": status.resume,
            "trials": [t.model_dump(mode="json", exclude=never) for t in rows],
            "next_after": cursor(rows, after),
        }

    @router.get("/journal")
    def journal(session_id: str, after: int = 0) -> dict[str, Any]:
        r = ops.session_review(settings, session_id)
        rows = [t for t in r.trials if t.id > after]
        return {
            "session": r.session.model_dump(mode="json"),
            "leaderboard": [t.model_dump(mode="json") for t in r.leaderboard],
            "trials": [
                {
                    **t.model_dump(mode="json", exclude=never),
                    "clips": [c.model_dump(mode="json") for c in r.clips.get(t.id, [])],
                }
                for t in rows
            ],
            "chart_reads": [c.model_dump(mode="json") for c in r.chart_reads],
            "validation": ops.latest_validation(settings, session_id),
            "next_after": cursor(rows, after),
        }

    return router


def _app(settings: Settings) -> FastAPI:
    app = create_app(settings)
    # Ahead of the page mounted at "/", which would answer every other path.
    app.router.routes[:0] = _before_routes(settings).routes
    return app


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _latency(base: str, path: str, n: int) -> tuple[float, float]:
    times = []
    with httpx.Client(base_url=base, timeout=120) as c:
        c.get(path).raise_for_status()  # warm-up: imports, first parse
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


_FIRST_CHART = "() => Number(document.querySelector('#research-chart').dataset.points) > 0"


def _page_load(base: str, loads: int) -> tuple[float, float] | None:
    """Median seconds to the first chart drawn: cold (a new context) and warm (a reload)."""
    chromium = shutil.which("chromium")
    if chromium is None:
        return None
    from playwright.sync_api import sync_playwright

    cold, warm = [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=chromium, args=["--no-sandbox", "--disable-gpu"]
        )
        for _ in range(loads):
            page = browser.new_page()
            t0 = time.perf_counter()
            page.goto(base + "/")
            page.wait_for_function(_FIRST_CHART, timeout=60_000)
            cold.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            page.reload()
            page.wait_for_function(_FIRST_CHART, timeout=60_000)
            warm.append(time.perf_counter() - t0)
            page.close()
        browser.close()
    return statistics.median(cold), statistics.median(warm)


def _ms(m: tuple[float, float]) -> str:
    return f"{m[0]:.1f} / {m[1]:.1f} ms"


def main(argv: list[str] | None = None) -> list[SummaryRow]:
    quick = parse_quick(__doc__ or "", argv)
    n_trials, n_req, loads = (300, 20, 2) if quick else (1000, 60, 3)
    ramp, seconds = ((8, 32), 2.0) if quick else ((8, 32, 64, 128), 4.0)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(ALPHALOOP_HOME=str(Path(tmp) / "home"))
        with Journal(settings.journal_path) as j:
            sid = new_session(j, budget=n_trials * 2)
            _add_trials(j, sid, n_trials)
        stop = threading.Event()

        def write() -> None:
            with Journal(settings.journal_path) as j:
                i = n_trials
                while not stop.is_set():
                    _add_trials(j, sid, 1, start=i)
                    i += 1
                    time.sleep(WRITE_EVERY_S)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        lat: dict[str, tuple[float, float]] = {}
        load: tuple[float, float] | None = None
        polls: dict[tuple[str, int], tuple[float, int]] = {}
        try:
            with live_server(settings, app=_app(settings)) as base:
                q = f"session_id={sid}"
                paths = {
                    "snapshot, up to date": (
                        f"/before/snapshot?{q}&after=999999999",
                        f"/api/research/current?{q}&after=999999999",
                    ),
                    "snapshot, first poll": (
                        f"/before/snapshot?{q}&after=0",
                        f"/api/research/current?{q}&after=0",
                    ),
                    "journal": (f"/before/journal?{q}", f"/api/sessions/{sid}/journal"),
                    "journal ?series=true": (None, f"/api/sessions/{sid}/journal?series=true"),
                }
                # Every "after" measure first: abandoned "before" requests (a poller's timeout)
                # keep the server busy long after their client gave up.
                for tag, col in (("after", 1), ("before", 0)):
                    for name, both in paths.items():
                        n = n_req if name.startswith("snapshot, up") else max(5, n_req // 10)
                        if both[col]:
                            lat[f"{name} {tag}"] = _latency(base, both[col], n)
                    if tag == "after":
                        load = _page_load(base, loads)
                    for clients in ramp:
                        path = paths["snapshot, up to date"][col]
                        ok, errors = asyncio.run(_pollers(base, path, clients, seconds))
                        polls[(tag, clients)] = (ok / seconds, errors)
        finally:
            stop.set()
            writer.join()
    print(
        f"REST API over a {n_trials}-trial session ({N_DAYS} daily returns a trial) with a "
        f"writer appending a trial every {WRITE_EVERY_S:g} s; latency median / p95, "
        "before -> after (ratio of medians)"
    )
    lines = []
    for name in paths:
        after = lat[f"{name} after"]
        before = lat.get(f"{name} before")
        if before:
            ratio = before[0] / after[0]
            lines.append((name, f"{_ms(before)} -> {_ms(after)}  ({ratio:.0f}x)"))
        else:
            lines.append((name, f"{_ms(after)}"))
    if load:
        lines.append(
            ("page load to first chart, cold / warm", f"{load[0]:.2f} s / {load[1]:.2f} s")
        )
    else:
        lines.append(("page load to first chart", "no chromium"))
    for clients in ramp:
        (b_rps, b_err), (a_rps, a_err) = polls[("before", clients)], polls[("after", clients)]
        lines.append(
            (
                f"{clients} pollers",
                f"{b_rps:.0f} req/s ({b_err} errors) -> {a_rps:.0f} req/s ({a_err} errors)",
            )
        )
    print_rows(lines)
    snap_b, snap_a = lat["snapshot, up to date before"], lat["snapshot, up to date after"]
    full_b, full_a = lat["journal before"], lat["journal after"]
    rows: list[SummaryRow] = [
        (
            "API snapshot latency, median (p95)",
            f"{snap_a[0]:.1f} ms ({snap_a[1]:.1f})",
            f"full read {snap_b[0]:.0f} ms ({snap_b[1]:.0f}), with a writer",
        ),
        (
            f"API journal of {n_trials} trials, median (p95)",
            f"{full_a[0]:.0f} ms ({full_a[1]:.0f})",
            f"with series {full_b[0]:.0f} ms ({full_b[1]:.0f}), with a writer",
        ),
    ]
    if load:
        rows.append(("page load to first chart", f"{load[0]:.2f} s", f"warm {load[1]:.2f} s"))
    top = ramp[-1]
    rows.append(
        (
            f"snapshot throughput, {top} pollers",
            f"{polls[('after', top)][0]:.0f} req/s ({polls[('after', top)][1]} errors)",
            f"full read {polls[('before', top)][0]:.0f} req/s",
        )
    )
    return rows + scale(5_000 if quick else 50_000, loads=2 if quick else 3)


# --- 50,000 trials: the page at scale -----------------------------------------------------------

_SCALE_PLOTLY = "() => !!document.querySelector('#research-chart .main-svg')"
_RANGE = "() => document.querySelector('#trials-range').textContent.endsWith(' of {total}')"
_DRAWN = "() => Number(document.querySelector('#research-chart').dataset.points) > 0"
_VARIED = ("idx", "status", "config", "seed", "objective", "metrics", "id")


def _clone_trials(settings: Settings, session_id: str, n: int) -> None:
    """``n`` trials for ``session_id``, cloned in SQL from one written through the Journal (each
    with the 754 daily returns, weights and prompt a real one carries), their index, verdict,
    lookback and objective varied."""
    import sqlite3

    with Journal(settings.journal_path) as j:
        _add_trials(j, session_id, 1)
    with sqlite3.connect(settings.journal_path) as conn:
        cols = [r[1] for r in conn.execute("PRAGMA table_info(trials)") if r[1] not in _VARIED]
        kept = ", ".join(cols)
        conn.execute(
            f"WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?) "
            f"INSERT INTO trials (idx, status, config, seed, objective, metrics, {kept}) "
            f"SELECT i, CASE WHEN i % 3 = 0 THEN 'keep' ELSE 'discard' END, "
            f"json_set(config, '$.lookback', 5 + i % 56), i, 0.5 + (i * 37 % 1000) / 1000.0, "
            f"json_set(metrics, '$.sharpe', 0.5 + (i * 37 % 1000) / 1000.0), {kept} "
            f"FROM trials, k WHERE trials.session_id = ? AND trials.idx = 0",
            (n - 1, session_id),
        )


# Marks in the page, in ms since navigation: the first frame with the table's rows, with the
# chart drawn, with plotly's chart. Taken in the page, since a check from outside cannot run
# while the page's thread is busy (running plotly.js) even when those are painted already.
_MARKS = """
window.__marks = {};
const tick = () => requestAnimationFrame(() => {
  const m = window.__marks, now = Math.round(performance.now());
  const chart = document.querySelector('#research-chart');
  if (!m.table && document.querySelectorAll('#trials-table tbody tr').length) m.table = now;
  if (!m.chart && chart && Number(chart.dataset.points) > 0) m.chart = now;
  if (!m.plotly && chart && chart.querySelector('.main-svg')) m.plotly = now;
  if (!m.plotly) tick();
});
tick();
"""


def _until(page: Any, *checks: str) -> float:
    t0 = time.perf_counter()
    for check in checks:
        page.wait_for_function(check, timeout=120_000)
    return time.perf_counter() - t0


# A switch from the session list, measured in the page from the click: the first painted frame
# with the session's status line, with its table page (its count of trials shown), with its
# chart drawn (a preview or plotly's), and with plotly's chart of it.
_SWITCH = """([sid, total]) => new Promise((resolve) => {
  const $ = (q) => document.querySelector(q), m = {}, chart = $('#research-chart');
  chart.dataset.points = '0';
  const t0 = performance.now();
  const tick = () => requestAnimationFrame(() => {
    const now = performance.now() - t0, drawn = Number(chart.dataset.points) > 0;
    m.status ??= $('#research-status').textContent.startsWith(sid) ? now : undefined;
    m.table ??= $('#trials-range').textContent.endsWith(' of ' + total) ? now : undefined;
    m.chart ??= drawn ? now : undefined;
    const plotly = chart.querySelector('.main-svg') && !chart.querySelector('canvas.preview');
    m.plotly ??= drawn && plotly ? now : undefined;
    if (m.status && m.table && m.plotly) resolve(m); else tick();
  });
  $(`#sessions-table tr[data-id='${sid}']`).click();
  tick();
})"""


def _scale_page(base: str, big: str, small: str, loads: int) -> dict[str, Any] | None:
    """Medians in chromium: a cold load to the first chart and first table rows; switching to
    the big session from the small one (status line, table page, chart drawn, plotly's chart);
    DOM elements after the load."""
    chromium = shutil.which("chromium")
    if chromium is None:
        return None
    from playwright.sync_api import sync_playwright

    total, small_total = (
        httpx.get(f"{base}/api/sessions/{sid}/trials?limit=1").json()["total"]
        for sid in (big, small)
    )
    first, table, nodes, plotly = [], [], [], []
    switch: dict[str, list[float]] = {"status": [], "table": [], "chart": [], "plotly": []}
    on = "() => document.querySelector('#research-status').textContent.startsWith('{sid}')"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=chromium, args=["--no-sandbox", "--disable-gpu"]
        )
        for _ in range(loads):
            context = browser.new_context()  # cold: nothing cached
            page = context.new_page()
            page.add_init_script(_MARKS)
            page.goto(base + "/")
            _until(page, _SCALE_PLOTLY, "() => window.__marks.plotly > 0")
            marks = page.evaluate("window.__marks")
            table.append(marks["table"] / 1e3)
            first.append(marks["chart"] / 1e3)
            plotly.append(marks["plotly"] / 1e3)
            nodes.append(page.evaluate("document.getElementsByTagName('*').length"))
            page.wait_for_function(
                "() => document.querySelectorAll('#sessions-table tbody tr').length === 2"
            )
            # The small session followed: its status line, table page and chart drawn; the
            # switch to the big one follows at once (its note and report may be in flight).
            page.evaluate("document.querySelector('#research-chart').dataset.points = '0'")
            page.click(f"#sessions-table tr[data-id='{small}']")
            _until(page, on.format(sid=small), _RANGE.format(total=small_total), _DRAWN)
            marks = page.evaluate(_SWITCH, [big, total])
            for name, values in switch.items():
                values.append(marks[name] / 1e3)
            context.close()
        browser.close()
    return {
        "first": statistics.median(first),
        "table": statistics.median(table),
        "nodes": statistics.median(nodes),
        "plotly": statistics.median(plotly),
        "first_load": (table[0], first[0], plotly[0]),
        **{f"switch_{name}": statistics.median(values) for name, values in switch.items()},
    }


def _first_request(base: str, path: str) -> float:
    """Milliseconds of one request, the server's first of ``path``."""
    t0 = time.perf_counter()
    httpx.get(base + path, timeout=120).raise_for_status()
    return (time.perf_counter() - t0) * 1e3


def scale(n_trials: int, loads: int = 3, n_req: int = 50) -> list[SummaryRow]:
    """The page and the polls over a session of ``n_trials`` (and a small one to switch from)."""
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(ALPHALOOP_HOME=str(Path(tmp) / "home"))
        with Journal(settings.journal_path) as j:
            small = new_session(j, budget=100)
            _add_trials(j, small, 50)
            big = new_session(j, budget=n_trials)
        t0 = time.perf_counter()
        _clone_trials(settings, big, n_trials)
        built = time.perf_counter() - t0
        with live_server(settings) as base:
            poll = _latency(base, f"/api/pulse?session_id={big}", n_req)
            history = _latency(base, f"/api/sessions/{big}/history", max(5, n_req // 5))
            sessions_first = _first_request(base, "/api/dashboard/sessions")
            sessions = _latency(base, "/api/dashboard/sessions", n_req)
            page_rows = _latency(
                base, f"/api/sessions/{big}/trials?sort=objective&order=desc", max(5, n_req // 5)
            )
            page = _scale_page(base, big, small, loads)
    print(f"The page over a {n_trials:,}-trial session (journal built in {built:.0f} s); "
          f"medians of {loads} cold loads in chromium, of {n_req} polls")  # fmt: skip
    lines = [
        ("status poll, /api/pulse (what the page polls)", _ms(poll)),
        ("session list poll (what the page polls)", _ms(sessions)),
        ("session list, the server's first read", f"{sessions_first:.1f} ms"),
        ("history, sampled to 2,000 rows (the chart's data)", _ms(history)),
        ("trial page, sorted by objective", _ms(page_rows)),
    ]
    rows: list[SummaryRow] = [
        (
            f"poll over {n_trials:,} trials, median (p95)",
            f"{poll[0]:.1f} ms ({poll[1]:.1f})",
            "target <= 30 ms",
        ),
        (
            f"session list poll, {n_trials:,} trials, median (p95)",
            f"{sessions[0]:.1f} ms ({sessions[1]:.1f})",
            f"the server's first read {sessions_first:.0f} ms",
        ),
    ]
    if page:
        lines += [
            ("first table page and status line, cold", f"{page['table']:.2f} s"),
            ("first chart drawn (history), cold", f"{page['first']:.2f} s"),
            ("the chart interactive (plotly.js run), cold", f"{page['plotly']:.2f} s"),
            (
                "first load alone: table / chart / interactive",
                " / ".join(f"{x:.2f} s" for x in page["first_load"]),
            ),
            ("session switch: status line", f"{page['switch_status']:.2f} s"),
            ("session switch: table page", f"{page['switch_table']:.2f} s"),
            ("session switch: chart drawn", f"{page['switch_chart']:.2f} s"),
            ("session switch: the chart interactive (plotly)", f"{page['switch_plotly']:.2f} s"),
            ("DOM elements after the load", f"{page['nodes']:.0f}"),
        ]
        rows += [
            (f"first useful render, {n_trials:,} trials", f"table {page['table']:.2f} s",
             f"chart {page['first']:.2f} s; target <= 2 s"),
            (f"session switch, {n_trials:,} trials", f"table {page['switch_table']:.2f} s",
             f"chart {page['switch_chart']:.2f} s, interactive {page['switch_plotly']:.2f} s; "
             "target <= 1 s"),
        ]  # fmt: skip
    print_rows(lines)
    return rows


if __name__ == "__main__":
    main()
