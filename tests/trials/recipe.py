"""The hand-built re-split callers used before :func:`alphaloop.trials.evaluate`, kept as the
oracle its explicit windows are checked against."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from alphaloop.knobs import TrialConfig
from alphaloop.market import MarketData
from alphaloop.metrics import Metrics
from alphaloop.trials import Backtest, TrialBudget, baselines, simulate, strategy_targets


def by_hand(
    mode: str,
    config: TrialConfig,
    data: MarketData,
    rows: slice,
    budget: TrialBudget,
    seed: int,
    *,
    policy_path: str | Path | None = None,
    train: slice | None = None,
    cost_bps: float | None = None,
) -> tuple[Backtest, dict[str, Metrics]]:
    """The book and baselines of ``rows`` as the callers once built them by hand."""
    fields = {"val": rows} if train is None else {"train": train, "val": rows}
    sub = dataclasses.replace(data, **fields)
    targets, rebalance, _ = strategy_targets(
        mode, config, sub, "validation", budget, seed, policy_path=policy_path
    )
    bps = budget.eval_cost_bps if cost_bps is None else cost_bps
    book = simulate(data.returns[rows], targets, rebalance, bps)
    return book, baselines(sub, "validation", budget)
