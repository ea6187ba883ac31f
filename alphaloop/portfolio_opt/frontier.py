"""The Mean-CVaR efficient frontier, traced point by point with the Mean-CVaR solver.

Point ``k`` of a ``K``-point frontier solves::

    minimise   CVaR_alpha(w)
    subject to mean(R) . w >= target_k,  sum(w) = 1,  0 <= w <= max_weight

with targets evenly spaced from the return of the minimum-CVaR portfolio (the first point) to
the largest return the cap allows (the last point), as skfolio's
``MeanRisk(efficient_frontier_size=K)`` spaces them (skfolio nudges its first target up by 1%).

Every point is solved by the solver behind :func:`~alphaloop.portfolio_opt.solve_mean_cvar`
(HiGHS on the Mean-CVaR dual, by scenario generation above 1,024 scenarios, :mod:`._cutting`),
with the minimum-return constraint as one more column of its LP, and certified as its answers
are: the weights are
checked against the constraints, their exact CVaR over every scenario is compared with a lower
bound that holds for any portfolio meeting the target, and a point whose gap exceeds the
solver's tolerance is recorded ``optimal_inaccurate`` (with a warning).

What is shared between points, because it does not depend on the target: the checked
scenarios, their merged atoms and mean, and the solution of the point before. Neighbouring
points have neighbouring tails, so each point's first scenario subset is the tail of its
neighbour's weights instead of the equal-weight portfolio's; that saves most of the
scenario-generation rounds (see ``benchmarks/bench_frontier.py`` for warm against cold). Each
point's LP is its own (points may be solved on two threads), so HiGHS starts each one afresh.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import InvalidRequest
from alphaloop.portfolio_opt import _cutting, _lp
from alphaloop.portfolio_opt._checks import check_problem
from alphaloop.portfolio_opt.cvar import WeightVector, _check_objective, empirical_cvar

# A point's return may fall short of its target by this much times the largest mean before it
# counts as inaccurate: HiGHS' round-off (it solves to 1e-9 feasibility), with room to spare.
_RETURN_RTOL = 1e-7
OPTIMAL = "optimal"
OPTIMAL_INACCURATE = "optimal_inaccurate"

logger = logging.getLogger(__name__)


class FrontierPoint(BaseModel):
    """One certified point of the frontier.

    Attributes:
        target_return: the minimum mean scenario return asked for.
        expected_return: mean scenario return of ``weights`` (at least the target, to round-off).
        cvar: exact CVaR at ``alpha`` of ``weights`` over every scenario.
        lower_bound: a certified lower bound on the CVaR of any portfolio meeting the target.
        weights: read-only (n_assets,) weights.
        status: ``"optimal"`` or ``"optimal_inaccurate"``.
        solve_seconds: wall time of this point.
        n_scenarios_used: scenarios (atoms) in the last subset the solver kept.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    target_return: float
    expected_return: float
    cvar: float
    lower_bound: float
    weights: WeightVector
    status: str
    solve_seconds: float
    n_scenarios_used: int


