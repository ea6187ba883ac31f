"""The embedded paper broker: the journal's ``pm_books`` row is the account, every order fills
in full at its price with the plan's cost."""

from __future__ import annotations

from alphaloop.broker.base import Execution, OrderPlan
from alphaloop.journal.books import BookRecord

__all__ = ["PaperBroker"]


class PaperBroker:
    name = "paper"

    def holdings(self, book: BookRecord) -> tuple[float, dict[str, float]]:
        return book.cash, dict(book.positions)

    def execute(self, plan: OrderPlan, *, recover: bool = False) -> Execution:
        # The ledger is the journal's book row, written in the transaction that journals the
        # decision: an unfinished tick never reached it, so recovering is executing again.
        del recover
        orders, fills = [], []
        for i, order in enumerate(plan.orders):
            ref = f"paper-{i}"
            orders.append({**order.model_dump(), "status": "filled", "broker_order_id": ref})
            fills.append({**order.model_dump(), "broker_order_id": ref})
        return Execution(orders=orders, fills=fills)
