"""Mean-CVaR by scenario generation, certified by a lower bound (internal).

Only the tail scenarios shape the optimum: in the Rockafellar-Uryasev LP a scenario whose loss
stays below the VaR ``z`` has ``u_s = 0`` and could be deleted. So the LP is solved on a subset
``S`` (the worst scenarios of the equal-weight portfolio, twice the tail mass), then every
scenario outside ``S`` whose loss under the new weights exceeds the subset's VaR is added, and
the subset is solved again. When no scenario outside ``S`` exceeds the VaR, the subset optimum
is feasible for the full problem and hence optimal. A typical 10,000-scenario problem converges
in two to five rounds on 1,000-1,500 scenarios.

Exactness is certified, not assumed. The tail masses ``q`` of the last subset solve are a
feasible point of the CVaR's dual representation, ``CVaR(w) >= q . loss(w) / (1 - alpha)`` for
every ``w``, so minimising that linear function over the capped simplex (a greedy fill, exact)
gives a lower bound on the optimum. The caller compares it with the exact objective of the
returned weights; their difference bounds how far from optimal the weights can be.

A minimum-return constraint ``rho . w >= target`` (an efficient frontier's points) changes
neither argument: a scenario below the VaR still has ``u_s = 0``, and with the constraint's
multiplier ``t >= 0`` the bound becomes ``min_w (CVaR bound - t (rho . w - target))`` over the
capped simplex, again a greedy fill (weak duality: it is below the constrained optimum for any
``t >= 0``, and equal to it at the optimal ``t``). A neighbouring problem's weights make a
good first subset (their worst scenarios instead of equal weight's): :func:`solve` takes them
as ``start_weights``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np
from threadpoolctl import ThreadpoolController

from alphaloop.portfolio_opt import _ipm

# Each subset holds the worst scenarios of the current weights (the equal-weight portfolio at
# first) up to this multiple of the tail mass.
_INITIAL_TAIL_MULTIPLE = 2.0
_MAX_ROUNDS = 50
_IPM_TOL = 1e-10
# Rounds before the subset holds the whole tail only steer the search; they stop early.
_ROUGH_TOL = 1e-3
# Up to this many scenarios (e.g. a compressed bootstrap) the whole set is solved at once.
_SMALL = 1024


@dataclass(frozen=True)
class Certified:
    """Weights with the exact objective (upper bound) and a certified lower bound."""

    weights: np.ndarray
    upper: float
    lower: float
    rounds: int
    n_scenarios_used: int
    target_multiplier: float = 0.0  # of ``rho . w >= target``, in the objective's units


@dataclass(frozen=True)
class Target:
    """A minimum-return constraint ``returns . w >= value``."""

    returns: np.ndarray
    value: float


def solve(
    returns: np.ndarray,
    probabilities: np.ndarray,
    alpha: float,
    cap: float,
    risk_aversion: float,
    mean: np.ndarray,
    prev: np.ndarray | None,
    cost: float,
    *,
    target: Target | None = None,
    start_weights: np.ndarray | None = None,
) -> Certified:
    """Minimises ``risk_aversion * CVaR - mean . w + cost * |w - prev|_1`` on the capped simplex.

    Args:
        returns: (n_atoms, n_assets) scenario returns.
        probabilities: (n_atoms,) their probabilities, summing to 1.
        alpha: CVaR level; cap: weight cap; risk_aversion: > 0 with a target.
        mean: (n_assets,) expected returns.
        prev, cost: the turnover term (``prev`` None for none).
        target: a minimum-return constraint, or None.
        start_weights: weights whose worst scenarios make the first subset (a neighbouring
            problem's solution), or None for the equal-weight portfolio's.
    """
    # One BLAS thread: the products are at most (2,700 x 392), too small to share well, and on
    # a shared 2-core machine a second, spinning BLAS thread made the 392-asset solve 8-13x
    # slower (0.95-1.0 s single-threaded against 8-13 s, measured back to back at load ~4).
    with _blas().limit(limits=1, user_api="blas"):
        problem = _problem(returns, probabilities, alpha, cap, risk_aversion, mean, prev, cost)
        if target is not None:
            problem = replace(problem, target=target)
        return _solve(problem, start_weights)


@lru_cache(maxsize=1)
def _blas() -> ThreadpoolController:
    return ThreadpoolController()


def one_blas_thread() -> Any:
    """A context in which BLAS runs one thread, for callers that run solves side by side.

    Held around threads that each call :func:`solve`, it keeps every solve's own limit from
    restoring more threads while another solve still runs (each restores the 1 it found).
    """
    return _blas().limit(limits=1, user_api="blas")


@dataclass(frozen=True)
class _Problem:
    """One Mean-CVaR problem as :func:`solve` states it; ``prev`` is None without turnover."""

    returns: np.ndarray
    probabilities: np.ndarray
    tail: float
    cap: float
    risk_aversion: float
    mean: np.ndarray
    prev: np.ndarray | None
    cost: float
    target: Target | None = None

    def objective(self, weights: np.ndarray) -> float:
        """The exact objective of ``weights`` over every scenario."""
        return _objective(
            self.returns,
            self.probabilities,
            self.tail,
            self.risk_aversion,
            self.mean,
            self.prev,
            self.cost,
            weights,
        )


class _Rounds(NamedTuple):
    """Where scenario generation stopped: the last subset, its solve and clean weights."""

    subset: np.ndarray
    result: _ipm.IpmResult
    weights: np.ndarray
    rounds: int


def _problem(
    returns: np.ndarray,
    probabilities: np.ndarray,
    alpha: float,
    cap: float,
    risk_aversion: float,
    mean: np.ndarray,
    prev: np.ndarray | None,
    cost: float,
) -> _Problem:
    turnover = prev is not None and cost > 0.0
    prev_v = prev if turnover else None
    return _Problem(returns, probabilities, 1.0 - alpha, cap, risk_aversion, mean, prev_v, cost)


def _solve(problem: _Problem, start_weights: np.ndarray | None) -> Certified:
    """:func:`solve` within its thread limit: the linear case, or rounds then a certificate."""
    if problem.risk_aversion == 0.0 and problem.target is None:  # the greedy fill is exact
        weights = linear_minimiser(-problem.mean, problem.cap, problem.prev, problem.cost)
        value = problem.objective(weights)
        return Certified(weights, value, value, 0, 0)
    if problem.risk_aversion == 0.0:
        raise ValueError("a minimum-return constraint needs a positive risk aversion")
    return _certify(problem, _generate(problem, start_weights))


def _generate(problem: _Problem, start_weights: np.ndarray | None = None) -> _Rounds:
    """Solves growing scenario subsets until no scenario outside one exceeds its VaR."""
    returns, probabilities, tail = problem.returns, problem.probabilities, problem.tail
    n_atoms, n_assets = returns.shape
    start = np.full(n_assets, 1.0 / n_assets) if start_weights is None else start_weights
    losses = -(returns @ start)
    chosen = np.zeros(n_atoms, dtype=bool)
    chosen[_worst(losses, probabilities, _INITIAL_TAIL_MULTIPLE * tail)] = True
    rounds = 0
    tol = _ROUGH_TOL
    if n_atoms <= _SMALL:  # rounds would cost more than they save: one exact solve
        chosen[:] = True
        tol = _IPM_TOL
    state = None
    while rounds < _MAX_ROUNDS:
        rounds += 1
        subset = np.flatnonzero(chosen)
        if state is None:
            lp = _restricted(problem, subset)
        result = _ipm.solve(lp, tol=tol, state=state)
        state = None
        weights = _clean(result.weights, problem.cap)
        losses = -(returns @ weights)
        outside = np.flatnonzero(~chosen & (losses > result.var))
        if len(outside) == 0:
            if tol == _IPM_TOL:
                break
            # The subset holds the tail: finish the same solve to the tight tolerance.
            tol, state = _IPM_TOL, result.state
            continue
        # Add the worst scenarios beyond the VaR (one tail's mass at most) and the neighbourhood
        # of the new weights' tail, so that later rounds rarely find stragglers.
        chosen[outside[_worst(losses[outside], probabilities[outside], tail)]] = True
        chosen[_worst(losses, probabilities, _INITIAL_TAIL_MULTIPLE * tail)] = True
    return _Rounds(subset, result, weights, rounds)


def _restricted(problem: _Problem, subset: np.ndarray) -> _ipm.RestrictedDual:
    """The LP of ``subset``, its objective divided by the risk aversion."""
    # Same minimiser: at the 1e6 a minimum-CVaR solve passes, the matrix would otherwise hold
    # entries ~1e7 next to 1s.
    risk_aversion = problem.risk_aversion
    target = problem.target
    return _ipm.RestrictedDual(
        problem.returns[subset],
        problem.probabilities[subset],
        problem.mean / risk_aversion,
        1.0 / problem.tail,
        problem.tail,
        problem.cap,
        problem.cost / risk_aversion if problem.prev is not None else 0.0,
        problem.prev,
        None if target is None else target.returns,
        0.0 if target is None else target.value,
    )


def _certify(problem: _Problem, done: _Rounds) -> Certified:
    """The weights with their exact objective and the lower bound from the last tail masses."""
    subset = done.subset
    tail_mass = _feasible_tail(done.result.tail_mass, problem.probabilities[subset], problem.tail)
    scale = problem.risk_aversion / problem.tail
    direction = -scale * (problem.returns[subset].T @ tail_mass) - problem.mean
    # The restricted LP's objective was divided by the risk aversion, its multiplier with it.
    multiplier = max(0.0, done.result.target_multiplier) * problem.risk_aversion
    offset = 0.0
    if problem.target is not None:
        direction = direction - multiplier * problem.target.returns
        offset = multiplier * problem.target.value
    lower_w = linear_minimiser(direction, problem.cap, problem.prev, problem.cost)
    lower = float(direction @ lower_w) + _turnover(lower_w, problem.prev, problem.cost) + offset
    upper = problem.objective(done.weights)
    return Certified(done.weights, upper, lower, done.rounds, len(subset), multiplier)


def linear_minimiser(
    direction: np.ndarray, cap: float, prev: np.ndarray | None, cost: float
) -> np.ndarray:
    """Exact minimiser of ``direction . w + cost * |w - prev|_1`` on ``{sum w = 1, 0 <= w <= cap}``.

    Each asset's term is convex piecewise linear (slope ``c - cost`` up to ``prev``, ``c + cost``
    above), so filling the cheapest slopes first until the weights sum to 1 is optimal.
    """
    n = len(direction)
    if prev is None or cost == 0.0:
        starts = np.zeros(n)
        lengths = np.full(n, cap)
        slopes = direction
        owner = np.arange(n)
    else:
        kink = np.clip(prev, 0.0, cap)
        starts = np.concatenate([np.zeros(n), kink])
        lengths = np.concatenate([kink, cap - kink])
        slopes = np.concatenate([direction - cost, direction + cost])
        owner = np.concatenate([np.arange(n), np.arange(n)])
    weights = np.zeros(n)
    left = 1.0
    for seg in np.argsort(slopes, kind="stable"):
        if left <= 0.0:
            break
        step = min(lengths[seg], left)
        weights[owner[seg]] = starts[seg] + step
        left -= step
    return weights


def weighted_cvar(losses: np.ndarray, probabilities: np.ndarray, tail: float) -> float:
    """CVaR of a discrete loss distribution: the mean of its worst ``tail`` probability mass."""
    order = np.argsort(-losses, kind="stable")
    mass = probabilities[order]
    before = np.concatenate([[0.0], np.cumsum(mass)[:-1]])
    share = np.clip(tail - before, 0.0, mass)
    return float(share @ losses[order]) / tail


def _objective(
    returns: np.ndarray,
    probabilities: np.ndarray,
    tail: float,
    risk_aversion: float,
    mean: np.ndarray,
    prev: np.ndarray | None,
    cost: float,
    weights: np.ndarray,
) -> float:
    cvar = weighted_cvar(-(returns @ weights), probabilities, tail) if risk_aversion else 0.0
    return risk_aversion * cvar - float(mean @ weights) + _turnover(weights, prev, cost)


def _turnover(weights: np.ndarray, prev: np.ndarray | None, cost: float) -> float:
    return 0.0 if prev is None else cost * float(np.abs(weights - prev).sum())


def _worst(losses: np.ndarray, probabilities: np.ndarray, mass: float) -> np.ndarray:
    """Indices of the largest losses holding at least ``mass`` probability (all if less)."""
    # Only the top ``count`` rows can be needed (each holds at least the smallest probability),
    # so a partition and a short sort replace sorting all scenarios.
    count = min(len(losses), int(mass / float(probabilities.min())) + 2)
    order = np.arange(len(losses))
    if count < len(losses):
        order = np.argpartition(-losses, count - 1)[:count]
    order = order[np.argsort(-losses[order], kind="stable")]
    before = np.concatenate([[0.0], np.cumsum(probabilities[order])[:-1]])
    return order[before < mass]


def _clean(raw: np.ndarray, cap: float) -> np.ndarray:
    """Interior-point weights clipped into the box and renormalised (a 1e-12 correction)."""
    w = np.clip(raw, 0.0, cap)
    return w / w.sum()


def _feasible_tail(q: np.ndarray, mass: np.ndarray, tail: float) -> np.ndarray:
    """``q`` moved into ``{0 <= q <= mass, sum q = tail}``, where the CVaR bound holds exactly."""
    q = np.clip(q, 0.0, mass)
    total = float(q.sum())
    if total > tail:
        return q * (tail / total)
    room = mass - q
    return q + room * ((tail - total) / float(room.sum()))
