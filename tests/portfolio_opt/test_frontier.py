"""The Mean-CVaR efficient frontier: ordered, feasible, certified, and equal to skfolio's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from skfolio import RiskMeasure
from skfolio.optimization import MeanRisk, ObjectiveFunction

from alphaloop.exceptions import InvalidRequest
from alphaloop.portfolio_opt import (
    efficient_frontier,
    empirical_cvar,
    max_return_weights,
    solve_min_cvar,
)
from alphaloop.portfolio_opt.frontier import _unique_max_return

ALPHA = 0.95
# Our own certificate: cvar.py records a solve whose exact objective exceeds its certified
# lower bound by more than this (relative) as inaccurate; the frontier uses the same rule.
CERTIFIED = 1e-6
# Against skfolio: its Clarabel interior point stops at a relative duality gap and a
# feasibility residual of 1e-8 (Clarabel's defaults), so on the same target its CVaR may exceed
# the optimum by about 1e-8 relative; 1e-7 leaves a factor 10 (measured: 5e-9 at worst).
SKFOLIO_RTOL = 1e-7


def fat_tailed(n_assets: int, n_scenarios: int, seed: int) -> np.ndarray:
    """Correlated Student-t scenarios with positive means (skfolio refuses negative ones)."""
    rng = np.random.default_rng(seed)
    loadings = rng.normal(size=(n_assets, n_assets)) * 0.01
    chol = np.linalg.cholesky(loadings @ loadings.T + np.eye(n_assets) * 1e-4)
    shocks = rng.standard_t(4, size=(n_scenarios, n_assets)) @ chol.T
    return 0.7 * shocks + rng.normal(0.003, 0.002, n_assets)


def assert_feasible(weights: np.ndarray, cap: float) -> None:
    assert weights.min() >= 0.0 and weights.max() <= cap
    assert abs(weights.sum() - 1.0) < 1e-12


# 3,000 distinct scenarios: more than the 1,024 solved at once, so the scenario-generation
# rounds and the warm start from a neighbour's tail are exercised.
@pytest.mark.parametrize(("n_assets", "n_scenarios", "cap"), [(8, 600, 0.4), (20, 3000, 0.1)])
def test_frontier_is_ordered_feasible_and_certified(
    n_assets: int, n_scenarios: int, cap: float
) -> None:
    r = fat_tailed(n_assets, n_scenarios, seed=n_assets)
    frontier = efficient_frontier(r, ALPHA, cap, 12)
    points = frontier.points
    assert len(points) == 12
    returns = np.array([p.expected_return for p in points])
    cvars = np.array([p.cvar for p in points])
    assert np.all(np.diff(returns) >= -1e-12), returns
    assert np.all(np.diff(cvars) >= -1e-10), cvars
    assert cvars[-1] > cvars[0] and returns[-1] > returns[0]
    for p in points:
        assert p.status == "optimal"
        assert_feasible(p.weights, cap)
        assert p.expected_return >= p.target_return - 1e-9
        # The reported CVaR is the exact CVaR of the weights, and certified optimal.
        assert p.cvar == pytest.approx(empirical_cvar(-(r @ p.weights), ALPHA), rel=1e-12)
        assert p.cvar - p.lower_bound <= CERTIFIED * max(1.0, abs(p.cvar))
    # Targets are evenly spaced from minimum CVaR to the largest return the cap allows.
    targets = np.array([p.target_return for p in points])
    np.testing.assert_allclose(np.diff(targets), np.diff(targets)[0], rtol=1e-9)
    assert points[0].cvar == pytest.approx(solve_min_cvar(r, ALPHA, cap).cvar, rel=1e-8)
    top = max_return_weights(r.mean(axis=0), cap)
    assert returns[-1] == pytest.approx(float(r.mean(axis=0) @ top), rel=1e-12)


def test_warm_start_changes_no_point() -> None:
    r = fat_tailed(20, 3000, seed=3)
    warm = efficient_frontier(r, ALPHA, 0.1, 8)
    cold = efficient_frontier(r, ALPHA, 0.1, 8, warm_start=False)
    assert warm.warm_start and not cold.warm_start
    for a, b in zip(warm.points, cold.points, strict=True):
        assert a.target_return == pytest.approx(b.target_return, rel=1e-12)
        assert a.cvar == pytest.approx(b.cvar, rel=CERTIFIED)


def _skfolio_frontier(r: np.ndarray, cap: float, size: int) -> np.ndarray:
    model = MeanRisk(
        risk_measure=RiskMeasure.CVAR,
        objective_function=ObjectiveFunction.MINIMIZE_RISK,
        efficient_frontier_size=size,
        cvar_beta=ALPHA,
        min_weights=0.0,
        max_weights=cap,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # solver chatter, not the measurement
        return np.asarray(model.fit(r).weights_)


@pytest.mark.parametrize(
    ("n_assets", "n_scenarios", "cap"), [(8, 2000, 0.4), (12, 600, 0.2), (20, 1500, 0.25)]
)
def test_frontier_matches_skfolio(n_assets: int, n_scenarios: int, cap: float) -> None:
    r = fat_tailed(n_assets, n_scenarios, seed=n_assets)
    theirs = _skfolio_frontier(r, cap, 6)
    # skfolio's points at the returns its portfolios reach: each is feasible for that target,
    # so our certified optimum can only be lower, and by no more than skfolio's tolerance.
    targets = theirs @ r.mean(axis=0)
    their_cvar = np.array([empirical_cvar(-(r @ w), ALPHA) for w in theirs])
    ours = efficient_frontier(r, ALPHA, cap, 2, targets=targets)
    for p, cvar in zip(ours.points, their_cvar, strict=True):
        assert p.status == "optimal"
        assert p.cvar <= cvar + CERTIFIED * p.cvar
        assert cvar - p.cvar <= SKFOLIO_RTOL * p.cvar
    # The default spacing ends where skfolio's does: the largest return the cap allows.
    default = efficient_frontier(r, ALPHA, cap, 6)
    assert default.points[-1].expected_return == pytest.approx(targets[-1], rel=1e-6)


def test_a_largest_return_shared_by_two_portfolios_is_solved() -> None:
    r = fat_tailed(6, 2000, seed=5)
    best = int(np.argmax(r.mean(axis=0)))
    twin = np.column_stack([r, r[:, best]])  # two assets of equal mean share the top
    cap = 0.6
    top = max_return_weights(twin.mean(axis=0), cap)
    assert not _unique_max_return(top, twin.mean(axis=0), cap)
    assert _unique_max_return(max_return_weights(r.mean(axis=0), cap), r.mean(axis=0), cap)
    last = efficient_frontier(twin, ALPHA, cap, 4).points[-1]
    assert last.status == "optimal"
    assert last.expected_return == pytest.approx(float(twin.mean(axis=0) @ top), rel=1e-7)
    # The top face holds (w_best + w_twin = 0.6 and 0.4 elsewhere): splitting the pair evenly
    # is one of its portfolios, so the solved point can be no worse.
    even = top.copy()
    even[best] = even[-1] = (top[best] + top[-1]) / 2
    assert last.cvar <= empirical_cvar(-(twin @ even), ALPHA) + 1e-12


@pytest.mark.parametrize("n_points", [1, 0, -3, 2.5, True])
def test_fewer_than_two_points_is_refused(n_points: object) -> None:
    with pytest.raises(ValueError, match="n_points must be an integer >= 2"):
        efficient_frontier(fat_tailed(4, 500, 0), ALPHA, 0.5, n_points)  # type: ignore[arg-type]


def test_infeasible_cap_and_targets_are_refused() -> None:
    r = fat_tailed(4, 500, 0)
    with pytest.raises(InvalidRequest, match="cannot respect the cap"):
        efficient_frontier(r, ALPHA, 0.2, 5)
    highest = float(r.mean(axis=0) @ max_return_weights(r.mean(axis=0), 0.5))
    with pytest.raises(InvalidRequest, match="largest return"):
        efficient_frontier(r, ALPHA, 0.5, 2, targets=[0.0, highest * 1.01])
    with pytest.raises(ValueError, match="equal weights the only portfolio"):
        efficient_frontier(r, ALPHA, 0.25, 3)  # 4 x 0.25 = 1: one feasible book


@pytest.mark.parametrize("n_jobs", [2, 3, 12])
def test_runs_growing_until_they_meet_give_the_same_frontier(n_jobs: int) -> None:
    # 2: up from minimum CVaR and down from the top; 3: a third run from a cold middle seed;
    # 12: more runs than inner points.
    r = fat_tailed(20, 3000, seed=4)
    one = efficient_frontier(r, ALPHA, 0.1, 9)
    many = efficient_frontier(r, ALPHA, 0.1, 9, n_jobs=n_jobs)
    assert [p.target_return for p in many.points] == [p.target_return for p in one.points]
    for a, b in zip(many.points, one.points, strict=True):
        assert a.status == "optimal"
        assert a.cvar == pytest.approx(b.cvar, rel=CERTIFIED)
    with pytest.raises(ValueError, match="n_jobs must be an integer >= 1"):
        efficient_frontier(r, ALPHA, 0.1, 9, n_jobs=0)
