"""The Mean-CVaR efficient frontier of the embedded S&P 500 set, as one operation.

Scenarios are drawn as a ``cufolio_only`` trial draws them at its last rebalance before TEST: a
block bootstrap of ``cufolio_hold_days``-day returns from the trailing ``scenario_window`` days
that end with VALIDATION (TEST stays sealed), at the default knobs' CVaR level and position cap
(at least 5 assets, so the cap leaves more than one portfolio). The frontier is
traced by :func:`alphaloop.portfolio_opt.efficient_frontier`, each point certified.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from alphaloop.exceptions import InvalidRequest
from alphaloop.knobs import KNOBS

if TYPE_CHECKING:
    import numpy as np

    from alphaloop.market import MarketData
    from alphaloop.portfolio_opt import FrontierPoint

DATA = "sp500"
# The trials' default trailing window for scenarios (``TrialBudget.scenario_window``).
SCENARIO_WINDOW = 504
MAX_POINTS = 500
SP500_ASSETS = 20  # the embedded S&P 500 set's stocks (the frontier's data)
MAX_SCENARIOS = 100_000


class FrontierRequest(BaseModel):
    """What a frontier is asked for (field names are the command's flags)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    assets: int = Field(
        20,
        ge=5,
        le=SP500_ASSETS,
        description="the first N assets of the embedded S&P 500 set (at least 5: under the "
        "default 25% cap, 4 or fewer can only be held in equal weights, a frontier of one point)",
    )
    points: int = Field(20, ge=2, le=MAX_POINTS, description="points on the frontier")
    scenarios: int = Field(
        int(KNOBS["n_scenarios"].default),
        ge=int(KNOBS["n_scenarios"].low),
        le=MAX_SCENARIOS,
        description="bootstrapped return scenarios",
    )
    seed: int = Field(0, ge=0, le=2**32 - 1, description="seed of the scenario bootstrap")


class FrontierPointOut(BaseModel):
    """One point: horizon return and CVaR (positive when the tail loses), and its weights."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    target_return: float
    expected_return: float
    cvar: float
    certificate_gap: float  # exact CVaR minus the certified lower bound (>= 0 to round-off)
    status: str
    weights: dict[str, float]
    solve_seconds: float


class FrontierRun(BaseModel):
    """A traced frontier and what it was traced on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    data: str
    symbols: list[str]
    window: tuple[str, str]
    horizon_days: int
    alpha: float
    max_weight: float
    scenarios: int
    distinct_scenarios: int
    seed: int
    points: list[FrontierPointOut]
    solve_seconds: float


def trace_frontier(request: FrontierRequest) -> FrontierRun:
    """Traces the Mean-CVaR efficient frontier of the first ``request.assets`` assets.

    Raises:
        InvalidRequest: more assets asked for than the data holds.
        SolverError: a point could not be solved.
    """
    import numpy as np

    from alphaloop.market import load_market
    from alphaloop.portfolio_opt import bootstrap_scenarios, efficient_frontier

    market = load_market(DATA)
    history, symbols = _history(market, request.assets)
    horizon = int(KNOBS["cufolio_hold_days"].default)
    alpha = float(KNOBS["cvar_alpha"].default)
    cap = float(KNOBS["max_position_pct"].default)
    rng = np.random.default_rng(request.seed)
    scenarios = bootstrap_scenarios(history, horizon, request.scenarios, rng)
    frontier = efficient_frontier(scenarios, alpha, cap, request.points)
    start, end = market.dates[market.val.stop - len(history)], market.dates[market.val.stop - 1]
    return FrontierRun(
        data=DATA,
        symbols=symbols,
        window=(start.date().isoformat(), end.date().isoformat()),
        horizon_days=horizon,
        alpha=alpha,
        max_weight=frontier.max_weight,
        scenarios=frontier.n_scenarios,
        distinct_scenarios=frontier.n_atoms,
        seed=request.seed,
        points=[_point_out(p, symbols) for p in frontier.points],
        solve_seconds=frontier.solve_seconds,
    )


def _history(market: MarketData, assets: int) -> tuple[np.ndarray, list[str]]:
    """The trailing window before TEST of the first ``assets`` columns."""
    if assets > market.n_assets:
        raise InvalidRequest(
            f"--assets {assets} is more than the {market.n_assets} assets of the {DATA} data; "
            f"ask for 5..{market.n_assets}"
        )
    stop = market.val.stop
    history = market.returns[max(0, stop - SCENARIO_WINDOW) : stop, :assets]
    return history, list(market.symbols[:assets])


def _point_out(point: FrontierPoint, symbols: list[str]) -> FrontierPointOut:
    return FrontierPointOut(
        target_return=point.target_return,
        expected_return=point.expected_return,
        cvar=point.cvar,
        certificate_gap=point.cvar - point.lower_bound,
        status=point.status,
        weights={s: float(w) for s, w in zip(symbols, point.weights, strict=True)},
        solve_seconds=point.solve_seconds,
    )
