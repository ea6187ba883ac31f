"""What a broker does for the portfolio manager: report holdings, execute a tick's orders."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from alphaloop.journal.book import BookRecord

__all__ = ["Broker", "Execution", "Order", "OrderPlan"]


class Order(BaseModel):
    """Buy (``shares`` > 0) or sell ``shares`` of ``symbol`` at ``price``, paying ``cost``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    symbol: str
    shares: float
    price: float
    cost: float

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


class Broker(Protocol):
    name: str

    def holdings(self, book: BookRecord) -> tuple[float, dict[str, float]]:
        """Cash and shares by symbol the book holds now."""
        ...

    def execute(self, plan: OrderPlan) -> Execution:
        """Sends the plan's orders; never retries a rejected one."""
        ...
