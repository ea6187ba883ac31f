"""Properties of ``weights_to_orders`` over many generated books.

Written as seeded randomized checks: 2,000 cases drawn with ``numpy.random.default_rng`` (fixed
seeds, so a failure reproduces) in place of a property-testing library. Each case draws a book
(cash, share positions, prices), target weights summing to at most 1, a cost, a minimum trade
and fractional or whole shares. "Never negative" allows float round-off of 1e-9 of the equity.
"""

from __future__ import annotations

import numpy as np
import pytest

from alphaloop.pm import weights_to_orders

CASES = 2000


def _case(rng: np.random.Generator) -> dict:
    n = int(rng.integers(1, 8))
    symbols = [f"S{i}" for i in range(n)]
    prices = {s: float(rng.choice([rng.uniform(1, 20), rng.uniform(20, 2000)])) for s in symbols}
    held = rng.random(n) < 0.6
    positions = {
        s: float(rng.uniform(0, 300) if rng.random() < 0.5 else rng.integers(0, 300))
        for s, h in zip(symbols, held, strict=True)
        if h
    }
    weights = rng.dirichlet(np.ones(n)) * rng.choice([1.0, rng.uniform(0.3, 1.0)])
    weights[rng.random(n) < 0.2] = 0.0
    return {
        "target": {s: float(w) for s, w in zip(symbols, weights, strict=True)},
        "positions": positions,
        "cash": float(rng.choice([0.0, rng.uniform(0, 5e4), rng.uniform(5e4, 1e6)])),
        "prices": prices,
        "cost_bps": float(rng.choice([0.0, 10.0, rng.uniform(0, 50)])),
        "min_trade": float(rng.choice([0.0, 1.0, rng.uniform(0, 2000)])),
        "fractional": bool(rng.random() < 0.5),
    }


def _cases(seed: int):
    rng = np.random.default_rng(seed)
    while True:
        case = _case(rng)
        equity = case["cash"] + sum(q * case["prices"][s] for s, q in case["positions"].items())
        if equity > 1.0:
            yield case, equity


@pytest.mark.parametrize("seed", [0, 1])
def test_weights_to_orders_properties(seed: int) -> None:
    cases = _cases(seed)
    for _ in range(CASES // 2):
        case, equity = next(cases)
        plan = weights_to_orders(
            case["target"], case["positions"], case["cash"], case["prices"],
            cost_bps=case["cost_bps"], min_trade=case["min_trade"],
            fractional=case["fractional"],
        )  # fmt: skip
        px = case["prices"]
        eps = 1e-9 * equity
        # Cash never goes negative (whole-share rounding never buys more than the cash).
        assert plan.cash >= -eps, case
        # Money is conserved: what is held after, plus the cost, is the equity before.
        after = plan.cash + sum(q * px[s] for s, q in plan.positions.items())
        assert after + plan.cost == pytest.approx(equity, rel=1e-9, abs=1e-9), case
        # No position goes above its cap (its target weight of the equity), but for one whose
        # trade was too small to send (it keeps what it held, off by less than min_trade).
        for s, q in plan.positions.items():
            value, cap = q * px[s], case["target"].get(s, 0.0) * equity
            assert q >= 0 and value <= cap + case["min_trade"] + eps, (s, case)
        # Turnover and cost are what the orders trade.
        traded = sum(abs(o.shares) * o.price for o in plan.orders) / equity
        if not case["fractional"]:
            assert plan.turnover == pytest.approx(traded, rel=1e-9, abs=1e-12), case
            # A traded asset ends on whole shares (from a fractional holding too).
            held = [plan.positions.get(o.symbol, 0.0) for o in plan.orders]
            assert all(float(q).is_integer() for q in held), case
        assert plan.cost == pytest.approx(sum(o.cost for o in plan.orders), abs=1e-9), case
        rate = case["cost_bps"] / 1e4
        if case["fractional"]:
            assert plan.cost == pytest.approx(rate * equity * plan.turnover, abs=1e-9), case
