"""Stress tests: a strategy re-evaluated with higher costs and over named crisis windows, each
next to equal weight.

Engine-agnostic on purpose. A strategy is a *rerun*: a function of the cost in basis points
that returns its backtest over a span of days (anything with ``net`` and ``turnover`` arrays,
such as the frozen evaluator's ``Backtest``). The evaluator plugs in with
``lambda bps: simulate(returns, targets, rebalance, bps)``; a journaled series with its turnover
plugs in through :func:`recosted`. Crisis windows are read off the dates given, so only the
crises the data covers are reported. A crisis inside the training window is in sample for a
trained policy: which span to pass is the caller's choice, and the report names its dates.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from alphaloop.metrics import Metrics, compute_metrics

logger = logging.getLogger(__name__)

DEFAULT_COST_MULTIPLIER = 1.5
DEFAULT_MIN_DAYS = 20
REFERENCE = "equal_weight"


class Backtested(Protocol):
    """What a rerun returns: daily net returns and the one-way turnover traded each day."""

    @property
    def net(self) -> np.ndarray: ...

    @property
    def turnover(self) -> np.ndarray: ...


Rerun = Callable[[float], Backtested]


class CrisisWindow(BaseModel):
    """A named stretch of market stress (inclusive dates)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    start: dt.date
    end: dt.date
    description: str = ""


CRISIS_WINDOWS: tuple[CrisisWindow, ...] = (
    CrisisWindow(
        name="gfc_2008_09",
        start=dt.date(2008, 9, 1),
        end=dt.date(2009, 3, 31),
        description="global financial crisis: Lehman's failure to the March 2009 low",
    ),
    CrisisWindow(
        name="covid_2020_q1",
        start=dt.date(2020, 1, 1),
        end=dt.date(2020, 3, 31),
        description="COVID-19 crash, 2020 Q1",
    ),
    CrisisWindow(
        name="rates_2022",
        start=dt.date(2022, 1, 1),
        end=dt.date(2022, 12, 31),
        description="2022 rate-hike bear market in stocks and bonds",
    ),
)


