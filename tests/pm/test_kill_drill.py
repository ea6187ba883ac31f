"""The kill drill: ``pm run`` killed with SIGKILL at 20 random points of a 60-day deployment
check, resumed each time with ``--resume``, ends with the ledger, the equity and the decisions
of an uninterrupted run, and no order reached the broker twice.

Paper and the scripted Alpaca server. Kill points are drawn from a seeded generator: some after
a number of journaled decisions plus a random delay (anywhere in a tick: deciding, journaling,
settling), and with Alpaca some at the scripted server itself, right after it filled an order
and before the answer leaves (the order is at the broker and not in the journal).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from alphaloop.journal import Journal
from alphaloop.market import load_market, load_prices
from alphaloop.ops import pm as ops_pm
from alphaloop.settings import Settings
from tests.fake_alpaca import KEY, SECRET, FakeAlpaca
from tests.pm.helpers import DATA, add_policy

ROOT = Path(__file__).resolve().parents[2]
DAYS, KILLS = 60, 20


def _window() -> tuple[str, str]:
    dates = load_market(DATA).dates
    first = int(dates.searchsorted(np.datetime64("2013-07-01")))
    return str(dates[first].date()), str(dates[first + DAYS - 1].date())


def _decided(settings: Settings, book: str) -> int:
    if not settings.journal_path.exists():
        return 0
    conn = sqlite3.connect(f"file:{settings.journal_path}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute("SELECT COUNT(*) FROM decisions WHERE book = ?", (book,)).fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


class _Run:
    """``alphaloop pm run --resume`` in a child process, killed on demand."""

    def __init__(self, settings: Settings, policy: int, broker: str, env: dict) -> None:
        start, end = _window()
        self.args = [
            sys.executable, "-m", "alphaloop", "pm", "run", "--start", start, "--end", end,
            "--policy", str(policy), "--book", "drill", "--broker", broker, "--resume", "--json",
        ]  # fmt: skip
        self.env = {**os.environ, **env, "ALPHALOOP_HOME": str(settings.home)}
        self.proc: subprocess.Popen | None = None

    def start(self) -> subprocess.Popen:
        self.proc = subprocess.Popen(
            self.args, cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        return self.proc

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)


def _kill_after(run: _Run, settings: Settings, decided: int, delay_s: float) -> bool:
    """Starts the run and kills it once ``decided`` days are journaled and ``delay_s`` has
    passed. True when it was killed (not finished first)."""
    proc = run.start()
    while _decided(settings, "drill") < decided and proc.poll() is None:
        time.sleep(0.01)
    time.sleep(delay_s)
    run.kill()
    return proc.wait(timeout=300) == -signal.SIGKILL


def _drill(
    settings: Settings, policy: int, broker: str, server: FakeAlpaca | None
) -> tuple[int, dict]:
    """Kills the run at KILLS points, then lets it finish; returns how many kills landed and
    the finished run's report."""
    env = {}
    if server is not None:
        env = {"ALPHALOOP_ALPACA_API_KEY": KEY, "ALPHALOOP_ALPACA_SECRET_KEY": SECRET,
               "ALPHALOOP_ALPACA_BASE_URL": server.base_url}  # fmt: skip
    run, rng = _Run(settings, policy, broker, env), np.random.default_rng(22)
    points = np.sort(rng.choice(np.arange(1, DAYS), size=KILLS, replace=False))
    landed = 0
    for i, point in enumerate(points):
        if server is not None and i % 2:  # at the broker: the order is sent, not journaled
            target = len(server.orders) + int(rng.integers(1, 4))
            server.on_order = lambda _o, t=target: len(server.orders) >= t and run.kill()
            landed += _kill_after(run, settings, DAYS + 1, 0.0)
            server.on_order = None
        else:
            landed += _kill_after(run, settings, int(point), float(rng.uniform(0, 0.15)))
    done = run.start()
    out, err = done.communicate(timeout=600)
    assert done.returncode == 0, err.decode()[-2000:]
    return landed, json.loads(out)


def _ledger(settings: Settings, book: str) -> tuple:
    with Journal(settings.journal_path) as journal:
        held = journal.books.get(book)
        decisions = sorted(journal.books.list_decisions(book), key=lambda d: d.date)
        fills = journal.books.list_fills(book)
        pending = journal.books.pending_tick(book)
    return held, decisions, fills, pending


@pytest.mark.slow
@pytest.mark.parametrize("broker", ["paper", "alpaca"])
def test_pm_run_killed_20_times_ends_as_an_uninterrupted_run(
    settings: Settings, broker: str
) -> None:
    settings.home.mkdir(parents=True)
    with Journal(settings.journal_path) as journal:
        policy = add_policy(journal, settings, "mean_cvar").id
    start, end = _window()
    closes = {str(s): float(v) for s, v in load_prices(DATA).loc[:start].iloc[-2].items()}
    with FakeAlpaca(prices=closes) as calm, FakeAlpaca(prices=closes) as killed:
        reference = settings.model_copy(
            update={"alpaca_api_key": KEY, "alpaca_secret_key": SECRET,
                    "alpaca_base_url": calm.base_url}
        )  # fmt: skip
        report = ops_pm.pm_run(
            reference, start=start, end=end, policy_id=policy, book="calm", broker=broker
        )
        landed, final = _drill(settings, policy, broker, killed if broker == "alpaca" else None)
        calm_posts = [b for m, p, b in calm.requests if m == "POST"]
        posts = [b["client_order_id"] for m, p, b in killed.requests if m == "POST"]
        if broker == "alpaca":
            assert (killed.cash, killed.positions) == (calm.cash, calm.positions)
            assert len(posts) == len(set(posts)) == len(calm_posts)  # none sent twice
    assert landed >= KILLS // 2  # most kills hit a live run (the rest found it finished)
    calm_book, calm_decisions, calm_fills, _ = _ledger(settings, "calm")
    book, decisions, fills, pending = _ledger(settings, "drill")
    assert pending is None
    assert [d.date for d in decisions] == report.dates  # one decision a day, none missing
    assert len(fills) == len(calm_fills) == sum(len(d.fills) for d in calm_decisions)
    assert book.positions == pytest.approx(calm_book.positions, rel=1e-9, abs=1e-9)
    assert book.cash == pytest.approx(calm_book.cash, rel=1e-9, abs=1e-6)
    assert final["dates"] == report.dates
    assert final["equity"] == pytest.approx(report.equity, rel=1e-9)
    equity = [d.equity_before for d in decisions]
    assert equity == pytest.approx([d.equity_before for d in calm_decisions], rel=1e-9)
