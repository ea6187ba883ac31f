"""The portfolio manager: ticks of the active policy's pipeline, the kill switch, orders from
weights, books in the journal, and deployment checks against the evaluator."""

from alphaloop.pm.killswitch import KillSwitch, halt_reason
from alphaloop.pm.manager import TickSetup, equity_at, stale_reason, tick
from alphaloop.pm.orders import Order, OrderPlan, weights_to_orders

__all__ = [
    "KillSwitch",
    "Order",
    "OrderPlan",
    "TickSetup",
    "equity_at",
    "halt_reason",
    "stale_reason",
    "tick",
    "weights_to_orders",
]
