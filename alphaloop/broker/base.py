"""What a broker does for the portfolio manager: report holdings, execute a tick's orders."""

from __future__ import annotations

import hashlib
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from alphaloop.journal.books import BookRecord

__all__ = ["Broker", "Execution", "Order", "OrderPlan", "client_order_id"]


class Order(BaseModel):
    """Buy (``shares`` > 0) or sell ``shares`` of ``symbol`` at ``price``, paying ``cost``.

    ``client_order_id`` names the order before it is sent (:func:`client_order_id`): a retry or a
    restart asks the broker by that name instead of sending the order again.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    symbol: str
    shares: float
    price: float
    cost: float
    client_order_id: str | None = None

    @property
    def notional(self) -> float:
        return self.shares * self.price


class OrderPlan(BaseModel):
    """The orders of one tick and what the book holds once they fill."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    orders: list[Order]
    equity: float
    turnover: float
    cost: float
    positions: dict[str, float]
    cash: float


class Execution(BaseModel):
    """What became of a tick's orders: each order with its status (``filled``, ``accepted``,
    ``rejected``) and the broker's id or error, and the fills (symbol, signed shares, price,
    cost, broker order id)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    orders: list[dict[str, Any]]
    fills: list[dict[str, Any]]

    @property
    def rejected(self) -> list[dict[str, Any]]:
        return [o for o in self.orders if o["status"] == "rejected"]


def client_order_id(book: str, date: str, symbol: str, side: str) -> str:
    """The name of the order of ``book`` on ``date`` that buys or sells ``symbol``: the same
    inputs always give the same name, so a resent order is one the broker already knows.
    Hashed so the name stays short (Alpaca takes at most 128 characters) and holds none of the
    book name's characters."""
    digest = hashlib.sha256(f"{book}|{date}|{symbol}|{side}".encode()).hexdigest()
    return f"al-{digest[:40]}"


class Broker(Protocol):
    name: str

    def holdings(self, book: BookRecord) -> tuple[float, dict[str, float]]:
        """Cash and shares by symbol the book holds now."""
        ...

    def execute(self, plan: OrderPlan, *, recover: bool = False) -> Execution:
        """Sends the plan's orders; never retries a rejected one. With ``recover`` (the plan
        was journaled by a tick that did not finish) each order is first looked up by its
        ``client_order_id`` and only sent if the broker never received it."""
        ...
