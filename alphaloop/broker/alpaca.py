"""Alpaca paper trading through ``alpaca-py``'s ``TradingClient``.

Holdings come from ``GET /v2/account`` and ``GET /v2/positions``; each order is one market
``POST /v2/orders`` (day order, whole or fractional ``qty``), then ``GET /v2/orders/{id}`` reads
whether it filled. Every order carries its ``client_order_id``; a tick finishing the work of one
that was interrupted first asks ``GET /v2/orders:by_client_order_id`` and sends only the orders
Alpaca never received. A rate limit (429) is retried the way alpaca-py does it (3 attempts, 3 s
apart); any other error response rejects the order: it is journaled with Alpaca's code and
message and never sent again blind (the next tick plans from the holdings Alpaca reports).
"""

from __future__ import annotations

from typing import Any

from alphaloop.broker.base import Execution, Order, OrderPlan
from alphaloop.exceptions import Unavailable
from alphaloop.journal.books import BookRecord
from alphaloop.settings import Settings

__all__ = ["AlpacaBroker"]


class AlpacaBroker:
    name = "alpaca"

    def __init__(self, settings: Settings) -> None:
        if not settings.alpaca_api_key or not settings.alpaca_secret_key:
            raise Unavailable(
                "the Alpaca broker needs ALPHALOOP_ALPACA_API_KEY and "
                "ALPHALOOP_ALPACA_SECRET_KEY (paper-trading keys from the Alpaca dashboard)"
            )
        from alpaca.trading.client import TradingClient

        self.client = TradingClient(
            settings.alpaca_api_key,
            settings.alpaca_secret_key,
            paper=True,
            url_override=settings.alpaca_base_url,
        )

    def holdings(self, book: BookRecord) -> tuple[float, dict[str, float]]:
        from alpaca.common.exceptions import APIError

        try:
            account = self.client.get_account()
            positions = self.client.get_all_positions()
        except APIError as err:
            raise Unavailable(f"Alpaca refused to report the account: {_why(err)}") from None
        held = {p.symbol: float(p.qty) for p in positions}
        return float(account.cash or 0.0), held

    def execute(self, plan: OrderPlan, *, recover: bool = False) -> Execution:
        orders: list[dict[str, Any]] = []
        fills: list[dict[str, Any]] = []
        for order in plan.orders:
            entry: dict[str, Any] = order.model_dump()
            placed = self._known(order.client_order_id) if recover else None
            if placed is None:
                placed, error = self._submit(order)
                if error is not None:
                    orders.append({**entry, "status": "rejected", "error": error})
                    continue
            entry |= {"broker_order_id": str(placed.id), "status": str(placed.status.value)}
            orders.append(entry)
            filled = float(placed.filled_qty or 0)
            if filled > 0 and placed.filled_avg_price is not None:
                sign = 1.0 if order.shares > 0 else -1.0
                fills.append(
                    {
                        "symbol": order.symbol,
                        "shares": sign * filled,
                        "price": float(placed.filled_avg_price),
                        "cost": 0.0,  # Alpaca charges no commission; slippage is in the price
                        "broker_order_id": str(placed.id),
                    }
                )
        return Execution(orders=orders, fills=fills)

    def _submit(self, order: Order) -> tuple[Any, str | None]:
        """Sends one market order under its client order id: Alpaca's order, or why not."""
        from alpaca.common.exceptions import APIError
        from alpaca.trading.enums import OrderSide, TimeInForce
        from alpaca.trading.requests import MarketOrderRequest

        request = MarketOrderRequest(
            symbol=order.symbol,
            qty=round(abs(order.shares), 9),
            side=OrderSide.BUY if order.shares > 0 else OrderSide.SELL,
            time_in_force=TimeInForce.DAY,
            client_order_id=order.client_order_id,
        )
        try:
            sent = self.client.submit_order(request)
            return self.client.get_order_by_id(sent.id), None
        except APIError as err:
            return None, _why(err)

    def _known(self, client_id: str | None) -> Any:
        """Alpaca's order named ``client_id``, or None when Alpaca never received it."""
        from alpaca.common.exceptions import APIError

        if client_id is None:
            return None
        try:
            return self.client.get_order_by_client_id(client_id)
        except APIError as err:
            if getattr(err, "status_code", None) == 404:
                return None
            raise Unavailable(
                f"Alpaca refused to look up order {client_id}: {_why(err)}; nothing was sent"
            ) from None


def _why(err: Exception) -> str:
    code = getattr(err, "status_code", None)
    return f"HTTP {code}: {err}" if code else str(err)
