"""Orders from weights, and ticks through the command line: each kill-switch reason stops the
orders and is journaled; a tick that trades leaves the book at its target."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from alphaloop import library
from alphaloop.cli import app
from alphaloop.journal import Journal
from alphaloop.pm import weights_to_orders
from alphaloop.settings import Settings
from alphaloop.trials import EVALUATOR_VERSION
from tests.pm.helpers import add_policy

DAY, NEXT = "2013-07-01", "2013-07-02"


def test_orders_by_hand() -> None:
    # 1,000 in cash to 50% A at 10 and 30% B at 20, 10 bps on turnover 0.8 at equity 1,000:
    # cost 0.8, 999.2 invested at the weights, the rest cash.
    plan = weights_to_orders({"A": 0.5, "B": 0.3}, {}, 1000.0, {"A": 10.0, "B": 20.0}, cost_bps=10)
    assert plan.turnover == pytest.approx(0.8) and plan.cost == pytest.approx(0.8)
    assert plan.positions == pytest.approx({"A": 49.96, "B": 14.988})
    assert plan.cash == pytest.approx(1000 - 499.6 - 299.76 - 0.8)
    whole = weights_to_orders(
        {"A": 0.5, "B": 0.3}, {}, 1000.0, {"A": 10.0, "B": 20.0}, cost_bps=10, fractional=False
    )
    assert whole.positions == {"A": 49.0, "B": 14.0}
    # Orders sum to the target within one share's price.
    for sym, w, px in (("A", 0.5, 10.0), ("B", 0.3, 20.0)):
        assert abs(whole.positions[sym] * px / 1000 - w) <= px / 1000 + 1e-12
    small = weights_to_orders(
        {"A": 0.5, "B": 0.5}, {"A": 50.0, "B": 24.9}, 2.0, {"A": 10.0, "B": 20.0},
        cost_bps=0, min_trade=5.0,
    )  # fmt: skip
    assert small.orders == []  # B is 2 below its target: under the minimum trade


def _tick(*args: str) -> dict:
    result = CliRunner().invoke(app, ["pm", "tick", "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def active(settings: Settings) -> Settings:
    settings.home.mkdir(parents=True, exist_ok=True)
    with Journal(settings.journal_path) as journal:
        policy = add_policy(journal, settings, "mean_cvar")
        library.activate(journal, settings, policy.id)
    return settings


def test_a_tick_trades_to_its_target_and_journals_it(active: Settings) -> None:
    decision = _tick("--date", DAY)
    assert decision["status"] == "sent" and decision["orders"]
    with Journal(active.journal_path) as journal:
        book = journal.books.get("main")
        row = journal.books.get_decision(decision["id"])
    assert row.fills and len(row.fills) == len(row.orders)
    assert row.stages["state"]["step"] == 1
    assert row.evaluator_version == EVALUATOR_VERSION
    # The whole book is invested at the target (fractional paper shares) less the cost, but
    # for trades under pm_min_trade (1.0 on a 100,000 book).
    closes = {o["symbol"]: o["price"] for o in row.orders}
    value = {s: q * closes[s] for s, q in book.positions.items()}
    total = sum(value.values()) + book.cash
    for sym, w in row.target_weights.items():
        assert value.get(sym, 0.0) / total == pytest.approx(w, abs=1e-5)


@pytest.mark.parametrize("reason", ["manual", "turnover", "drawdown", "stale"])
def test_every_halt_reason_sends_nothing(active: Settings, reason: str, clean_env) -> None:
    args = ["--date", DAY]
    if reason == "manual":
        halted = CliRunner().invoke(app, ["pm", "halt", "--why", "earnings", "--json"])
        assert halted.exit_code == 0, halted.output
    elif reason == "turnover":
        clean_env.setenv("ALPHALOOP_PM_MAX_TURNOVER", "0.5")  # the first buy is turnover 1
    elif reason == "drawdown":
        _tick("--date", DAY)
        with Journal(active.journal_path) as journal:
            book = journal.books.get("main")
            journal.books.update(
                "main", cash=book.cash, positions=book.positions,
                peak_equity=book.peak_equity * 2, as_of=book.as_of,
            )  # fmt: skip
        args = ["--date", NEXT]
    else:
        args = ["--date", "2013-08-01", "--data", str(_truncated_data(active))]
    decision = _tick(*args)
    expected = {
        "manual": "manual halt: earnings",
        "turnover": "exceeds pm_max_turnover",
        "drawdown": "exceeds pm_max_drawdown",
        "stale": "stale prices",
    }[reason]
    assert decision["status"] == "halted" and expected in decision["halt_reason"]
    assert decision["fills"] == []
    with Journal(active.journal_path) as journal:
        fills = journal.books.list_fills("main")
        first = journal.books.list_decisions("main")[-1]
    assert len(fills) == (len(first.fills) if reason == "drawdown" else 0)
    if reason == "manual":
        assert decision["orders"]  # what it would have sent, journaled as held back
        said = CliRunner().invoke(app, ["pm", "status"]).stdout
        assert (
            f"{DAY} halted (manual halt: earnings), {len(decision['orders'])} orders held back"
            in said
        )
        CliRunner().invoke(app, ["pm", "resume", "--why", "earnings are out"])
        # The halted day keeps its decision; the book trades again from the next day, toward
        # the policy's target: the halt paused the rebalance clock, it did not leave the book
        # holding (in cash, until the next rebalance) a target it never bought.
        assert _tick("--date", DAY) == decision
        after = _tick("--date", NEXT)
        assert after["status"] == "sent" and after["orders"] and after["fills"]
        with Journal(active.journal_path) as journal:
            book = journal.books.get("main")
            row = journal.books.get_decision(after["id"])
        assert decision["stages"]["state"] is None  # the book's first tick: nothing to hand on
        assert row.stages["state"]["step"] == 1  # decided as the first day of the sequence
        assert set(book.positions) == {s for s, w in row.target_weights.items() if w > 1e-5}


def _truncated_data(settings: Settings):
    from alphaloop.market import load_prices

    path = settings.home / "prices.csv"
    load_prices("synthetic:3").loc[:"2013-07-15"].to_csv(path, index_label="date")
    return path


def test_status_shows_the_book(active: Settings) -> None:
    _tick("--date", DAY)
    result = CliRunner().invoke(app, ["pm", "status", "--json"])
    assert result.exit_code == 0, result.output
    status = json.loads(result.stdout)
    assert status["book"]["name"] == "main" and len(status["decisions"]) == 1
    assert status["equity"] > 0


def test_review_lists_live_decisions_not_deployment_checks(active: Settings) -> None:
    check = CliRunner().invoke(app, ["pm", "run", "--start", DAY, "--end", "2013-07-05", "--json"])
    assert check.exit_code == 0, check.output
    live = _tick("--date", DAY)
    review = CliRunner().invoke(app, ["pm", "review", "--json"])
    assert review.exit_code == 0, review.output
    listed = json.loads(review.stdout)
    items = listed if isinstance(listed, list) else listed["decisions"]
    assert [d["id"] for d in items] == [live["id"]]
    with Journal(active.journal_path) as journal:
        assert {b.name: b.purpose for b in journal.books.list()}["main"] == "live"
        assert sum(b.purpose == "check" for b in journal.books.list()) == 1
