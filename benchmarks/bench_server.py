"""The REST API under load: ``python -m benchmarks.bench_server [--quick]``; the sessions beside
optuna-dashboard alone: ``--scale-only [--sizes 50000] [--loads 1] [--give-up 900]``.

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
4. At scale (:func:`scale`): sessions of 1,000, 10,000 and 50,000 trials (1,000 and 5,000 with
   ``--quick``), each exported through ``alphaloop export optuna`` and served by
   optuna-dashboard's own app beside ours. In one chromium, medians of cold opens (a new
   context each, after a first open of each view warmed both servers), taken in turn: our
   session view to its history drawn by plotly, its trials view to its first rows, its plots
   view to its first plot; optuna-dashboard's study page to its history plot drawn, its trial
   list to its first trials. Times are the first painted frame showing each, marked in the page
   from the navigation's start. And the poll each page makes: our pulse, optuna-dashboard's
   ``/api/studies/ID?after=N`` (an up-to-date poll).

Reports numbers only; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from fastapi import APIRouter, FastAPI

from alphaloop import ops
from alphaloop.journal import Journal
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.server import create_app
from alphaloop.settings import Settings
from benchmarks._report import SummaryRow, print_rows, timed
from tests.server.helpers import ARGS, CHROMIUM, live_server, new_session

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
        status = ops.sessions.session_status(settings, session_id)
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
        r = ops.sessions.session_review(settings, session_id)
        rows = [t for t in r.trials if t.id > after]
        validation = ops.validate.latest_validation(settings, session_id)
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
            "validation": validation.journaled() if validation else None,
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
    with httpx.Client(base_url=base, timeout=max(120, _GIVE_UP_S)) as c:
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


def _page_load(base: str, sid: str, loads: int) -> tuple[float, float] | None:
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
            page.goto(f"{base}/#/session/{sid}")
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


def _args(argv: list[str] | None) -> tuple[bool, tuple[int, ...], int, bool]:
    """(quick, the sizes beside optuna-dashboard, cold opens of each view, only those)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats, smaller sessions")
    parser.add_argument(
        "--sizes", help="the sessions' sizes beside optuna-dashboard (default 1000,10000,50000)"
    )
    parser.add_argument("--loads", type=int, help="cold opens of each view at each size (3)")
    parser.add_argument(
        "--scale-only", action="store_true", help="only the sessions beside optuna-dashboard"
    )
    parser.add_argument("--give-up", type=float, help="seconds a view may take to draw (120)")
    args = parser.parse_args(argv)
    if args.give_up:
        global _GIVE_UP_S
        _GIVE_UP_S = args.give_up
    quick = args.quick
    default = (1_000, 5_000) if quick else (1_000, 10_000, 50_000)
    sizes = tuple(int(n) for n in args.sizes.split(",")) if args.sizes else default
    return quick, sizes, args.loads or (2 if quick else 3), args.scale_only


def main(argv: list[str] | None = None) -> list[SummaryRow]:
    quick, sizes, opens, scale_only = _args(argv)
    if scale_only:
        return scale(sizes, loads=opens)
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
                        load = _page_load(base, sid, loads)
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
    return rows + scale(sizes, loads=opens)


# --- 1,000 / 10,000 / 50,000 trials: the page beside optuna-dashboard -------------------------


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


_VARIED = ("idx", "status", "config", "seed", "objective", "metrics", "id")


