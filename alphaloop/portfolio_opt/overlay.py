"""Risk stage of the weight-centric pipeline: move target weights just enough to meet a CVaR budget.

The allocator (PPO in ``unified`` trials) proposes target weights; :func:`risk_overlay` returns
the portfolio closest to them in L1 distance (i.e. the least turnover away from the target) that
is long-only, fully invested, capped, and whose CVaR over the scenarios is within the budget.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from alphaloop.portfolio_opt import _lp
from alphaloop.portfolio_opt._checks import check_problem, check_weights, clean_weights
from alphaloop.portfolio_opt.cvar import CvarSolution, empirical_cvar, solve_min_cvar

logger = logging.getLogger(__name__)

TARGET_FEASIBLE = "target_feasible"
BUDGET_BELOW_MIN_CVAR = "budget_below_min_cvar"

# A target this close to the simplex and the cap is taken as it is (allocators emit float32
# softmax weights whose sum is 1 only to ~1e-7).
_TARGET_TOL = 1e-9
# Budget handed to the second solve when the asked budget is unreachable: the minimum CVaR plus
# enough slack that solver round-off cannot make it infeasible again.
_MIN_CVAR_SLACK_ABS = 1e-9
_MIN_CVAR_SLACK_REL = 1e-7
_INFEASIBLE = (_lp.INFEASIBLE, _lp.INFEASIBLE_INACCURATE, "infeasible_or_unbounded")


def risk_overlay(
    target_weights: np.ndarray,
    scenarios: np.ndarray,
    alpha: float,
    max_weight: float,
    cvar_budget: float | None = None,
) -> CvarSolution:
    """Projects target weights onto the CVaR budget and the caps, in L1 distance.

    Solves the LP ``min ||w - target||_1`` subject to ``CVaR_alpha(w) <= cvar_budget``,
    ``sum(w) = 1`` and ``0 <= w <= max_weight``.

    * Default budget: the CVaR of the equal-weight (1/N) portfolio on the same scenarios, so
      the overlay never lets the allocator take more tail risk than the naive baseline.
    * A target that already meets every constraint is returned unchanged, without a solve
      (status ``"target_feasible"``, objective 0).
    * A budget below the minimum achievable CVaR is not an error: the result is the
      minimum-CVaR portfolio closest to the target (status ``"budget_below_min_cvar"``; its
      ``cvar`` is the minimum CVaR, to 1e-7 relative).

    Args:
        target_weights: (n_assets,) weights from the allocator; need not be feasible.
        scenarios: (n_scenarios, n_assets) equally likely horizon returns.
        alpha: CVaR confidence level in (0, 1).
        max_weight: cap on every weight; ``max_weight * n_assets`` must be at least 1.
        cvar_budget: largest CVaR allowed (a positive number is a loss); ``None`` for the
            equal-weight CVaR.

    Returns:
        A :class:`~alphaloop.portfolio_opt.CvarSolution` whose ``objective`` is the L1 distance
        from the target.

    Raises:
        InvalidRequest: the cap cannot be met (``max_weight * n_assets < 1``).
        ValueError: bad shapes, NaN/inf, alpha outside (0, 1), a non-finite budget.
        SolverError: no solver returned a solution.
    """
    start = time.perf_counter()
    r, a, cap = check_problem(scenarios, alpha, max_weight)
    target = check_weights("target_weights", target_weights, r.shape[1])
    budget = _budget(r, a, cvar_budget)
    if _within(target, cap) and empirical_cvar(-(r @ target), a) <= budget:
        weights, status = target, TARGET_FEASIBLE
    else:
        weights, status = _project(r, a, cap, target, budget)
    return CvarSolution(
        weights=weights,
        cvar=empirical_cvar(-(r @ weights), a),
        expected_return=float(r.mean(axis=0) @ weights),
        objective=float(np.abs(weights - target).sum()),
        status=status,
        solve_seconds=time.perf_counter() - start,
    )


def _budget(r: np.ndarray, alpha: float, cvar_budget: float | None) -> float:
    """The CVaR budget asked for, or the equal-weight portfolio's CVaR when none is."""
    if cvar_budget is None:
        n_assets = r.shape[1]
        return empirical_cvar(-(r @ np.full(n_assets, 1.0 / n_assets)), alpha)
    budget = float(cvar_budget)
    if not math.isfinite(budget):
        raise ValueError(f"cvar_budget must be a finite number, got {cvar_budget!r}")
    return budget


def _within(target: np.ndarray, cap: float) -> bool:
    """Whether ``target`` is long-only, fully invested and under the cap (to float32 noise)."""
    return bool(
        target.min() >= -_TARGET_TOL
        and target.max() <= cap + _TARGET_TOL
        and abs(target.sum() - 1.0) <= _TARGET_TOL
    )


def _project(
    r: np.ndarray, alpha: float, cap: float, target: np.ndarray, budget: float
) -> tuple[np.ndarray, str]:
    """The weights nearest ``target`` within the budget, or within the minimum CVaR when the
    budget is below it."""
    atoms = _lp.compress(r)
    weights, status = _solve_overlay(atoms, alpha, cap, target, budget)
    if status not in _INFEASIBLE:
        return weights, status
    floor = solve_min_cvar(r, alpha, cap)
    logger.info(
        "risk overlay: CVaR budget %.6g is below the minimum CVaR %.6g; "
        "projecting onto the minimum instead",
        budget,
        floor.cvar,
    )
    reachable = floor.cvar + _MIN_CVAR_SLACK_ABS + _MIN_CVAR_SLACK_REL * abs(floor.cvar)
    weights, status = _solve_overlay(atoms, alpha, cap, target, reachable)
    if status in _INFEASIBLE:  # round-off at the very edge; any min-CVaR portfolio will do
        logger.debug("risk overlay: minimum CVaR unreachable by round-off; min-CVaR weights used")
        weights = floor.weights
    return weights, BUDGET_BELOW_MIN_CVAR


def _solve_overlay(
    atoms: _lp.Atoms, alpha: float, cap: float, target: np.ndarray, budget: float
) -> tuple[np.ndarray, str]:
    """Fills the cached overlay LP and solves it; weights are empty when infeasible."""
    lp = _lp.overlay_lp(atoms.returns.shape[0], atoms.returns.shape[1])
    with lp.lock:
        lp.returns.value = atoms.returns
        lp.scaled_mass.value = atoms.probabilities / (1.0 - alpha)
        lp.target.value = target
        lp.budget.value = budget
        lp.cap.value = cap
        status = _lp.solve(lp, accept=_INFEASIBLE)
        raw = lp.weights.value
    if status in _INFEASIBLE:
        return np.empty(0), status
    if raw is None:
        raise _lp.SolverError(f"solver reported {status!r} but returned no weights")
    return clean_weights(np.asarray(raw, dtype=np.float64), cap), status
