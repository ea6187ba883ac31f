"""A tick is a transaction, once per (book, day): ticks never go back in time, a day decided
again returns its decision, orders are named and journaled before the broker is called, an
interrupted tick is settled by asking the broker by name, ticks of a book are serialised, and
a day a tick cannot decide is a usage error."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from alphaloop import library
from alphaloop.broker import PaperBroker
from alphaloop.broker.alpaca import AlpacaBroker
from alphaloop.broker.base import Execution, OrderPlan, client_order_id
from alphaloop.cli import app
from alphaloop.exceptions import Conflict, InvalidRequest
from alphaloop.journal import Journal
from alphaloop.market import load_prices
from alphaloop.ops import pm as ops_pm
from alphaloop.pm.dates import tick_day
from alphaloop.pm.lock import book_lock
from alphaloop.settings import Settings
from tests.fake_alpaca import KEY, SECRET, FakeAlpaca
from tests.pm.helpers import DATA, add_policy

DAY, NEXT, LATER = "2013-07-01", "2013-07-02", "2013-07-03"


@pytest.fixture
def active(settings: Settings) -> Settings:
    settings.home.mkdir(parents=True, exist_ok=True)
    with Journal(settings.journal_path) as journal:
        policy = add_policy(journal, settings, "mean_cvar")
        library.activate(journal, settings, policy.id)
    return settings


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["pm", "tick", "--json", *args])
    return result.exit_code, result.output


def test_a_day_not_after_the_last_tick_is_refused_and_the_same_day_is_idempotent(
    active: Settings,
) -> None:
    code, out = _cli("--date", NEXT)
    assert code == 0, out
    first = json.loads(out)
    code, again = _cli("--date", NEXT)
    assert code == 0 and json.loads(again) == first  # the journaled decision, unchanged
    code, out = _cli("--date", DAY)
    assert code == 2 and "only ticks forward" in out
    with Journal(active.journal_path) as journal:
        other = add_policy(journal, active, "mean_cvar", seed=9)
        library.activate(journal, active, other.id)
    code, out = _cli("--date", NEXT)
    assert code == 2 and "decided 2013-07-02 already" in out
    with Journal(active.journal_path) as journal:
        assert [d.date for d in journal.books.list_decisions("main")] == [NEXT]
        assert journal.books.get("main").as_of == NEXT


class _Spy(PaperBroker):
    """The paper broker, reporting what the journal held when it was called."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.seen: list = []

    def execute(self, plan: OrderPlan, *, recover: bool = False) -> Execution:
        with Journal(self.settings.journal_path) as journal:
            self.seen.append(journal.books.pending_tick("main"))
        return super().execute(plan, recover=recover)


