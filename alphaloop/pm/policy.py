"""From a library entry to what a book ticks with (:func:`setup_for`) and to the evaluator's
backtest of the same strategy on a window (:func:`evaluator_equity`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from alphaloop.exceptions import Conflict, InvalidRequest
from alphaloop.journal.policies import PolicyRecord
from alphaloop.knobs import TrialConfig
from alphaloop.library import load_ppo, verified_policy_file
from alphaloop.market import MarketData, load_prices, select_symbols, split
from alphaloop.pipeline import pipeline_for
from alphaloop.pm.killswitch import KillSwitch
from alphaloop.pm.manager import TickSetup
from alphaloop.trials import PolicySubject, Rows, evaluate

__all__ = ["MODE_OF_KIND", "evaluator_equity", "load_data", "setup_for"]

MODE_OF_KIND = {"ppo": "ppo_only", "mean_cvar": "cufolio_only", "unified": "unified"}


def load_data(record: PolicyRecord, data: str | None) -> tuple[pd.DataFrame, MarketData]:
    """The entry's prices (its own data, or ``data`` instead) on its symbols, and their split."""
    spec = record.data_spec
    if data is not None:
        spec = spec.model_copy(update={"data": data})
    prices = select_symbols(load_prices(spec.data, spec.fill, spec.date_format), record.symbols)
    return prices, split(prices, spec.train_end, spec.val_end, source=spec.data)


def setup_for(
    record: PolicyRecord,
    prices: pd.DataFrame,
    market: MarketData,
    limits: KillSwitch,
    *,
    min_trade: float,
    fractional: bool,
) -> TickSetup:
    """The entry's pipeline (its file hash-checked) and everything a tick of it needs."""
    budget = record.trial_budget
    model = load_ppo(record) if record.kind != "mean_cvar" else None
    pipeline = pipeline_for(
        MODE_OF_KIND[record.kind],
        TrialConfig(**record.config),
        market.n_assets,
        seed=record.seed,
        scenario_window=budget.scenario_window,
        cost_bps=budget.eval_cost_bps,
        model=model,
    )
    return TickSetup(
        policy_id=record.id,
        pipeline=pipeline,
        prices=prices,
        returns=market.returns,
        cost_bps=budget.eval_cost_bps,
        limits=limits,
        min_trade=min_trade,
        fractional=fractional,
    )


def window_rows(market: MarketData, start: str, end: str) -> slice:
    """Rows of ``market.returns`` dated ``start .. end`` (inclusive)."""
    if pd.Timestamp(end) < pd.Timestamp(start):
        raise InvalidRequest(f"--end {end} is before --start {start}")
    a = int(market.dates.searchsorted(pd.Timestamp(start), side="left"))
    b = int(market.dates.searchsorted(pd.Timestamp(end), side="right"))
    if b - a < 1:
        raise Conflict(f"no trading days between {start} and {end} in the data")
    if a < 1:
        raise Conflict(f"{start} is the data's first day: a tick needs a close before it")
    return slice(a, b)


def evaluator_equity(
    record: PolicyRecord, market: MarketData, rows: slice, initial: float
) -> np.ndarray:
    """The frozen evaluator's equity curve of the entry's strategy on ``rows``: its targets
    decided from the window's first day, backtested at the evaluation cost."""
    path = verified_policy_file(record) if record.kind != "mean_cvar" else None
    subject = PolicySubject(
        mode=MODE_OF_KIND[record.kind],  # type: ignore[arg-type]
        config=TrialConfig(**record.config),
        budget=record.trial_budget,
        seed=record.seed,
        policy_path=None if path is None else str(path),
    )
    book = evaluate(subject, Rows.of(rows), market)
    return initial * np.cumprod(1.0 + np.asarray(book.daily_returns))
