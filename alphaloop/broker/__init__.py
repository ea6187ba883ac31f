"""Brokers the portfolio manager sends orders to: the embedded paper ledger and Alpaca paper
trading."""

from alphaloop.broker.base import Broker, Execution, Order, OrderPlan
from alphaloop.broker.paper import PaperBroker

__all__ = ["Broker", "Execution", "Order", "OrderPlan", "PaperBroker", "broker_for"]


def broker_for(name: str, settings: object) -> Broker:
    """The broker called ``name`` (``paper`` or ``alpaca``)."""
    if name == "paper":
        return PaperBroker()
    if name == "alpaca":
        from alphaloop.broker.alpaca import AlpacaBroker

        return AlpacaBroker(settings)  # type: ignore[arg-type]
    raise ValueError(f"unknown broker {name!r}; choose paper or alpaca")