def test_orders_are_named_and_journaled_before_the_broker_is_called(
    active: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = _Spy(active)
    monkeypatch.setattr(ops_pm, "broker_for", lambda name, settings: spy)
    decision = ops_pm.pm_tick(active, date=DAY)
    pending = spy.seen[0]
    assert pending is not None and pending.date == DAY
    names = [o["client_order_id"] for o in pending.plan["orders"]]
    sides = ["buy" if o["shares"] > 0 else "sell" for o in pending.plan["orders"]]
    symbols = [o["symbol"] for o in pending.plan["orders"]]
    assert names == [
        client_order_id("main", DAY, s, side) for s, side in zip(symbols, sides, strict=True)
    ]
    assert [o["client_order_id"] for o in decision.orders] == names
    with Journal(active.journal_path) as journal:
        assert journal.books.pending_tick("main") is None  # settled with the decision


class _Crash(BaseException):
    pass


def test_an_interrupted_alpaca_tick_is_settled_by_client_order_id(
    active: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    prices = load_prices(DATA)
    closes = {str(s): float(v) for s, v in prices.loc[:"2013-06-28"].iloc[-1].items()}
    with FakeAlpaca(prices=closes) as server:
        alpaca = active.model_copy(
            update={"alpaca_api_key": KEY, "alpaca_secret_key": SECRET,
                    "alpaca_base_url": server.base_url, "broker": "alpaca"}
        )  # fmt: skip
        sent: list[str] = []

        def crash_after_two(order: dict) -> None:
            sent.append(order["client_order_id"])
            if len(sent) == 2:
                raise _Crash  # the process dies with two orders at Alpaca, none journaled

        real_submit = AlpacaBroker._submit

        def submit(self, order):
            placed = real_submit(self, order)
            crash_after_two({"client_order_id": order.client_order_id})
            return placed

        monkeypatch.setattr(AlpacaBroker, "_submit", submit)
        with pytest.raises(_Crash):
            ops_pm.pm_tick(alpaca, date=DAY)
        monkeypatch.setattr(AlpacaBroker, "_submit", real_submit)
        with Journal(active.journal_path) as journal:
            pending = journal.books.pending_tick("main")
            assert pending is not None and journal.books.list_decisions("main") == []
        decision = ops_pm.pm_tick(alpaca, date=NEXT)  # settles DAY first, then decides NEXT
        posts = [b["client_order_id"] for m, p, b in server.requests if m == "POST"]
    assert len(posts) == len(set(posts))  # no order reached Alpaca twice
    with Journal(active.journal_path) as journal:
        decisions = journal.books.list_decisions("main")
    assert [d.date for d in decisions] == [NEXT, DAY] and decision.date == NEXT
    settled = decisions[1]
    assert [o["client_order_id"] for o in settled.orders] == [
        o["client_order_id"] for o in pending.plan["orders"]
    ]
    assert all(o["status"] == "filled" for o in settled.orders)
    assert set(sent) <= set(posts)


def test_a_tick_whose_orders_were_all_rejected_is_decided_again_the_next_day(
    active: Settings,
) -> None:
    prices = load_prices(DATA)
    closes = {str(s): float(v) for s, v in prices.loc[:NEXT].iloc[-2].items()}
    with FakeAlpaca(prices=closes) as server:
        alpaca = active.model_copy(
            update={"alpaca_api_key": KEY, "alpaca_secret_key": SECRET,
                    "alpaca_base_url": server.base_url, "broker": "alpaca"}
        )  # fmt: skip
        for _ in prices.columns:
            server.fail_next("/v2/orders", 403, {"code": 40310000, "message": "account blocked"})
        failed = ops_pm.pm_tick(alpaca, date=DAY)
        server.failures.clear()
        retried = ops_pm.pm_tick(alpaca, date=NEXT)
    assert failed.status == "failed" and failed.orders and not failed.fills
    assert "account blocked" in (failed.error or "")
    # Nothing was bought on DAY: NEXT decides as the first day of the sequence again and trades
    # toward the target, instead of holding (in cash) a target the book never bought.
    assert failed.stages["state"] is None
    assert retried.status == "sent" and retried.fills
    assert retried.stages["state"]["step"] == 1


def test_ticks_of_one_book_are_serialised(tmp_path: Path) -> None:
    with book_lock(tmp_path, "main"):
        with pytest.raises(Conflict, match="being ticked by another process"):
            with book_lock(tmp_path, "main", wait_s=0.2):
                pass
        with book_lock(tmp_path, "other", wait_s=0.2):  # another book is not held up
            pass
    with book_lock(tmp_path, "main", wait_s=0.2):
        pass


def test_bad_days_are_named(active: Settings) -> None:
    dates = load_prices(DATA).index.drop(load_prices(DATA).index[5])  # a "holiday"
    holiday = str(load_prices(DATA).index[5].date())
    for text, why in (
        ("2022-13-45", "is not a date"),
        ("July 1st", "is not a date"),
        ("2013-07-06", "is a Saturday"),
        (holiday, "not a trading day of the data (a holiday)"),
        (str(dates[0].date()), "outside the data"),
        ("1990-01-02", "outside the data"),
        ("2099-01-02", "is in the future: a tick decides at most the next trading day"),
    ):
        with pytest.raises(InvalidRequest, match=re.escape(why)):
            tick_day(text, dates)
    tomorrow = pd.Timestamp.today().normalize() + pd.offsets.BDay(1)
    assert tick_day(str(tomorrow.date()), dates) == tomorrow  # decided after today's close
    for text in ("2022-13-45", "2013-07-06", "1990-01-02", "2099-01-02"):
        code, out = _cli("--date", text)
        assert code == 2, out
        assert "Traceback" not in out
    with Journal(active.journal_path) as journal:
        assert journal.books.list_decisions("main") == []


def test_halt_and_resume_are_journaled_with_reason_and_origin(active: Settings) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["pm", "halt", "--why", "earnings week"]).exit_code == 0
    assert runner.invoke(app, ["pm", "halt", "--why", " "]).exit_code == 2
    ops_pm.pm_resume(active, why="earnings are out", origin="api")
    status = json.loads(runner.invoke(app, ["pm", "status", "--json"]).stdout)
    assert [(e["kind"], e["reason"], e["origin"]) for e in status["events"]] == [
        ("resume", "earnings are out", "api"),
        ("halt", "earnings week", "cli"),
    ]
    text = " ".join(runner.invoke(app, ["pm", "status"]).stdout.split())
    assert "halt (cli): earnings week" in text and "resume (api): earnings are out" in text
