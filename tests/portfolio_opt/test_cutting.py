"""Scenario generation and its certificate against independent LPs on random problems: scipy's
``linprog`` on the full primal and skfolio's ``MeanRisk``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog
from skfolio import RiskMeasure
from skfolio.optimization import MeanRisk, ObjectiveFunction

from alphaloop.exceptions import SolverError
from alphaloop.portfolio_opt import (
    _cutting,
    _lp,
    bootstrap_scenarios,
    cvar,
    solve_mean_cvar,
    solve_min_cvar,
)

pytestmark = pytest.mark.filterwarnings("error")  # an "inaccurate" warning is a failure here


def full_primal_linprog(
    scenarios: np.ndarray,
    alpha: float,
    cap: float,
    risk_aversion: float,
    prev: np.ndarray | None = None,
    cost: float = 0.0,
) -> float:
    """The whole Rockafellar-Uryasev primal through scipy's HiGHS: variables w, z, u (, t)."""
    n_scen, n = scenarios.shape
    n_t = n if prev is not None else 0
    n_var = n + 1 + n_scen + n_t
    c = np.zeros(n_var)
    c[:n] = -scenarios.mean(axis=0)
    c[n] = risk_aversion
    c[n + 1 : n + 1 + n_scen] = risk_aversion / ((1 - alpha) * n_scen)
    loss_rows = [-scenarios, -np.ones((n_scen, 1)), -np.eye(n_scen), np.zeros((n_scen, n_t))]
    rows = [np.hstack(loss_rows)]
    rhs = [np.zeros(n_scen)]
    if prev is not None:  # t >= |w - prev|
        c[n + 1 + n_scen :] = cost
        eye, zeros = np.eye(n), np.zeros((n, 1 + n_scen))
        rows += [np.hstack([eye, zeros, -eye]), np.hstack([-eye, zeros, -eye])]
        rhs += [prev, -prev]
    a_eq = np.zeros((1, n_var))
    a_eq[0, :n] = 1.0
    bounds = [(0, cap)] * n + [(None, None)] + [(0, None)] * (n_scen + n_t)
    res = linprog(
        c, np.vstack(rows), np.concatenate(rhs), a_eq, [1.0], bounds=bounds, method="highs"
    )
    assert res.status == 0, res.message
    return float(res.fun)


@pytest.mark.parametrize(
    ("seed", "n_scen", "n_assets", "alpha", "cap", "lam"),
    [
        (0, 1500, 5, 0.95, 0.4, 1.0),
        (1, 2000, 30, 0.95, 0.1, 2.0),
        (2, 1500, 60, 0.9, 0.05, 5.0),
        (3, 3000, 12, 0.99, 0.25, 0.5),
        (4, 1100, 25, 0.85, 1.0, 1e6),
    ],
)
def test_matches_the_full_lp_on_random_problems(
    make_scenarios, seed, n_scen, n_assets, alpha, cap, lam
):
    scen = make_scenarios(seed, n_scen, n_assets)
    sol = solve_mean_cvar(scen, alpha, cap, risk_aversion=lam)
    expected = full_primal_linprog(scen, alpha, cap, lam)
    assert sol.objective == pytest.approx(expected, rel=1e-7, abs=1e-12)
    assert sol.status == "optimal"


def test_a_bootstrap_is_solved_whole_in_the_kept_lp_and_distinct_scenarios_by_rounds(
    make_history, make_scenarios
):
    # A trial's bootstrap merges 5,000 draws into at most ~500 atoms: one solve of them all, in
    # the LP kept for its padded shape (warm-started within a sequence).
    history = make_history(seed=3, n_days=300, n_assets=20)
    scen = bootstrap_scenarios(history, 21, 5000, np.random.default_rng(1))
    atoms = _lp.compress(scen, pad=False)
    assert len(atoms.probabilities) <= _cutting.WHOLE_SET
    _lp.mean_cvar_lp.cache_clear()
    found = _cutting.solve(
        atoms, 0.95, 0.25, 2.0, scen.mean(0), None, 0.0,
        merged_from=len(scen),
    )  # fmt: skip
    assert (found.rounds, found.n_scenarios_used) == (1, len(atoms.probabilities))
    assert _lp.mean_cvar_lp.cache_info().currsize == 1
    assert found.upper - found.lower <= 1e-9 * abs(found.upper)
    # 3,000 distinct scenarios: rounds on a part of them.
    many = make_scenarios(2, 3000, 20)
    pi = np.full(len(many), 1.0 / len(many))
    found = _cutting.solve(_lp.Atoms(many, pi), 0.95, 0.25, 2.0, many.mean(0), None, 0.0)
    assert found.rounds > 1 and found.n_scenarios_used < len(many)
    assert found.upper - found.lower <= 1e-9 * abs(found.upper)


def test_certificate_brackets_the_optimum(make_scenarios):
    scen = make_scenarios(9, 2500, 30)
    pi = np.full(len(scen), 1.0 / len(scen))
    found = _cutting.solve(_lp.Atoms(scen, pi), 0.95, 0.1, 2.0, scen.mean(0), None, 0.0)
    optimum = full_primal_linprog(scen, 0.95, 0.1, 2.0)
    assert found.lower <= optimum + 1e-12 <= found.upper + 2e-12
    assert found.upper - found.lower <= 1e-7 * abs(found.upper)
    # Only part of the scenarios ever entered the LP.
    assert found.n_scenarios_used < len(scen)


