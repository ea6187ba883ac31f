"""A scripted Alpaca trading server for tests: real HTTP, Alpaca's REST wire format.

Serves ``GET /v2/account``, ``GET /v2/positions``, ``POST /v2/orders``, ``GET /v2/orders/{id}``
and ``GET /v2/orders:by_client_order_id`` the way Alpaca's paper endpoint does (string
decimals, UUID ids, ISO timestamps), checks the ``APCA-API-KEY-ID``/``APCA-API-SECRET-KEY``
headers (403 ``{"message": "forbidden."}`` otherwise), fills market orders at the price the test
set, and answers errors as Alpaca sends them: tests queue them with
:meth:`FakeAlpaca.fail_next` (``422 {"code": 42210000, "message": ...}``, ``429 {"message":
"rate limit exceeded"}``). A ``client_order_id`` sent twice is refused as Alpaca refuses it
(422). Every request is recorded; ``on_order`` (if set) is called with each new order after it
filled and before the answer leaves (a test kills its client there).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KEY, SECRET = "PKTEST", "SECRETTEST"


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class FakeAlpaca:
    """Start with ``with FakeAlpaca(cash=...) as server``; point alpaca-py at ``base_url``."""

    def __init__(self, cash: float = 100_000.0, prices: dict[str, float] | None = None) -> None:
        self.cash = cash
        self.prices = dict(prices or {})
        self.positions: dict[str, float] = {}
        self.orders: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str, Any]] = []
        self.failures: deque[tuple[str, int, dict[str, Any]]] = deque()
        self.on_order: Callable[[dict[str, Any]], None] | None = None
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake._handle(self, "GET", None)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                fake._handle(self, "POST", json.loads(self.rfile.read(length) or b"{}"))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def fail_next(self, path_prefix: str, status: int, body: dict[str, Any]) -> None:
        """The next request whose path starts with ``path_prefix`` gets this error."""
        self.failures.append((path_prefix, status, body))

    def __enter__(self) -> FakeAlpaca:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- wire format --------------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler, method: str, body: Any) -> None:
        path = h.path.split("?")[0]
        with self._lock:
            self.requests.append((method, path, body))
            if h.headers.get("APCA-API-KEY-ID") != KEY or (
                h.headers.get("APCA-API-SECRET-KEY") != SECRET
            ):
                return self._send(h, 403, {"message": "forbidden."})
            for i, (prefix, status, error) in enumerate(self.failures):
                if path.startswith(prefix):
                    del self.failures[i]
                    return self._send(h, status, error)
            if method == "GET" and path == "/v2/account":
                return self._send(h, 200, self._account())
            if method == "GET" and path == "/v2/positions":
                return self._send(h, 200, [self._position(s, q) for s, q in self.positions.items()])
            if method == "POST" and path == "/v2/orders":
                return self._order(h, body)
            if method == "GET" and path == "/v2/orders:by_client_order_id":
                query = dict(p.split("=", 1) for p in h.path.split("?", 1)[1].split("&"))
                named = [o for o in self.orders.values() if o["client_order_id"] == query.get(
                    "client_order_id")]  # fmt: skip
                if not named:
                    return self._send(h, 404, {"code": 40410000, "message": "order not found"})
                return self._send(h, 200, named[0])
            if method == "GET" and path.startswith("/v2/orders/"):
                order = self.orders.get(path.rsplit("/", 1)[1])
                if order is None:
                    return self._send(h, 404, {"code": 40410000, "message": "order not found"})
                return self._send(h, 200, order)
            return self._send(h, 404, {"code": 40410000, "message": "endpoint not found"})

    def _send(self, h: BaseHTTPRequestHandler, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        try:
            h.send_response(status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client was killed while it waited (what a crash drill does)

    def _account(self) -> dict[str, Any]:
        equity = self.cash + sum(q * self.prices[s] for s, q in self.positions.items())
        return {
            "id": str(uuid.uuid4()),
            "account_number": "PA0000TEST",
            "status": "ACTIVE",
            "currency": "USD",
            "cash": f"{self.cash:.2f}",
            "buying_power": f"{self.cash:.2f}",
            "portfolio_value": f"{equity:.2f}",
            "equity": f"{equity:.2f}",
            "pattern_day_trader": False,
            "trading_blocked": False,
            "transfers_blocked": False,
            "account_blocked": False,
            "created_at": _now(),
        }

    def _position(self, symbol: str, qty: float) -> dict[str, Any]:
        px = self.prices[symbol]
        return {
            "asset_id": str(uuid.uuid5(uuid.NAMESPACE_DNS, symbol)),
            "symbol": symbol,
            "exchange": "NASDAQ",
            "asset_class": "us_equity",
            "avg_entry_price": f"{px}",
            "qty": f"{qty}",
            "side": "long",
            "market_value": f"{qty * px}",
            "cost_basis": f"{qty * px}",
            "current_price": f"{px}",
        }

    def _order(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        symbol, side = body.get("symbol"), body.get("side")
        if symbol not in self.prices:
            return self._send(h, 422, {"code": 40010001, "message": f"asset {symbol} not found"})
        client_id = body.get("client_order_id") or str(uuid.uuid4())
        if any(o["client_order_id"] == client_id for o in self.orders.values()):
            return self._send(
                h, 422, {"code": 40010001, "message": "client_order_id must be unique"}
            )
        qty = float(body["qty"])
        sign = 1.0 if side == "buy" else -1.0
        px = self.prices[symbol]
        self.cash -= sign * qty * px
        self.positions[symbol] = self.positions.get(symbol, 0.0) + sign * qty
        stamp = _now()
        order = {
            "id": str(uuid.uuid4()),
            "client_order_id": client_id,
            "created_at": stamp,
            "updated_at": stamp,
            "submitted_at": stamp,
            "filled_at": stamp,
            "asset_id": str(uuid.uuid5(uuid.NAMESPACE_DNS, symbol)),
            "symbol": symbol,
            "asset_class": "us_equity",
            "qty": body["qty"],
            "filled_qty": body["qty"],
            "filled_avg_price": f"{px}",
            "order_class": "simple",
            "order_type": "market",
            "type": "market",
            "side": side,
            "time_in_force": body.get("time_in_force", "day"),
            "status": "filled",
            "extended_hours": False,
        }
        self.orders[order["id"]] = order
        if self.on_order is not None:
            self.on_order(order)
        return self._send(h, 200, order)
