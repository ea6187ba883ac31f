"""Shared scenario fixtures: seeded, small enough for fast tests, fat-tailed and correlated."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest


def fat_tailed_scenarios(seed: int, n_scenarios: int, n_assets: int) -> np.ndarray:
    """Distinct Student-t scenarios with a random correlation and asset-specific drifts."""
    rng = np.random.default_rng(seed)
    loadings = rng.normal(size=(n_assets, n_assets)) * 0.01
    cov = loadings @ loadings.T + np.eye(n_assets) * 1e-4
    shocks = rng.standard_t(4, size=(n_scenarios, n_assets)) @ np.linalg.cholesky(cov).T
    return 0.7 * shocks + rng.normal(0.003, 0.002, size=n_assets)


def daily_history(seed: int, n_days: int, n_assets: int) -> np.ndarray:
    """One-factor daily simple returns, for bootstrap-built (repeating) scenarios."""
    rng = np.random.default_rng(seed)
    market = rng.normal(0.0, 0.01, size=(n_days, 1))
    betas = rng.uniform(0.5, 1.5, size=n_assets)
    return 0.0004 + market * betas + rng.normal(0.0, 0.012, size=(n_days, n_assets))


def reference_primal(
    scenarios: np.ndarray,
    alpha: float,
    max_weight: float,
    risk_aversion: float = 1.0,
    mean_weight: float = 1.0,
    prev: np.ndarray | None = None,
    turnover_cost: float = 0.0,
) -> float:
    """Optimum of the textbook Rockafellar-Uryasev primal, written out independently."""
    n_scen, n_assets = scenarios.shape
    w = cp.Variable(n_assets)
    z = cp.Variable()
    u = cp.Variable(n_scen, nonneg=True)
    cvar = z + cp.sum(u) / ((1 - alpha) * n_scen)
    objective = risk_aversion * cvar - mean_weight * scenarios.mean(axis=0) @ w
    if prev is not None:
        objective = objective + turnover_cost * cp.norm1(w - prev)
    constraints = [u >= -scenarios @ w - z, cp.sum(w) == 1, w >= 0, w <= max_weight]
    problem = cp.Problem(cp.Minimize(objective), constraints)
    problem.solve(solver="CLARABEL")
    assert problem.status == cp.OPTIMAL
    return float(problem.value)


@pytest.fixture
def scenarios() -> np.ndarray:
    return fat_tailed_scenarios(seed=7, n_scenarios=800, n_assets=8)


@pytest.fixture
def make_scenarios():
    """``make_scenarios(seed, n_scenarios, n_assets)`` -> distinct fat-tailed scenarios."""
    return fat_tailed_scenarios


@pytest.fixture
def make_history():
    """``make_history(seed, n_days, n_assets)`` -> daily simple returns."""
    return daily_history


@pytest.fixture
def primal_optimum():
    """The independent textbook-primal oracle, see :func:`reference_primal`."""
    return reference_primal