def test_turnover_matches_the_full_lp(make_scenarios):
    scen = make_scenarios(5, 1500, 15)
    prev = np.random.default_rng(5).dirichlet(np.ones(15))
    sol = solve_mean_cvar(scen, 0.95, 0.2, 1.5, prev_weights=prev, turnover_cost=0.003)
    expected = full_primal_linprog(scen, 0.95, 0.2, 1.5, prev=prev, cost=0.003)
    assert sol.objective == pytest.approx(expected, rel=1e-7)


def test_forty_assets_match_skfolio(make_scenarios):
    scen = make_scenarios(21, 3000, 40)
    sol = solve_mean_cvar(scen, 0.95, 0.1, risk_aversion=2.0)
    w = (
        MeanRisk(
            risk_measure=RiskMeasure.CVAR,
            objective_function=ObjectiveFunction.MAXIMIZE_UTILITY,
            risk_aversion=2.0,
            cvar_beta=0.95,
            min_weights=0.0,
            max_weights=0.1,
        )
        .fit(scen)
        .weights_
    )
    theirs = 2.0 * cvar.empirical_cvar(-(scen @ w), 0.95) - scen.mean(0) @ w
    assert sol.objective <= theirs + 1e-9
    assert sol.objective == pytest.approx(theirs, rel=1e-6)


def test_scenario_generation_finds_the_whole_set_s_optimum(make_scenarios, monkeypatch):
    scen = make_scenarios(13, 2500, 20)
    prev = np.random.default_rng(13).dirichlet(np.ones(20))
    rounds = solve_mean_cvar(scen, 0.95, 0.25, 2.0, prev_weights=prev, turnover_cost=0.002)
    monkeypatch.setattr(_cutting, "WHOLE_SET", len(scen))  # one solve of every scenario
    whole = solve_mean_cvar(scen, 0.95, 0.25, 2.0, prev_weights=prev, turnover_cost=0.002)
    assert rounds.objective == pytest.approx(whole.objective, rel=1e-10)
    np.testing.assert_allclose(rounds.weights, whole.weights, atol=1e-7)


def test_same_inputs_give_the_same_bits_whatever_ran_before(make_scenarios):
    scen = make_scenarios(17, 3000, 20)
    first = solve_mean_cvar(scen, 0.95, 0.25, 2.0)
    solve_min_cvar(make_scenarios(18, 5000, 20), 0.9, 0.3)  # unrelated work in between
    again = solve_mean_cvar(scen, 0.95, 0.25, 2.0)
    np.testing.assert_array_equal(first.weights, again.weights)


def test_a_round_highs_cannot_solve_is_a_solver_error(make_scenarios, monkeypatch):
    scen = make_scenarios(19, 1500, 10)
    monkeypatch.setattr(_lp.MeanCvarLP, "add_scenarios", lambda self, *a: "user_limit")
    with pytest.raises(SolverError, match="HiGHS returned no solution \\(status 'user_limit'\\)"):
        solve_mean_cvar(scen, 0.95, 0.3)


def test_a_solve_runs_blas_on_one_thread(make_scenarios, monkeypatch):
    from threadpoolctl import threadpool_info

    seen = []
    generate = _cutting._generate

    def counted(*args, **kwargs):
        seen.extend(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas")
        return generate(*args, **kwargs)

    monkeypatch.setattr(_cutting, "_generate", counted)
    solve_mean_cvar(make_scenarios(21, 1500, 10), 0.95, 0.3)
    assert seen and set(seen) == {1}


@pytest.mark.parametrize("with_prev", [False, True])
def test_greedy_linear_minimiser_matches_linprog(with_prev):
    rng = np.random.default_rng(3)
    n, cap, cost = 9, 0.2, 0.01
    direction = rng.normal(0.0, 0.02, n)
    prev = rng.dirichlet(np.ones(n)) if with_prev else None
    w = _cutting.linear_minimiser(direction, cap, prev, cost)
    value = direction @ w + (cost * np.abs(w - prev).sum() if with_prev else 0.0)
    # Independent: w = prev + p - m with p, m >= 0 priced at c + cost and -c + cost.
    if with_prev:
        c = np.concatenate([direction + cost, -direction + cost])
        a_eq = np.concatenate([np.ones(n), -np.ones(n)])[None, :]
        a_ub = np.vstack([np.hstack([np.eye(n), -np.eye(n)]), np.hstack([-np.eye(n), np.eye(n)])])
        b_ub = np.concatenate([cap - prev, prev])
        res = linprog(c, a_ub, b_ub, a_eq, [1.0 - prev.sum()], bounds=(0, None), method="highs")
        expected = res.fun + direction @ prev
    else:
        res = linprog(direction, A_eq=np.ones((1, n)), b_eq=[1.0], bounds=(0, cap), method="highs")
        expected = res.fun
    assert value == pytest.approx(expected, abs=1e-12)
    assert w.sum() == pytest.approx(1.0, abs=1e-12)
    assert w.min() >= 0.0
    assert w.max() <= cap + 1e-15


def test_weighted_cvar_equals_the_cvar_of_the_expanded_sample():
    rng = np.random.default_rng(4)
    atoms = rng.normal(size=37)
    counts = rng.integers(1, 6, size=37)
    expanded = np.repeat(atoms, counts)
    for alpha in (0.8, 0.9, 0.95):
        ours = _cutting.weighted_cvar(atoms, counts / counts.sum(), 1.0 - alpha)
        assert ours == pytest.approx(cvar.empirical_cvar(expanded, alpha), rel=1e-12)
