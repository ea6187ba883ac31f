"""What a broker does for the portfolio manager: report holdings, execute a tick's orders."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict

from alphaloop.journal.book import BookRecord

if TYPE_CHECKING:
    from alphaloop.pm.orders import OrderPlan

__all__ = ["Broker", "Execution"]


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
