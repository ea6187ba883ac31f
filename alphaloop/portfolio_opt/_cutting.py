"""Mean-CVaR solved exactly on HiGHS by scenario generation, certified by a lower bound (internal).

Every Mean-CVaR problem the package solves (a trial's rebalance, the minimum-CVaR baseline, a
frontier point) comes here, and each goes to the same LP: the dual of the Rockafellar-Uryasev
problem, :class:`._lp.MeanCvarLP`, solved by HiGHS' simplex.

Only the tail scenarios shape the optimum: in the Rockafellar-Uryasev LP a scenario whose loss
stays below the VaR ``z`` has ``u_s = 0`` and could be deleted. So a problem of many scenarios
is solved on a subset ``S`` (the worst scenarios of the equal-weight portfolio, twice the tail
mass), then every scenario outside ``S`` whose loss under the new weights exceeds the subset's
VaR is added, and the subset is solved again. When no scenario outside ``S`` exceeds the VaR,
the subset optimum is feasible for the full problem and hence optimal. A 10,000-scenario
problem converges in two to four rounds on 1,100-2,700 of its scenarios. Each scenario is
one column of the dual LP, so a round adds columns and HiGHS goes on from its last basis (the
old basis stays feasible: a few primal simplex iterations). Up to :data:`WHOLE_SET` scenarios
(a trial's bootstrap merges 5,000 draws into at most ~500) the whole set is solved at once:
rounds would cost more than they save.

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

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from alphaloop.portfolio_opt import _lp
from alphaloop.portfolio_opt._checks import clean_weights

# Each first subset holds the worst scenarios of the starting weights up to this multiple of
# the tail mass, and each round adds the new weights' worst scenarios up to it as well.
_TAIL_MULTIPLE = 2.0
_MAX_ROUNDS = 50
# Up to this many scenarios (e.g. a compressed bootstrap) the whole set is solved at once.
WHOLE_SET = 1024


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
    atoms: _lp.Atoms,
    alpha: float,
    cap: float,
    risk_aversion: float,
    mean: np.ndarray,
    prev: np.ndarray | None,
    cost: float,
    *,
    target: Target | None = None,
    start_weights: np.ndarray | None = None,
    merged_from: int | None = None,
) -> Certified:
    """Minimises ``risk_aversion * CVaR - mean . w + cost * |w - prev|_1`` on the capped simplex.

    Args:
        atoms: the scenarios: (n_atoms, n_assets) returns and their probabilities, summing
            to 1.
        alpha: CVaR level; cap: weight cap; risk_aversion: > 0 with a target.
        mean: (n_assets,) expected returns.
        prev, cost: the turnover term (``prev`` None for none).
        target: a minimum-return constraint, or None.
        start_weights: weights whose worst scenarios make the first subset (a neighbouring
            problem's solution), or None for the equal-weight portfolio's.
        merged_from: for the solves of a rolling backtest, how many equally likely scenarios
            the atoms merge. A problem solved whole then goes to a kept LP of a bucketed size
            (at most that many rows, zero-mass padding), started from the last optimum of that
            LP within the current sequence (:func:`._lp.start_sequence`): about 30% faster
            over a backtest, and reproducible, since a trial starts its own sequence.

    Raises:
        SolverError: HiGHS returned no optimum, or weights off the constraints.
        ValueError: a target with no risk aversion.
    """
    # One BLAS thread: the products here are at most (10,000 x 400) by a vector, too small to
    # share, and a second BLAS thread spinning beside HiGHS on a shared 2-core machine cost
    # 15% of a 100-asset solve by scenario generation (CPU and wall, at load ~15).
    with one_blas_thread():
        return _solve(
            atoms, alpha, cap, risk_aversion, mean, prev, cost, target, start_weights, merged_from
        )


@lru_cache(maxsize=1)
def _blas() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread() -> Any:
    """A context in which BLAS runs one thread; held around threads that each call
    :func:`solve`, so that no solve's own limit restores more threads while another runs (each
    restores the one it found)."""
    return _blas().limit(limits=1, user_api="blas")


def _solve(
    atoms: _lp.Atoms,
    alpha: float,
    cap: float,
    risk_aversion: float,
    mean: np.ndarray,
    prev: np.ndarray | None,
    cost: float,
    target: Target | None,
    start_weights: np.ndarray | None,
    merged_from: int | None,
) -> Certified:
    """:func:`solve` within its thread limit."""
    turnover = prev is not None and cost > 0.0
    problem = _Problem(
        atoms.returns,
        atoms.probabilities,
        1.0 - alpha,
        cap,
        risk_aversion,
        mean,
        prev if turnover else None,
        cost,
        target,
    )
    if risk_aversion == 0.0 and target is None:  # the greedy fill is exact
        weights = linear_minimiser(-mean, cap, problem.prev, cost)
        value = problem.objective(weights)
        return Certified(weights, value, value, 0, 0)
    if risk_aversion == 0.0:
        raise ValueError("a minimum-return constraint needs a positive risk aversion")
    if len(atoms.probabilities) <= WHOLE_SET:
        done = _whole(problem, merged_from)
    else:
        done = _generate(problem, start_weights)
    return _certify(problem, done)


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
        losses = -(self.returns @ weights)
        lam = self.risk_aversion
        cvar = weighted_cvar(losses, self.probabilities, self.tail) if lam else 0.0
        return lam * cvar - float(self.mean @ weights) + _turnover(weights, self.prev, self.cost)

    def numbers(self, rows: np.ndarray | slice) -> dict[str, Any]:
        """The dual LP's numbers for scenario ``rows``, as :meth:`._lp.MeanCvarLP.set` takes
        them (divided by the risk aversion)."""
        lam, target = self.risk_aversion, self.target
        return {
            "scaled_returns": self.returns[rows] / self.tail,
            "mass": self.probabilities[rows],
            "tail_mass": self.tail,
            "mean": self.mean / lam,
            "cap": self.cap,
            "cost": self.cost / lam,
            "cost_prev": None if self.prev is None else (self.cost / lam) * self.prev,
            "target_returns": None if target is None else target.returns,
            "target": 0.0 if target is None else target.value,
        }


class _Rounds(NamedTuple):
    """Where the solve stopped: the scenarios of its LP, their tail masses, the target's
    multiplier, the clean weights and the number of rounds."""

    rows: np.ndarray
    tail_mass: np.ndarray
    target_multiplier: float
    weights: np.ndarray
    rounds: int


def _whole(problem: _Problem, merged_from: int | None) -> _Rounds:
    """One solve of every scenario (of the kept LP of its bucketed shape, for a backtest)."""
    n_atoms, n_assets = problem.returns.shape
    has_prev, has_target = problem.prev is not None, problem.target is not None
    if merged_from is None or has_target:
        lp, padding = _lp.MeanCvarLP(n_atoms, n_assets, has_prev, has_target), 0
    else:
        n_rows = _lp.padded_size(n_atoms, merged_from)
        lp, padding = _lp.mean_cvar_lp(n_rows, n_assets, has_prev), n_rows - n_atoms
    numbers = problem.numbers(slice(None))
    if padding:  # zero-mass rows up to the cached shape: the same optimum
        for name in ("scaled_returns", "mass"):
            numbers[name] = np.concatenate(
                [numbers[name], np.zeros((padding, *numbers[name].shape[1:]))]
            )
    with lp.lock:
        lp.set(**numbers)
        _lp.solve(lp)
        weights = clean_weights(lp.weights, problem.cap)
        tail_mass = lp.tail_mass[:n_atoms].copy()
        multiplier = lp.target_multiplier
    return _Rounds(np.arange(n_atoms), tail_mass, multiplier, weights, 1)


def _generate(problem: _Problem, start_weights: np.ndarray | None) -> _Rounds:
    """Solves growing scenario subsets until no scenario outside one exceeds its VaR."""
    returns, probabilities, tail = problem.returns, problem.probabilities, problem.tail
    n_atoms, n_assets = returns.shape
    start = np.full(n_assets, 1.0 / n_assets) if start_weights is None else start_weights
    chosen = np.zeros(n_atoms, dtype=bool)
    rows = _worst(-(returns @ start), probabilities, _TAIL_MULTIPLE * tail)
    chosen[rows] = True
    lp = _lp.MeanCvarLP(len(rows), n_assets, problem.prev is not None, problem.target is not None)
    lp.set(**problem.numbers(rows))
    _lp.solve(lp)
    for rounds in range(1, _MAX_ROUNDS + 1):
        weights = clean_weights(lp.weights, problem.cap)
        losses = -(returns @ weights)
        var = losses[rows][_worst(losses[rows], probabilities[rows], tail)].min()
        outside = np.flatnonzero(~chosen & (losses > var))
        if len(outside) == 0 or rounds == _MAX_ROUNDS:
            break  # optimal; or not proven, and the certificate will say by how much
        # Add the worst scenarios beyond the VaR (one tail's mass at most) and the neighbourhood
        # of the new weights' tail, so that later rounds rarely find stragglers.
        new = np.zeros(n_atoms, dtype=bool)
        new[outside[_worst(losses[outside], probabilities[outside], tail)]] = True
        new[_worst(losses, probabilities, _TAIL_MULTIPLE * tail)] = True
        added = np.flatnonzero(new & ~chosen)
        chosen[added] = True
        rows = np.concatenate([rows, added])
        numbers = problem.numbers(added)
        _lp.checked(lp.add_scenarios(numbers["scaled_returns"], numbers["mass"]))
    return _Rounds(rows, lp.tail_mass, lp.target_multiplier, weights, rounds)


def _certify(problem: _Problem, done: _Rounds) -> Certified:
    """The weights with their exact objective and the lower bound from the last tail masses."""
    rows = done.rows
    tail_mass = _feasible_tail(done.tail_mass, problem.probabilities[rows], problem.tail)
    scale = problem.risk_aversion / problem.tail
    direction = -scale * (problem.returns[rows].T @ tail_mass) - problem.mean
    # The LP's objective was divided by the risk aversion, its multiplier with it.
    multiplier = max(0.0, done.target_multiplier) * problem.risk_aversion
    offset = 0.0
    if problem.target is not None:
        direction = direction - multiplier * problem.target.returns
        offset = multiplier * problem.target.value
    lower_w = linear_minimiser(direction, problem.cap, problem.prev, problem.cost)
    lower = float(direction @ lower_w) + _turnover(lower_w, problem.prev, problem.cost) + offset
    upper = problem.objective(done.weights)
    return Certified(done.weights, upper, lower, done.rounds, len(rows), multiplier)


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


def _feasible_tail(q: np.ndarray, mass: np.ndarray, tail: float) -> np.ndarray:
    """``q`` moved into ``{0 <= q <= mass, sum q = tail}``, where the CVaR bound holds exactly."""
    q = np.clip(q, 0.0, mass)
    total = float(q.sum())
    if total > tail:
        return q * (tail / total)
    room = mass - q
    return q + room * ((tail - total) / float(room.sum()))
