"""From target weights to orders against the current book (:func:`weights_to_orders`).

Accounting is the evaluator's: the book trades at the close the decision is priced at, pays
``cost_bps`` on the one-way weight turnover ``sum |w_target - w_held|`` at the pre-trade equity,
and invests what is left at the target weights (cash takes ``1 - sum(w_target)``). With
fractional shares and no minimum trade the book then holds exactly the evaluator's weights.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from alphaloop.broker.base import Order, OrderPlan

__all__ = ["Order", "OrderPlan", "weights_to_orders"]


def weights_to_orders(
    target: dict[str, float],
    positions: dict[str, float],
    cash: float,
    prices: dict[str, float],
    *,
    cost_bps: float,
    min_trade: float = 0.0,
    fractional: bool = True,
) -> OrderPlan:
    """Orders that move the book (``positions`` in shares, ``cash``) to ``target`` weights.

    Args:
        target: weight by symbol (their sum is at most 1; the rest is cash).
        positions: shares held by symbol.
        cash: cash held.
        prices: the price every order fills at, by symbol.
        cost_bps: cost per unit of one-way weight turnover, charged on the pre-trade equity.
        min_trade: orders smaller than this notional are dropped (that asset keeps its shares).
        fractional: fractional shares; otherwise target share counts round toward zero, so
            the book never buys more than the target.

    Raises:
        ValueError: a symbol without a positive price, or weights that are negative or sum
            above 1.
    """
    symbols, w, px, held, equity = _book(target, positions, cash, prices)
    rate = cost_bps / 1e4
    now_w = held * px / equity
    trade = np.abs(w - now_w) * equity >= min_trade if min_trade > 0 else np.ones(len(w), bool)
    # Assets whose trade is too small keep their shares (and their current weight).
    w_eff = np.where(trade, w, now_w)
    turnover = float(np.abs(w_eff - now_w).sum())
    invest = _investable(equity, rate * equity * turnover, w, now_w, trade)
    new = np.where(trade, w_eff * invest / px, held)
    if not fractional:
        new = np.where(trade, np.trunc(new), held)
    delta = new - held
    orders, total_cost = [], 0.0
    for i, s in enumerate(symbols):
        if not trade[i] or delta[i] == 0:
            continue
        cost = (
            rate * equity * abs(w_eff[i] - now_w[i]) if fractional else rate * abs(delta[i]) * px[i]
        )
        total_cost += cost
        orders.append(Order(symbol=s, shares=float(delta[i]), price=float(px[i]), cost=cost))
    new_cash = float(cash - delta @ px - total_cost)
    if not fractional:
        turnover = float(np.abs(delta * px).sum() / equity)
    kept = {s: float(q) for s, q in zip(symbols, new, strict=True) if q != 0}
    return OrderPlan(
        orders=orders,
        equity=equity,
        turnover=turnover,
        cost=total_cost,
        positions=kept,
        cash=new_cash,
    )


def _investable(
    equity: float, cost: float, w: np.ndarray, now_w: np.ndarray, trade: np.ndarray
) -> float:
    """What the traded assets' target weights are taken of: the equity less the cost, as the
    evaluator invests it, but never more than the cash the kept assets and the cost leave (with
    a trade dropped under ``min_trade``, investing the full weights would overdraw the cash)."""
    invest = equity - cost
    traded, kept = float(w[trade].sum()), float(now_w[~trade].sum())
    if traded > 0 and invest * traded + equity * kept > invest:
        invest = (invest - equity * kept) / traded
    return invest


class _Book(NamedTuple):
    """The book and its target as arrays over one sorted list of symbols."""

    symbols: list[str]
    target: np.ndarray
    prices: np.ndarray
    held: np.ndarray
    equity: float


def _book(
    target: dict[str, float],
    positions: dict[str, float],
    cash: float,
    prices: dict[str, float],
) -> _Book:
    """The target and holdings over every symbol either names, refused unless tradable."""
    symbols = sorted(set(target) | {s for s, q in positions.items() if q})
    missing = [s for s in symbols if not prices.get(s, 0) > 0]
    if missing:
        raise ValueError(f"no positive price for {', '.join(missing)}")
    w = np.array([float(target.get(s, 0.0)) for s in symbols])
    if (w < 0).any() or w.sum() > 1 + 1e-9:
        raise ValueError(f"target weights must be >= 0 and sum to at most 1, got sum {w.sum():g}")
    px = np.array([prices[s] for s in symbols])
    held = np.array([float(positions.get(s, 0.0)) for s in symbols])
    equity = float(cash + held @ px)
    if equity <= 0:
        raise ValueError(f"the book has no equity to trade with ({equity:g})")
    return _Book(symbols, w, px, held, equity)