class Frontier(BaseModel):
    """An efficient frontier: its points in order of increasing target return."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    points: tuple[FrontierPoint, ...]
    alpha: float
    max_weight: float
    n_scenarios: int
    n_atoms: int
    n_assets: int
    warm_start: bool
    solve_seconds: float


@dataclass(frozen=True)
class _Setup:
    """What every point shares: the checked scenarios, their atoms and mean."""

    scenarios: np.ndarray
    atoms: _lp.Atoms
    mean: np.ndarray
    alpha: float
    cap: float


def efficient_frontier(
    scenarios: np.ndarray,
    alpha: float,
    max_weight: float,
    n_points: int,
    *,
    targets: Sequence[float] | None = None,
    warm_start: bool = True,
    n_jobs: int = 1,
) -> Frontier:
    """Traces the long-only, fully invested, capped Mean-CVaR efficient frontier.

    Args:
        scenarios: (n_scenarios, n_assets) equally likely simple returns.
        alpha: CVaR confidence level in (0, 1).
        max_weight: cap on every weight; ``max_weight * n_assets`` must be at least 1.
        n_points: number of points, at least 2 (ignored when ``targets`` is given).
        targets: explicit minimum returns instead of the even spacing (each solved with the
            constraint, the first included).
        warm_start: start each point from its neighbour's tail scenarios (``False`` solves
            every point cold, for comparison).
        n_jobs: threads solving points side by side (each with one BLAS thread). With 2, one
            thread walks up from minimum CVaR and one down from the largest return, each
            warm-started along its own run, until they meet (so each does half the work,
            however unevenly the points cost); the points agree with ``n_jobs=1`` to their
            certificates (where the runs meet, and so a point's first scenario subset, depends
            on timing).

    Returns:
        A :class:`Frontier` whose points are each certified (see the module docstring).

    Raises:
        ValueError: bad shapes or values, ``n_points < 2``, or a cap that leaves equal weights
            the only portfolio (``max_weight * n_assets == 1``: no frontier to trace).
        InvalidRequest: the cap cannot be met, or a target is above the largest return.
        SolverError: the solver returned no usable solution for a point.
    """
    start = time.perf_counter()
    r, a, cap = check_problem(scenarios, alpha, max_weight)
    if cap * r.shape[1] <= 1.0 + 1e-9:
        raise ValueError(
            f"a cap of {cap:g} on {r.shape[1]} assets leaves equal weights the only portfolio: "
            "there is no frontier to trace; raise the cap or add assets"
        )
    setup = _Setup(r, _lp.compress(r, pad=False), r.mean(axis=0), a, cap)
    if targets is None:
        points = _even_frontier(setup, _check_points(n_points), warm_start, _check_jobs(n_jobs))
    else:
        points = _given_targets(setup, [float(t) for t in targets], warm_start)
    return Frontier(
        points=tuple(points),
        alpha=a,
        max_weight=cap,
        n_scenarios=r.shape[0],
        n_atoms=len(setup.atoms.probabilities),
        n_assets=r.shape[1],
        warm_start=warm_start,
        solve_seconds=time.perf_counter() - start,
    )


def _check_jobs(n_jobs: int) -> int:
    if isinstance(n_jobs, bool) or int(n_jobs) != n_jobs or n_jobs < 1:
        raise ValueError(f"n_jobs must be an integer >= 1, got {n_jobs!r}")
    return int(n_jobs)


def _check_points(n_points: int) -> int:
    if isinstance(n_points, bool) or int(n_points) != n_points or n_points < 2:
        raise ValueError(f"n_points must be an integer >= 2, got {n_points!r}")
    return int(n_points)


def _even_frontier(
    setup: _Setup, n_points: int, warm_start: bool, n_jobs: int
) -> list[FrontierPoint]:
    """Minimum CVaR first, the largest return last, evenly spaced targets between."""
    began = time.perf_counter()
    low = _solve(setup, None, None)
    first = _point(setup, low, None, began)
    top = max_return_weights(setup.mean, setup.cap)
    targets = np.linspace(first.expected_return, float(setup.mean @ top), n_points)
    last = _top_point(setup, float(targets[-1]), top if warm_start else None)
    inner = [float(t) for t in targets[1:-1]]
    if not inner:
        return [first, last]
    runs = _Runs(inner, n_jobs)
    # The first run walks up from minimum CVaR, the last down from the largest return.
    starts: list[np.ndarray | None] = [None] * len(runs.seeds)
    if warm_start:
        starts[0] = low.weights
        if len(starts) > 1:
            starts[-1] = last.weights
    jobs = list(zip(runs.seeds, starts, strict=True))
    if len(jobs) == 1:
        grown = [runs.grow(setup, *jobs[0], warm_start)]
    else:
        with _cutting.one_blas_thread(), ThreadPoolExecutor(len(jobs)) as pool:
            grown = list(pool.map(lambda job: runs.grow(setup, *job, warm_start), jobs))
    points = sorted((p for run in grown for p in run), key=lambda p: p.target_return)
    return [first, *points, last]


class _Runs:
    """The inner targets, solved by runs that grow from their seeds until they meet.

    Run ``j`` starts at its seed (with several runs, evenly spread over the targets: the first
    at the lowest, the last at the highest), solves it, then claims the free target next to the
    run (above it first, then below) and solves that from its neighbour's weights, until no
    free target borders it. Points near minimum CVaR cost several times those near the largest
    return (their tails are wider and move more), so runs that meet where they meet share the
    work evenly; which run solves a point only changes its first scenario subset, not its
    certified optimum.
    """

    def __init__(self, targets: list[float], n_jobs: int) -> None:
        self.targets = targets
        count = min(n_jobs, len(targets))
        self.seeds = sorted({round(i) for i in np.linspace(0, len(targets) - 1, count)})
        self._free = [True] * len(targets)
        self._lock = threading.Lock()

    def _claim(self, index: int) -> bool:
        with self._lock:
            if 0 <= index < len(self._free) and self._free[index]:
                self._free[index] = False
                return True
            return False

    def grow(
        self, setup: _Setup, seed: int, start: np.ndarray | None, warm_start: bool
    ) -> list[FrontierPoint]:
        """The points this run solved, from ``seed`` (started from ``start``) outward."""
        if not self._claim(seed):
            return []
        point, weights = self._solved(setup, seed, start)
        points, top, bottom = [point], weights, weights
        high = low = seed
        while True:
            if self._claim(high + 1):
                high += 1
                point, top = self._solved(setup, high, top if warm_start else None)
            elif self._claim(low - 1):
                low -= 1
                point, bottom = self._solved(setup, low, bottom if warm_start else None)
            else:
                return points
            points.append(point)

    def _solved(
        self, setup: _Setup, index: int, start: np.ndarray | None
    ) -> tuple[FrontierPoint, np.ndarray]:
        """Target ``index``'s point and the solver's weights (the next point's start)."""
        began = time.perf_counter()
        found = _solve(setup, self.targets[index], start)
        return _point(setup, found, self.targets[index], began), found.weights


def _given_targets(setup: _Setup, targets: list[float], warm_start: bool) -> list[FrontierPoint]:
    if not targets:
        raise ValueError("targets must hold at least one return")
    highest = float(setup.mean @ max_return_weights(setup.mean, setup.cap))
    if not np.isfinite(targets).all() or max(targets) > highest:
        raise InvalidRequest(
            f"targets must be finite and at most the largest return the cap allows, "
            f"{highest:.6g}; got {targets}"
        )
    return _Runs(targets, 1).grow(setup, 0, None, warm_start)


def _solve(
    setup: _Setup, target: float | None, start_weights: np.ndarray | None
) -> _cutting.Certified:
    """Minimum CVaR (over the atoms) with, when ``target`` is given, ``mean . w >= target``."""
    return _cutting.solve(
        setup.atoms,
        setup.alpha,
        setup.cap,
        1.0,
        np.zeros_like(setup.mean),
        None,
        0.0,
        target=None if target is None else _cutting.Target(setup.mean, target),
        start_weights=start_weights,
    )


def _point(
    setup: _Setup, found: _cutting.Certified, target: float | None, began: float
) -> FrontierPoint:
    """The certified point of a solve: feasible weights, their exact CVaR and the bound."""
    weights = _on_the_cap(found.weights, setup.cap)
    cvar = empirical_cvar(-(setup.scenarios @ weights), setup.alpha)
    expected = float(setup.mean @ weights)
    status = _check_objective(cvar, found.lower, OPTIMAL, "efficient_frontier")
    if target is not None and expected < target - _RETURN_RTOL * _return_scale(setup):
        message = (
            f"efficient_frontier: return {expected:.10g} of the weights is short of the target "
            f"{target:.10g}; point recorded as inaccurate"
        )
        logger.warning(message)
        warnings.warn(message, RuntimeWarning, stacklevel=3)
        status = OPTIMAL_INACCURATE
    return FrontierPoint(
        target_return=expected if target is None else target,
        expected_return=expected,
        cvar=cvar,
        lower_bound=found.lower,
        weights=weights,
        status=status,
        solve_seconds=time.perf_counter() - began,
        n_scenarios_used=found.n_scenarios_used,
    )


def _on_the_cap(weights: np.ndarray, cap: float) -> np.ndarray:
    """``weights`` with those an ulp above the cap put on it, the difference spread over the
    weights strictly inside ``(0, cap)``: a vertex holds many weights at the cap exactly, and
    renormalising the solver's weights can lift them an ulp over it."""
    w = np.minimum(weights, cap)
    inside = (w > 0.0) & (w < cap)
    if inside.any():
        w[inside] *= (1.0 - w[~inside].sum()) / w[inside].sum()
    return w


def _top_point(setup: _Setup, target: float, start: np.ndarray | None) -> FrontierPoint:
    """The largest-return point: exact when one portfolio attains it, else solved."""
    began = time.perf_counter()
    weights = max_return_weights(setup.mean, setup.cap)
    if not _unique_max_return(weights, setup.mean, setup.cap):
        return _point(setup, _solve(setup, target, start), target, began)
    cvar = empirical_cvar(-(setup.scenarios @ weights), setup.alpha)
    # The only portfolio meeting the target: its CVaR is the optimum and its own bound.
    return FrontierPoint(
        target_return=target,
        expected_return=float(setup.mean @ weights),
        cvar=cvar,
        lower_bound=cvar,
        weights=weights,
        status=OPTIMAL,
        solve_seconds=time.perf_counter() - began,
        n_scenarios_used=0,
    )


def max_return_weights(mean: np.ndarray, cap: float) -> np.ndarray:
    """A portfolio of the largest mean return on the capped simplex (the greedy fill)."""
    return _cutting.linear_minimiser(-np.asarray(mean, dtype=np.float64), cap, None, 0.0)


def _unique_max_return(weights: np.ndarray, mean: np.ndarray, cap: float) -> bool:
    """Whether ``weights`` is the only largest-return portfolio.

    The greedy fill takes assets by decreasing mean; another portfolio of the same return
    exists exactly when two assets of equal mean could trade weight (one holds some, the other
    has room), i.e. when a run of equal means is neither all at the cap nor all at zero.
    """
    order = np.argsort(-mean, kind="stable")
    m, w = mean[order], weights[order]
    full, empty = w >= cap, w <= 0.0
    for i in range(len(m) - 1):
        if m[i] == m[i + 1] and not ((full[i] and full[i + 1]) or (empty[i] and empty[i + 1])):
            return False
    return True


def _return_scale(setup: _Setup) -> float:
    return max(float(np.abs(setup.mean).max()), 1e-12)
