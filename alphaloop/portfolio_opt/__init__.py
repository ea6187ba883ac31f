"""Scenario generation, Mean-CVaR optimisation, its efficient frontier and the CVaR risk overlay."""

from alphaloop.portfolio_opt._lp import start_sequence
from alphaloop.portfolio_opt.cvar import (
    CvarSolution,
    empirical_cvar,
    portfolio_cvar,
    solve_mean_cvar,
    solve_min_cvar,
)
from alphaloop.portfolio_opt.frontier import (
    Frontier,
    FrontierPoint,
    efficient_frontier,
    max_return_weights,
)
from alphaloop.portfolio_opt.overlay import (
    BUDGET_BELOW_MIN_CVAR,
    TARGET_FEASIBLE,
    risk_overlay,
)
from alphaloop.portfolio_opt.scenarios import bootstrap_scenarios

__all__ = [
    "BUDGET_BELOW_MIN_CVAR",
    "TARGET_FEASIBLE",
    "CvarSolution",
    "Frontier",
    "FrontierPoint",
    "bootstrap_scenarios",
    "efficient_frontier",
    "empirical_cvar",
    "max_return_weights",
    "portfolio_cvar",
    "risk_overlay",
    "solve_mean_cvar",
    "solve_min_cvar",
    "start_sequence",
]
