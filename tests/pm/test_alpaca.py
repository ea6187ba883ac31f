"""The Alpaca adapter through the real ``alpaca-py`` client against a scripted Alpaca server."""

from __future__ import annotations

import pytest

from alphaloop.broker import OrderPlan
from alphaloop.broker.alpaca import AlpacaBroker
from alphaloop.broker.base import Order
from alphaloop.exceptions import Unavailable
from alphaloop.journal.books import BookRecord
from alphaloop.settings import Settings
from tests.fake_alpaca import KEY, SECRET, FakeAlpaca

BOOK = BookRecord(
    name="main", broker="alpaca", initial_cash=1e5, cash=1e5, positions={},
    peak_equity=1e5, created_at="x", updated_at="x",
)  # fmt: skip


def _plan(*orders: tuple[str, float]) -> OrderPlan:
    return OrderPlan(
        orders=[Order(symbol=s, shares=q, price=10.0, cost=0.0) for s, q in orders],
        equity=1e5, turnover=0.1, cost=0.0, positions={}, cash=0.0,
    )  # fmt: skip


def _broker(settings: Settings, server: FakeAlpaca, key: str = KEY) -> AlpacaBroker:
    return AlpacaBroker(
        settings.model_copy(
            update={
                "alpaca_api_key": key,
                "alpaca_secret_key": SECRET,
                "alpaca_base_url": server.base_url,
            }
        )
    )


def test_orders_fill_and_a_rejected_one_is_not_retried(settings: Settings) -> None:
    with FakeAlpaca(prices={"AAA": 10.0, "BBB": 20.0}) as server:
        broker = _broker(settings, server)
        server.fail_next("/v2/orders", 422, {"code": 40310000, "message": "insufficient qty"})
        done = broker.execute(_plan(("BBB", 5.0), ("AAA", 100.0), ("ZZZ", 1.0)))
        cash, held = broker.holdings(BOOK)
    statuses = [(o["symbol"], o["status"]) for o in done.orders]
    assert statuses == [("BBB", "rejected"), ("AAA", "filled"), ("ZZZ", "rejected")]
    assert "insufficient qty" in done.orders[0]["error"] and "422" in done.orders[0]["error"]
    assert done.fills == [
        {"symbol": "AAA", "shares": 100.0, "price": 10.0, "cost": 0.0,
         "broker_order_id": done.orders[1]["broker_order_id"]}
    ]  # fmt: skip
    posts = [r for r in server.requests if r[0] == "POST"]
    assert [p[2]["symbol"] for p in posts] == ["BBB", "AAA", "ZZZ"]  # BBB sent once only
    assert held == {"AAA": 100.0} and cash == pytest.approx(99_000.0)


@pytest.mark.slow
def test_a_rate_limit_is_retried_as_alpaca_py_does(settings: Settings) -> None:
    with FakeAlpaca(prices={"AAA": 10.0}) as server:
        server.fail_next("/v2/orders", 429, {"message": "rate limit exceeded"})
        done = _broker(settings, server).execute(_plan(("AAA", 1.0)))
    assert [o["status"] for o in done.orders] == ["filled"]
    assert [r[1] for r in server.requests if r[0] == "POST"] == ["/v2/orders"] * 2


def test_bad_keys_are_a_broker_error(settings: Settings) -> None:
    with FakeAlpaca() as server, pytest.raises(Unavailable, match="403"):
        _broker(settings, server, key="WRONG").holdings(BOOK)
    with pytest.raises(Unavailable, match="ALPACA_API_KEY"):
        AlpacaBroker(settings)