class _Series(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    net: np.ndarray
    turnover: np.ndarray


def recosted(
    net: Sequence[float] | np.ndarray, turnover: Sequence[float] | np.ndarray, cost_bps: float
) -> Rerun:
    """A rerun from one backtest's net returns and turnover, charged ``cost_bps``.

    Uses the evaluator's cost convention, ``net = (1 - cost * turnover) * (1 + gross) - 1``
    with the gross return and turnover independent of the cost (holdings drift with gross
    returns), so the gross series is recovered exactly and any other cost re-applied: no
    re-simulation, no weights needed.
    """
    r = np.asarray(net, dtype=float)
    t = np.asarray(turnover, dtype=float)
    if r.shape != t.shape or r.ndim != 1:
        raise ValueError(f"net {r.shape} and turnover {t.shape} must be equal-length series")
    charged = 1.0 - cost_bps / 1e4 * t
    if np.any(charged <= 0):
        raise ValueError(f"a cost of {cost_bps} bps would consume the whole book on some day")
    gross_growth = (1.0 + r) / charged

    def rerun(bps: float) -> Backtested:
        return _Series(net=(1.0 - bps / 1e4 * t) * gross_growth - 1.0, turnover=t)

    return rerun


def _as_days(dates: Any) -> np.ndarray:
    days = np.asarray(dates, dtype="datetime64[D]")
    if days.ndim != 1 or days.size == 0:
        raise ValueError("dates must be a non-empty sequence of days")
    if np.any(np.diff(days) <= np.timedelta64(0, "D")):
        raise ValueError("dates must be strictly increasing")
    return days


def crisis_windows_in(
    dates: Any,
    windows: Sequence[CrisisWindow] = CRISIS_WINDOWS,
    min_days: int = DEFAULT_MIN_DAYS,
) -> list[tuple[CrisisWindow, slice]]:
    """The crisis windows the dates cover with at least ``min_days`` trading days, each with
    the slice of positions it spans, in the order given."""
    days = _as_days(dates)
    found = []
    for window in windows:
        a = int(np.searchsorted(days, np.datetime64(window.start, "D"), side="left"))
        b = int(np.searchsorted(days, np.datetime64(window.end, "D"), side="right"))
        if b - a >= min_days:
            found.append((window, slice(a, b)))
        else:
            logger.debug("crisis window %s has %d days in the data; skipped", window.name, b - a)
    return found


class StressCase(BaseModel):
    """Every strategy's metrics in one scenario, the reference among them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scenario: str
    description: str
    start: str
    end: str
    cost_bps: float
    metrics: dict[str, Metrics]


class StressReport(BaseModel):
    """The base case, the cost stress and each crisis window found in the data."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reference: str
    cost_bps: float
    cost_multiplier: float
    cases: tuple[StressCase, ...]
    windows_not_in_data: tuple[str, ...] = Field(default_factory=tuple)

    def case(self, scenario: str) -> StressCase:
        for c in self.cases:
            if c.scenario == scenario:
                return c
        raise KeyError(
            f"no scenario {scenario!r}; have {', '.join(c.scenario for c in self.cases)}"
        )


def _run(name: str, rerun: Rerun, bps: float, n_days: int) -> tuple[np.ndarray, np.ndarray]:
    out = rerun(bps)
    net, turnover = np.asarray(out.net, dtype=float), np.asarray(out.turnover, dtype=float)
    if net.shape != (n_days,) or turnover.shape != (n_days,):
        raise ValueError(
            f"{name}: the rerun returned {net.shape} returns and {turnover.shape} turnover "
            f"for {n_days} dates"
        )
    return net, turnover


def _case(
    scenario: str,
    description: str,
    days: np.ndarray,
    span: slice,
    bps: float,
    series: Mapping[str, tuple[np.ndarray, np.ndarray]],
) -> StressCase:
    window = days[span]
    return StressCase(
        scenario=scenario,
        description=description,
        start=str(window[0]),
        end=str(window[-1]),
        cost_bps=bps,
        metrics={k: compute_metrics(net[span], t[span]) for k, (net, t) in series.items()},
    )


def stress_test(
    runs: Mapping[str, Rerun],
    dates: Any,
    cost_bps: float,
    *,
    cost_multiplier: float = DEFAULT_COST_MULTIPLIER,
    windows: Sequence[CrisisWindow] = CRISIS_WINDOWS,
    min_days: int = DEFAULT_MIN_DAYS,
    reference: str = REFERENCE,
) -> StressReport:
    """Re-evaluates every strategy at ``cost_bps * cost_multiplier`` and over each crisis
    window the dates cover, with the reference (equal weight) in every case.

    Crisis windows are cut from the full-span run at ``cost_bps``, not rerun from their first
    day, so each strategy enters the crisis holding what it held.

    Args:
        runs: strategy name -> rerun over ``dates`` (the best, the baseline, ``equal_weight``).
        dates: the day of each position of the reruns' series (ISO strings, datetimes...).
        cost_bps: the evaluation cost of the base case.
        cost_multiplier: the cost stress (1.5 = +50%).
        windows: the crisis windows to look for.
        min_days: fewest trading days of a window the data must hold for it to be reported.
        reference: the key of ``runs`` every case is compared against.

    Raises:
        ValueError: no reference run, a non-positive multiplier or cost, misaligned series.
    """
    if reference not in runs:
        raise ValueError(f"runs must include the reference {reference!r}, got {sorted(runs)}")
    if not cost_multiplier > 0 or not cost_bps >= 0:
        raise ValueError(
            f"need cost_bps >= 0 and cost_multiplier > 0, got {cost_bps} and {cost_multiplier}"
        )
    days = _as_days(dates)
    stressed_bps = cost_bps * cost_multiplier
    base = {k: _run(k, run, cost_bps, days.size) for k, run in runs.items()}
    stressed = {k: _run(k, run, stressed_bps, days.size) for k, run in runs.items()}
    full = slice(0, days.size)
    cost_case = f"cost_x{cost_multiplier:g}"
    cases = [
        _case("base", f"the whole span at {cost_bps:g} bps", days, full, cost_bps, base),
        _case(
            cost_case, f"the whole span at {stressed_bps:g} bps", days, full, stressed_bps, stressed
        ),
    ]
    found = crisis_windows_in(days, windows, min_days)
    for window, span in found:
        cases.append(_case(window.name, window.description, days, span, cost_bps, base))
    names_found = {w.name for w, _ in found}
    return StressReport(
        reference=reference,
        cost_bps=cost_bps,
        cost_multiplier=cost_multiplier,
        cases=tuple(cases),
        windows_not_in_data=tuple(w.name for w in windows if w.name not in names_found),
    )