@contextmanager
def _optuna_dashboard(storage: str) -> Iterator[str]:
    """optuna-dashboard's own WSGI app on the study's storage, served on a loopback port by a
    threaded WSGI server (as ``optuna-dashboard`` serves it, with threads)."""
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    from optuna_dashboard import wsgi

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    class Threaded(ThreadingMixIn, WSGIServer):
        daemon_threads = True

    server = make_server("127.0.0.1", 0, wsgi(storage), Threaded, Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(10)


# Done when: our session view has its history drawn (the canvas drawn at once, then plotly's
# interactive chart); our trials view its first rows; the
# plots view its first plot; optuna-dashboard's study page a plot with data; its trial list
# a trial. Each is checked in the page at each painted frame (see _MARK), from the navigation.
_OURS_DRAWN = "() => Number(document.querySelector('#research-chart')?.dataset.points) > 0"
_OURS_HISTORY = (
    "() => !!document.querySelector('#research-chart .main-svg') && "
    "Number(document.querySelector('#research-chart').dataset.points) > 0"
)
_OURS_TRIALS = "() => document.querySelectorAll('#trials-table tbody tr').length > 0"
_OURS_PLOTS = "() => !!document.querySelector('#parallel-chart .main-svg')"
_THEIRS_STUDY = "() => !!document.querySelector('.js-plotly-plot .main-svg .scatterlayer .trace')"
_THEIRS_TRIALS = (
    "() => [...document.querySelectorAll('li')].some((li) => /^Trial \\d/.test(li.textContent))"
)
# Resolves with the milliseconds from the navigation's start to the first frame where
# ``done`` holds (a check from outside the page cannot run while plotly.js runs).
_GIVE_UP_S = 120  # --give-up
_MARK = """([done, giveUpMs]) => new Promise((resolve, reject) => {
  const check = new Function('return (' + done + ')()');
  const tick = () => requestAnimationFrame(() => check() ? resolve(performance.now()) : tick());
  setTimeout(() => reject(new Error('not drawn in time: ' + done)), giveUpMs);
  tick();
})"""


def _open(browser: Any, url: str, done: str) -> float:
    """Seconds from navigation to the first painted frame where ``done`` holds, cold; infinity
    when it did not hold within ``_GIVE_UP_S`` (printed as such)."""
    from playwright.sync_api import Error

    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    try:
        page.goto(url, wait_until="commit", timeout=_GIVE_UP_S * 1000)
        return float(page.evaluate(_MARK, [done, _GIVE_UP_S * 1000])) / 1e3
    except Error:
        return math.inf
    finally:
        context.close()


def _s(seconds: float) -> str:
    return f"> {_GIVE_UP_S} s" if math.isinf(seconds) else f"{seconds:.2f} s"


def _views(base: str, theirs: str, sid: str, study_id: int, loads: int) -> dict[str, float]:
    """Medians of ``loads`` cold opens of each view, ours and optuna-dashboard's, in one
    chromium, taken in turn (like against like)."""
    from playwright.sync_api import sync_playwright

    views = {
        "ours: a session (history drawn)": (f"{base}/#/session/{sid}", _OURS_DRAWN),
        "ours: a session (plotly's history)": (f"{base}/#/session/{sid}", _OURS_HISTORY),
        "ours: its trials (first page)": (f"{base}/#/session/{sid}/trials", _OURS_TRIALS),
        "ours: its plots (first plot)": (f"{base}/#/session/{sid}/plots", _OURS_PLOTS),
        "optuna-dashboard: the study (history drawn)": (
            f"{theirs}/dashboard/studies/{study_id}", _THEIRS_STUDY),
        "optuna-dashboard: its trials (first rows)": (
            f"{theirs}/dashboard/studies/{study_id}/trials", _THEIRS_TRIALS),
    }  # fmt: skip
    times: dict[str, list[float]] = {name: [] for name in views}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for url, done in views.values():  # a first open of each warms the servers
            _open(browser, url, done)
        for _ in range(loads):
            for name, (url, done) in views.items():
                times[name].append(_open(browser, url, done))
        browser.close()
    return {name: statistics.median(values) for name, values in times.items()}


def _study_id(theirs: str, name: str) -> int:
    listed = httpx.get(f"{theirs}/api/studies", timeout=max(120, _GIVE_UP_S))
    studies = listed.json()["study_summaries"]
    return int(next(s["study_id"] for s in studies if s["study_name"] == name))


def scale(sizes: tuple[int, ...], loads: int = 3, n_req: int = 40) -> list[SummaryRow]:
    """Each view of a session of each size opened cold in chromium, and the poll, beside
    optuna-dashboard's on the same study (exported by ``alphaloop export optuna``)."""
    from alphaloop.ops.export import export_optuna

    table: list[tuple[str, ...]] = []
    rows: list[SummaryRow] = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            settings = Settings(ALPHALOOP_HOME=str(Path(tmp) / "home"))
            with Journal(settings.journal_path) as j:
                sid = new_session(j, budget=n)
            _clone_trials(settings, sid, n)
            # An Optuna journal file, the export's default form (an RDB URL goes through
            # Optuna's Study.add_trials: hours at 50,000 trials).
            storage = str(Path(tmp) / "study.log")
            exported, _ = timed(lambda: export_optuna(settings, sid, storage))  # noqa: B023
            with live_server(settings) as base, _optuna_dashboard(storage) as theirs:
                study_id = _study_id(theirs, sid)
                ours_poll = _latency(base, f"/api/pulse?session_id={sid}", n_req)
                their_poll = _latency(theirs, f"/api/studies/{study_id}?after={n}", n_req)
                opened = _views(base, theirs, sid, study_id, loads)
        print(f"{n:,} trials (exported to Optuna in {exported:.0f} s): medians of {loads} "
              f"cold opens in chromium at 1440 px, of {n_req} polls", flush=True)  # fmt: skip
        lines = [(name, _s(t)) for name, t in opened.items()]
        lines += [
            ("ours: the poll (/api/pulse), median / p95", _ms(ours_poll)),
            ("optuna-dashboard: the poll (/api/studies/ID?after=N), median / p95", _ms(their_poll)),
        ]
        print_rows(lines)
        ours_open = opened["ours: a session (history drawn)"]
        theirs_open = opened["optuna-dashboard: the study (history drawn)"]
        table.append((f"{n:,}", _s(ours_open), _s(theirs_open),
                      _s(opened["ours: its trials (first page)"]),
                      _s(opened["optuna-dashboard: its trials (first rows)"]),
                      _s(opened["ours: its plots (first plot)"]),
                      f"{ours_poll[0]:.1f} ms", f"{their_poll[0]:.1f} ms"))  # fmt: skip
        rows += [
            (f"open a session, {n:,} trials (history drawn)", _s(ours_open),
             f"optuna-dashboard {_s(theirs_open)} ({theirs_open / ours_open:.1f}x); "
             "target <= 1 s"),
            (f"poll, {n:,} trials, median", f"{ours_poll[0]:.1f} ms",
             f"optuna-dashboard {their_poll[0]:.1f} ms; target <= 30 ms"),
        ]  # fmt: skip
    head = ("trials", "session: ours", "optuna-dashboard", "trials: ours",
            "optuna-dashboard", "plots: ours", "poll: ours", "optuna-dashboard")  # fmt: skip
    print("\nOpen a view (cold, to drawn) and poll, beside optuna-dashboard on the same study:")
    widths = [max(len(r[i]) for r in (head, *table)) for i in range(len(head))]
    for r in (head, *table):
        print("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))
    return rows


if __name__ == "__main__":
    main()
