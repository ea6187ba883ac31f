"""Risk overlay: feasible targets pass through, others move the least L1 distance to the budget."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

from alphaloop.exceptions import InvalidRequest
from alphaloop.portfolio_opt import (
    BUDGET_BELOW_MIN_CVAR,
    TARGET_FEASIBLE,
    bootstrap_scenarios,
    portfolio_cvar,
    risk_overlay,
    solve_min_cvar,
)

pytestmark = pytest.mark.filterwarnings("error")

ALPHA = 0.95
CAP = 0.3


def closest_within_budget(scen: np.ndarray, target: np.ndarray, budget: float) -> float:
    """Independent oracle: the overlay LP in its textbook form, solved by Clarabel."""
    n_scen, n_assets = scen.shape
    w, z, u = cp.Variable(n_assets), cp.Variable(), cp.Variable(n_scen, nonneg=True)
    problem = cp.Problem(
        cp.Minimize(cp.norm1(w - target)),
        [
            u >= -scen @ w - z,
            z + cp.sum(u) / ((1 - ALPHA) * n_scen) <= budget,
            cp.sum(w) == 1,
            w >= 0,
            w <= CAP,
        ],
    )
    problem.solve(solver="CLARABEL")
    assert problem.status == cp.OPTIMAL
    return float(problem.value)


def equal_weight_cvar(scen: np.ndarray) -> float:
    n = scen.shape[1]
    return portfolio_cvar(scen, np.full(n, 1.0 / n), ALPHA)


def test_target_inside_the_budget_is_returned_unchanged(scenarios):
    target = solve_min_cvar(scenarios, ALPHA, CAP).weights  # less risky than 1/N
    sol = risk_overlay(target, scenarios, ALPHA, CAP)
    np.testing.assert_array_equal(sol.weights, target)
    assert sol.status == TARGET_FEASIBLE
    assert sol.objective == 0.0
    assert sol.cvar <= equal_weight_cvar(scenarios)


def test_equal_weight_target_meets_the_default_budget_exactly(scenarios):
    n = scenarios.shape[1]
    sol = risk_overlay(np.full(n, 1.0 / n), scenarios, ALPHA, CAP)
    assert sol.status == TARGET_FEASIBLE


def test_concentrated_target_is_moved_to_the_closest_portfolio_within_budget(scenarios):
    riskiest = int(np.argmax(scenarios.std(axis=0)))
    target = np.zeros(scenarios.shape[1])
    target[riskiest] = 1.0  # breaks both the cap and the default budget
    budget = equal_weight_cvar(scenarios)
    sol = risk_overlay(target, scenarios, ALPHA, CAP)
    assert sol.status == "optimal"
    assert sol.cvar <= budget + 1e-7
    assert sol.weights.sum() == pytest.approx(1.0, abs=1e-12)
    assert sol.weights.min() >= 0.0 and sol.weights.max() <= CAP + 1e-12
    assert sol.objective == pytest.approx(np.abs(sol.weights - target).sum(), abs=1e-15)
    assert sol.objective == pytest.approx(
        closest_within_budget(scenarios, target, budget), rel=1e-6
    )


def test_explicit_budget_binds(scenarios):
    target = np.random.default_rng(0).dirichlet(np.ones(scenarios.shape[1]))
    target = np.minimum(target, CAP)
    target /= target.sum()
    floor = solve_min_cvar(scenarios, ALPHA, CAP).cvar
    budget = floor + 0.25 * (portfolio_cvar(scenarios, target, ALPHA) - floor)
    sol = risk_overlay(target, scenarios, ALPHA, CAP, cvar_budget=budget)
    assert sol.cvar == pytest.approx(budget, abs=1e-7)  # binding: no slack left
    assert sol.objective == pytest.approx(
        closest_within_budget(scenarios, target, budget), rel=1e-6
    )


def test_budget_below_the_minimum_cvar_falls_back_to_min_cvar(scenarios):
    floor = solve_min_cvar(scenarios, ALPHA, CAP)
    target = np.zeros(scenarios.shape[1])
    target[0] = 1.0
    sol = risk_overlay(target, scenarios, ALPHA, CAP, cvar_budget=floor.cvar - 0.01)
    assert sol.status == BUDGET_BELOW_MIN_CVAR
    assert sol.cvar == pytest.approx(floor.cvar, rel=1e-6)
    # Among minimum-CVaR portfolios it is the one closest to the target.
    assert sol.objective <= np.abs(floor.weights - target).sum() + 1e-9


def test_target_within_budget_but_over_the_cap_is_capped(scenarios):
    n = scenarios.shape[1]
    target = np.full(n, 0.5 / (n - 1))
    target[0] = 0.5
    sol = risk_overlay(target, scenarios, ALPHA, CAP, cvar_budget=1.0)
    assert sol.weights[0] == pytest.approx(CAP, abs=1e-9)
    assert sol.objective == pytest.approx(2 * (0.5 - CAP), abs=1e-9)


def test_repeating_bootstrap_scenarios_give_the_uncompressed_answer(make_history):
    history = make_history(seed=4, n_days=100, n_assets=8)
    scen = bootstrap_scenarios(history, 10, 2000, np.random.default_rng(1))
    target = np.zeros(8)
    target[:2] = 0.5
    sol = risk_overlay(target, scen, ALPHA, CAP)
    expected = closest_within_budget(scen, target, equal_weight_cvar(scen))
    assert sol.objective == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"target_weights": np.ones(3) / 3}, ValueError, r"target_weights must have shape \(8,\)"),
        ({"cvar_budget": float("nan")}, ValueError, "cvar_budget must be a finite number"),
        ({"max_weight": 0.1}, InvalidRequest, "cannot respect the cap"),
        ({"alpha": 1.5}, ValueError, "alpha must be strictly between 0 and 1"),
    ],
)
def test_bad_inputs_raise_clear_errors(scenarios, kwargs, error, message):
    args = {
        "target_weights": np.full(8, 1 / 8),
        "scenarios": scenarios,
        "alpha": ALPHA,
        "max_weight": CAP,
        **kwargs,
    }
    with pytest.raises(error, match=message):
        risk_overlay(**args)
