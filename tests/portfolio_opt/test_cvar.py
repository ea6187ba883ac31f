"""Mean-CVaR solver against independent oracles: skfolio, a textbook primal LP, sorted losses."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import cvxpy as cp
import numpy as np
import pytest
from skfolio import RiskMeasure
from skfolio.measures import cvar as skfolio_cvar
from skfolio.optimization import MeanRisk, ObjectiveFunction

from alphaloop import metrics
from alphaloop.exceptions import InvalidRequest, SolverError
from alphaloop.portfolio_opt import (
    CvarSolution,
    _lp,
    bootstrap_scenarios,
    empirical_cvar,
    portfolio_cvar,
    solve_mean_cvar,
    solve_min_cvar,
)

pytestmark = pytest.mark.filterwarnings("error")  # an "inaccurate" warning is a failure here


def sorted_tail_cvar(losses: np.ndarray, alpha: float) -> float:
    """CVaR by full sort: worst floor(k) losses plus the fractional share of the next one."""
    worst = np.sort(losses)[::-1]
    k = (1 - alpha) * len(losses)
    whole = int(np.floor(k))
    total = worst[:whole].sum() + (k - whole) * (worst[whole] if whole < len(worst) else 0.0)
    return total / k


def assert_feasible(w: np.ndarray, max_weight: float) -> None:
    assert w.sum() == pytest.approx(1.0, abs=1e-12)
    assert w.min() >= 0.0
    assert w.max() <= max_weight + 1e-12


# ---- empirical CVaR -------------------------------------------------------------------------


def test_empirical_cvar_hand_example_with_fractional_tail():
    losses = np.arange(1.0, 11.0)  # k = 0.25 * 10 = 2.5 tail scenarios: 10, 9 and half of 8
    assert empirical_cvar(losses, 0.75) == pytest.approx((10 + 9 + 0.5 * 8) / 2.5, abs=1e-15)
    assert empirical_cvar(losses, 0.8) == pytest.approx(9.5, abs=1e-15)  # k = 2 exactly
    assert empirical_cvar(losses, 0.99) == pytest.approx(10.0, abs=1e-15)  # k < 1: worst loss


@pytest.mark.parametrize("alpha", [0.85, 0.9, 0.95, 0.975, 0.99])
def test_empirical_cvar_matches_sorting_and_skfolio(alpha):
    returns = np.random.default_rng(3).standard_t(3, size=1237)
    ours = empirical_cvar(-returns, alpha)
    assert ours == pytest.approx(sorted_tail_cvar(-returns, alpha), rel=1e-12)
    assert ours == pytest.approx(skfolio_cvar(returns, beta=alpha), rel=1e-9)
    assert ours == pytest.approx(metrics.cvar(returns, alpha), rel=1e-12)  # backtest metric


# ---- oracles: skfolio MeanRisk and the textbook primal -------------------------------------


@pytest.mark.parametrize(
    ("alpha", "risk_aversion", "max_weight"),
    [
        (0.95, 1.0, 0.3),
        (0.9, 5.0, 0.2),
        (0.99, 0.5, 0.5),
        (0.95, 20.0, 1.0),
    ],
)
def test_objective_matches_skfolio_maximize_utility(scenarios, alpha, risk_aversion, max_weight):
    ours = solve_mean_cvar(scenarios, alpha, max_weight, risk_aversion=risk_aversion)
    model = MeanRisk(
        risk_measure=RiskMeasure.CVAR,
        objective_function=ObjectiveFunction.MAXIMIZE_UTILITY,
        risk_aversion=risk_aversion,
        cvar_beta=alpha,
        min_weights=0.0,
        max_weights=max_weight,
    ).fit(scenarios)
    w_sk = model.weights_
    # skfolio maximises mean - risk_aversion * CVaR; we minimise its negative.
    theirs = risk_aversion * sorted_tail_cvar(-scenarios @ w_sk, alpha) - scenarios.mean(0) @ w_sk
    assert ours.objective == pytest.approx(theirs, rel=1e-5)
    assert ours.objective <= theirs + 1e-9  # ours is the exact vertex optimum
    assert ours.status == "optimal"
    assert_feasible(ours.weights, max_weight)


@pytest.mark.parametrize(("alpha", "max_weight"), [(0.95, 0.25), (0.9, 0.15), (0.99, 1.0)])
def test_min_cvar_matches_skfolio_minimize_risk(scenarios, alpha, max_weight):
    ours = solve_min_cvar(scenarios, alpha, max_weight)
    model = MeanRisk(
        risk_measure=RiskMeasure.CVAR,
        objective_function=ObjectiveFunction.MINIMIZE_RISK,
        cvar_beta=alpha,
        min_weights=0.0,
        max_weights=max_weight,
    ).fit(scenarios)
    theirs = sorted_tail_cvar(-scenarios @ model.weights_, alpha)
    assert ours.cvar == pytest.approx(theirs, rel=1e-5)
    assert ours.objective == ours.cvar


def test_reported_cvar_is_the_empirical_cvar_of_the_weights(scenarios):
    for alpha in (0.9, 0.95, 0.99):
        sol = solve_mean_cvar(scenarios, alpha, 0.3, risk_aversion=3.0)
        assert sorted_tail_cvar(-scenarios @ sol.weights, alpha) == pytest.approx(
            sol.cvar, abs=1e-6
        )
        assert sol.expected_return == pytest.approx(scenarios.mean(0) @ sol.weights, abs=1e-15)
        assert sol.objective == pytest.approx(3.0 * sol.cvar - sol.expected_return, abs=1e-15)


def test_repeating_bootstrap_scenarios_match_the_uncompressed_primal(make_history, primal_optimum):
    # A 120-day window gives at most 100 distinct 21-day blocks: the solver merges repeats.
    history = make_history(seed=1, n_days=120, n_assets=10)
    scen = bootstrap_scenarios(history, 21, 3000, np.random.default_rng(0))
    assert len(np.unique(scen, axis=0)) <= 100
    sol = solve_mean_cvar(scen, 0.95, 0.2, risk_aversion=2.0)
    assert sol.objective == pytest.approx(primal_optimum(scen, 0.95, 0.2, 2.0), rel=1e-6)
    assert sorted_tail_cvar(-scen @ sol.weights, 0.95) == pytest.approx(sol.cvar, abs=1e-6)


def test_turnover_objective_matches_the_primal(scenarios, primal_optimum):
    prev = np.random.default_rng(5).dirichlet(np.ones(scenarios.shape[1]))
    sol = solve_mean_cvar(scenarios, 0.95, 0.3, 1.5, prev_weights=prev, turnover_cost=0.002)
    expected = primal_optimum(scenarios, 0.95, 0.3, 1.5, prev=prev, turnover_cost=0.002)
    assert sol.objective == pytest.approx(expected, rel=1e-6)
    no_cost = solve_mean_cvar(scenarios, 0.95, 0.3, 1.5)
    assert np.abs(sol.weights - prev).sum() < np.abs(no_cost.weights - prev).sum()


def test_huge_turnover_cost_keeps_the_previous_weights(scenarios):
    prev = np.full(scenarios.shape[1], 1.0 / scenarios.shape[1])
    sol = solve_mean_cvar(scenarios, 0.95, 0.3, prev_weights=prev, turnover_cost=1e3)
    np.testing.assert_allclose(sol.weights, prev, atol=1e-9)


def test_zero_cost_or_no_prev_weights_drops_the_turnover_term(scenarios):
    plain = solve_mean_cvar(scenarios, 0.95, 0.3)
    prev = np.zeros(scenarios.shape[1])
    free = solve_mean_cvar(scenarios, 0.95, 0.3, prev_weights=prev, turnover_cost=0.0)
    assert free.objective == pytest.approx(plain.objective, abs=1e-12)


def test_zero_risk_aversion_fills_the_best_assets_to_the_cap(scenarios):
    sol = solve_mean_cvar(scenarios, 0.95, 0.25, risk_aversion=0.0)
    best = np.argsort(scenarios.mean(0))[::-1][:4]
    np.testing.assert_allclose(sol.weights[best], 0.25, atol=1e-9)


def test_cap_of_exactly_one_over_n_gives_equal_weight(scenarios):
    n = scenarios.shape[1]
    sol = solve_mean_cvar(scenarios, 0.95, 1.0 / n)
    np.testing.assert_allclose(sol.weights, 1.0 / n, atol=1e-9)


# ---- the result model -------------------------------------------------------------------------


def test_solution_is_frozen_with_read_only_weights_and_serialises(scenarios):
    sol = solve_mean_cvar(scenarios, 0.95, 0.3)
    assert isinstance(sol, CvarSolution)
    with pytest.raises(ValueError):
        sol.weights[0] = 1.0
    with pytest.raises(ValueError):
        sol.cvar = 0.0
    dumped = json.loads(sol.model_dump_json())
    assert dumped["weights"] == pytest.approx(sol.weights.tolist())
    assert sol.solve_seconds > 0.0


# ---- bad inputs are refused before solving --------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"max_weight": 0.1}, InvalidRequest, "cannot respect the cap"),
        ({"max_weight": 0.0}, InvalidRequest, "positive finite"),
        ({"alpha": 1.0}, ValueError, "alpha must be strictly between 0 and 1"),
        ({"alpha": 0.0}, ValueError, "alpha must be strictly between 0 and 1"),
        ({"alpha": float("nan")}, ValueError, "alpha must be strictly between 0 and 1"),
        ({"risk_aversion": -1.0}, ValueError, "risk_aversion must be a finite number >= 0"),
        ({"turnover_cost": -0.1}, ValueError, "turnover_cost must be a finite number >= 0"),
        ({"prev_weights": np.ones(3) / 3}, ValueError, r"prev_weights must have shape \(8,\)"),
        ({"prev_weights": np.full(8, np.nan)}, ValueError, "prev_weights contain NaN"),
    ],
)
def test_bad_inputs_raise_clear_errors(scenarios, kwargs, error, message):
    args = {"scenarios": scenarios, "alpha": 0.95, "max_weight": 0.3, **kwargs}
    with pytest.raises(error, match=message):
        solve_mean_cvar(**args)


def test_bad_scenarios_raise_clear_errors(scenarios):
    with pytest.raises(ValueError, match="2-D array"):
        solve_mean_cvar(scenarios[:, 0], 0.95, 0.3)
    bad = scenarios.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="1 NaN or infinite"):
        solve_mean_cvar(bad, 0.95, 0.3)
    with pytest.raises(InvalidRequest, match="need max_weight >= 1/8"):
        solve_min_cvar(scenarios, 0.95, 0.12)


class _FakeProblem:
    """Stands in for a cvxpy problem whose solver ends with a given status."""

    def __init__(self, status: str) -> None:
        self.status = status

    def solve(self, **_: object) -> None:
        pass


def _fake_lp(status: str) -> SimpleNamespace:
    """A cached LP whose problem ends with ``status``."""
    return SimpleNamespace(problem=_FakeProblem(status), sequence=-1)


def test_solver_without_solution_raises_solver_error():
    with pytest.raises(SolverError, match="HiGHS returned no solution"):
        _lp.solve(_fake_lp(cp.SOLVER_ERROR))
    with pytest.raises(SolverError, match="status 'infeasible'"):
        _lp.solve(_fake_lp(cp.INFEASIBLE))


def test_inaccurate_solution_warns_and_is_recorded():
    with pytest.warns(RuntimeWarning, match="inaccurate"):
        assert _lp.solve(_fake_lp(cp.OPTIMAL_INACCURATE)) == cp.OPTIMAL_INACCURATE


def test_weights_far_off_the_constraints_are_a_solver_error():
    from alphaloop.portfolio_opt._checks import clean_weights

    with pytest.raises(SolverError, match="violate the constraints"):
        clean_weights(np.array([0.7, 0.7]), 0.8)
    np.testing.assert_allclose(
        clean_weights(np.array([0.5 + 1e-9, 0.5, -1e-10]), 0.5),
        [
            0.5,
            0.5,
            0.0,
        ],
    )


def test_the_held_portfolio_starts_scenario_generation(monkeypatch, scenarios):
    # More distinct scenarios than are solved whole: the first subset is the held portfolio's
    # tail, and the answer is the one an equal-weight start reaches.
    from alphaloop.portfolio_opt import _cutting

    rng = np.random.default_rng(12)
    many = rng.standard_t(4, size=(3000, 6)) * 0.02 + 0.001
    prev = np.array([0.3, 0.3, 0.1, 0.1, 0.1, 0.1])
    cold = solve_mean_cvar(many, 0.95, 0.4, 2.0)
    starts = []
    solve = _cutting.solve

    def recorded(*args, **kwargs):
        starts.append(kwargs.get("start_weights"))
        return solve(*args, **kwargs)

    monkeypatch.setattr(_cutting, "solve", recorded)
    held = solve_mean_cvar(many, 0.95, 0.4, 2.0, prev_weights=prev, turnover_cost=0.0)
    assert np.array_equal(starts[0], prev)
    assert held.objective == pytest.approx(cold.objective, rel=1e-9)


# ---- speed --------------------------------------------------------------------------------------


def test_twenty_assets_by_five_thousand_scenarios_is_fast(make_history):
    history = make_history(seed=2, n_days=300, n_assets=20)
    rng = np.random.default_rng(4)
    solve_mean_cvar(bootstrap_scenarios(history, 21, 5000, rng), 0.95, 0.25)  # canonicalise once
    times = []
    for start in range(0, 40, 5):
        scen = bootstrap_scenarios(history[start : start + 252], 21, 5000, rng)
        t0 = time.perf_counter()
        solve_mean_cvar(scen, 0.95, 0.25)
        times.append(time.perf_counter() - t0)
    # Measured ~5 ms; the bound leaves room for a loaded machine.
    assert np.median(times) < 0.2


def test_portfolio_cvar_is_the_loss_cvar(make_scenarios):
    scen = make_scenarios(seed=11, n_scenarios=400, n_assets=4)
    w = np.array([0.1, 0.2, 0.3, 0.4])
    assert portfolio_cvar(scen, w, 0.9) == empirical_cvar(-(scen @ w), 0.9)
