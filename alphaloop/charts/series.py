"""The series a portfolio chart draws, handed to the charts by whoever replays them.

The journal keeps a trial's daily returns and final weights but only the *metrics* of the
baselines, so the baselines' equity and a trial's weights day by day are recomputed by the frozen
evaluator (``alphaloop.ops.series``). Charts never run the evaluator: :func:`build_chart` takes a
:class:`SeriesSource` and draws what it returns.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict

from alphaloop.charts._style import BASELINE_NAMES
from alphaloop.journal import SessionRecord, TrialRecord
from alphaloop.market import Window

__all__ = ["BASELINE_NAMES", "Allocation", "SeriesSource", "Window", "WindowReturns"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class WindowReturns(BaseModel):
    """Daily returns of a trial and of the baselines on one evaluation window."""

    model_config = _FROZEN

    window: Window
    start_date: str  # the close before the first return: where every equity curve is 1.0
    dates: list[str]
    strategy: list[float]
    baselines: dict[str, list[float]]


class Allocation(BaseModel):
    """A trial's weights held during each day of its window (after that day's rebalance)."""

    model_config = _FROZEN

    window: Window
    dates: list[str]
    symbols: list[str]
    weights: list[list[float]]  # one row per day, one column per symbol; rows sum to 1
    final_weights: list[float]  # after the last day's drift, as the evaluator reports them
    # One-way turnover traded at each day's open (0 between rebalances), as the cost was paid.
    turnover: list[float] | None = None


class SeriesSource(Protocol):
    """What supplies the replayed series of a session's trials."""

    def window_returns(self, session: SessionRecord, trial: TrialRecord) -> WindowReturns:
        """The trial's daily returns on its window, with the baselines' there."""
        ...

    def allocation(self, session: SessionRecord, trial: TrialRecord) -> Allocation:
        """The trial's weights day by day over its window."""
        ...
