"""Cached, parameterised cvxpy LPs behind :mod:`.overlay` and the former Mean-CVaR path (internal).

Mean-CVaR solves now go through :mod:`._cutting` (scenario generation around a dense interior
point, certified); the dual LP below is the former path, kept selectable (``cvar._SOLVER``) so
benchmarks can time both in one run, and the fallback when the interior point fails. The
measurements quoted below are of that former path.

Why the Mean-CVaR problem is solved in its *dual* form: the Rockafellar-Uryasev primal has one
row per scenario (5,000 rows at the default knob), and both simplex and interior-point solvers
spend most of their time on those rows. Its LP dual has one row per asset plus one (21 rows at
20 assets) and one *bounded column* per scenario, which HiGHS' dual simplex handles with bound
flips; the optimal weights are the duals of the asset rows. Measured at 20 assets x 5,000
distinct scenarios (medians): primal 0.5-0.6 s with HiGHS (simplex or IPM), 0.14 s with
Clarabel; dual 0.11 s with Clarabel, 0.22 s with HiGHS IPM, ~0.045 s with HiGHS dual simplex
(of which ~0.015 s is cvxpy filling parameters and handing the matrix to HiGHS).

Why scenarios are compressed: a block bootstrap of a trailing window of T days has at most
T - horizon + 1 distinct scenarios, so 5,000 draws usually hold a few hundred distinct rows.
Merging equal rows into one scenario with the summed probability is exact (CVaR of a discrete
distribution depends only on its atoms and their masses) and shrinks the LP by an order of
magnitude (~6 ms per solve instead of ~45 ms). Compressed sizes are rounded up to a bucket and
padded with zero-mass rows, so the number of distinct cached problems stays small.

Why problems are cached: scenarios, probabilities and every scalar enter as ``cp.Parameter``
(the problems are DPP), so cvxpy canonicalises each shape once (~0.05-0.2 s) and later solves
only copy numbers in.

Why solves are warm-started, but only within a sequence: HiGHS started from the previous
solution of a cached problem is ~30% faster over a rolling backtest (0.33 s against 0.48 s for a
default ``cufolio_only`` trial), but its optimum can differ in the last bits depending on what it
was started from. A trial calls :func:`start_sequence` first, which makes the next solve of every
cached problem start cold, so its results depend on its own solves only: same inputs, same
numbers, whatever the process solved before.

The risk overlay stays in primal form: its dual needs one row per scenario anyway (the CVaR
budget's multiplier scales every scenario bound) and measured ~4x slower than the primal.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import warnings
from dataclasses import dataclass, field
from functools import lru_cache

import cvxpy as cp
import numpy as np

from alphaloop.exceptions import SolverError

logger = logging.getLogger(__name__)

# Compressed sizes are padded up to a multiple of this; small enough that padding costs little,
# large enough that the sizes one trial produces share one or two cached problems.
_BUCKET = 256


@dataclass(frozen=True)
class Atoms:
    """A discrete scenario distribution: distinct return rows and their probabilities."""

    returns: np.ndarray  # (n_rows, n_assets); zero-mass padding rows are all zeros
    probabilities: np.ndarray  # (n_rows,), sums to 1


def compress(scenarios: np.ndarray, pad: bool = True) -> Atoms:
    """Merges identical scenario rows into atoms, padding to a bucketed size (when ``pad``).

    Rows are compared bytewise, which is exact; rows equal in value but not in bytes (``0.0``
    and ``-0.0``) merely stay separate atoms, which changes nothing in the LP.
    """
    n_scen, n_assets = scenarios.shape
    rows = np.ascontiguousarray(scenarios, dtype=np.float64)
    keys = rows.view(np.dtype((np.void, rows.itemsize * n_assets))).ravel()
    _, first, counts = np.unique(keys, return_index=True, return_counts=True)
    if len(first) > 0.8 * n_scen:  # little to gain; keep the plain uniform problem
        return Atoms(rows, np.full(n_scen, 1.0 / n_scen))
    atoms = Atoms(rows[first], counts / n_scen)
    return padded(atoms, n_scen) if pad else atoms


def padded(atoms: Atoms, n_scenarios: int) -> Atoms:
    """Atoms padded with zero-mass rows up to a bucketed size (at most ``n_scenarios`` rows)."""
    n_rows, n_assets = atoms.returns.shape
    size = min(n_scenarios, -(-n_rows // _BUCKET) * _BUCKET)
    if size <= n_rows:
        return atoms
    returns = np.zeros((size, n_assets))
    probabilities = np.zeros(size)
    returns[:n_rows] = atoms.returns
    probabilities[:n_rows] = atoms.probabilities
    return Atoms(returns, probabilities)


@dataclass
class MeanCvarLP:
    """Dual of ``min lam*CVaR_a(w) - mu.w + c*|w - prev|_1`` s.t. ``sum w = 1, 0 <= w <= cap``.

    With row probabilities ``pi`` and ``q_s = lam * pi_s * x_s / (1 - a)`` the dual reads::

        max  nu - cap * sum(eta) - (c * prev) . d
        s.t. (lam / (1-a)) * R' diag(pi) x + mu + nu - eta - c * d <= 0     (dual: w)
             pi . x = 1 - a,   0 <= x <= 1,   eta >= 0,   -1 <= d <= 1

    ``d`` exists only in the turnover variant. The bounds on ``x`` are constants because cvxpy
    treats a variable with parameter bounds as parameter-dependent, which breaks DPP.
    """

    problem: cp.Problem
    asset_rows: cp.Constraint
    scaled_returns: cp.Parameter
    mass: cp.Parameter
    tail_mass: cp.Parameter
    mean: cp.Parameter
    cap: cp.Parameter
    cost: cp.Parameter | None
    cost_prev: cp.Parameter | None
    lock: threading.Lock = field(default_factory=threading.Lock)
    sequence: int = -1  # the sequence of the last solve (see start_sequence)


# Each cached problem holds its canonical form, tens of MB at 10,000 x 20; a trial uses two or
# three shapes, so a short LRU suffices.
@lru_cache(maxsize=8)
def mean_cvar_lp(n_rows: int, n_assets: int, has_prev: bool) -> MeanCvarLP:
    """The cached dual Mean-CVaR LP for one shape."""
    scaled = cp.Parameter((n_rows, n_assets))
    mass = cp.Parameter(n_rows, nonneg=True)
    tail_mass = cp.Parameter(nonneg=True)
    mean = cp.Parameter(n_assets)
    cap = cp.Parameter(nonneg=True)
    x = cp.Variable(n_rows, bounds=[0, 1])
    nu = cp.Variable()
    eta = cp.Variable(n_assets, bounds=[0, None])
    lhs = scaled.T @ x + mean + nu - eta
    objective = nu - cap * cp.sum(eta)
    cost = cost_prev = None
    if has_prev:
        cost = cp.Parameter(nonneg=True)
        cost_prev = cp.Parameter(n_assets)
        d = cp.Variable(n_assets, bounds=[-1, 1])
        lhs = lhs - cost * d
        objective = objective - cost_prev @ d
    asset_rows = lhs <= 0
    problem = cp.Problem(cp.Maximize(objective), [asset_rows, mass @ x == tail_mass])
    return MeanCvarLP(problem, asset_rows, scaled, mass, tail_mass, mean, cap, cost, cost_prev)


@dataclass
class OverlayLP:
    """Primal ``min |w - target|_1`` s.t. ``CVaR_a(w) <= budget, sum w = 1, 0 <= w <= cap``.

    CVaR enters through the Rockafellar-Uryasev rows ``u_s >= -R_s w - z``, ``u >= 0`` with
    ``z + sum(pi_s u_s) / (1 - a) <= budget``.
    """

    problem: cp.Problem
    weights: cp.Variable
    returns: cp.Parameter
    scaled_mass: cp.Parameter
    target: cp.Parameter
    budget: cp.Parameter
    cap: cp.Parameter
    lock: threading.Lock = field(default_factory=threading.Lock)
    sequence: int = -1  # the sequence of the last solve (see start_sequence)


@lru_cache(maxsize=4)
def overlay_lp(n_rows: int, n_assets: int) -> OverlayLP:
    """The cached risk-overlay LP for one shape."""
    returns = cp.Parameter((n_rows, n_assets))
    scaled_mass = cp.Parameter(n_rows, nonneg=True)
    target = cp.Parameter(n_assets)
    budget = cp.Parameter()
    cap = cp.Parameter(nonneg=True)
    w = cp.Variable(n_assets, nonneg=True)
    gap = cp.Variable(n_assets)
    z = cp.Variable()
    u = cp.Variable(n_rows, bounds=[0, None])
    constraints = [
        u >= -(returns @ w) - z,
        z + scaled_mass @ u <= budget,
        cp.sum(w) == 1,
        w <= cap,  # a row, not a bound: parameter bounds break DPP
        gap >= w - target,
        gap >= target - w,
    ]
    problem = cp.Problem(cp.Minimize(cp.sum(gap)), constraints)
    return OverlayLP(problem, w, returns, scaled_mass, target, budget, cap)


# Solvers in order of preference; Clarabel is the fallback when HiGHS fails. HiGHS keeps its
# defaults: presolve off, devex pricing, other price/crash/scaling strategies and skipping the
# warm start all measured within noise of them, and switching scaling off was faster but moved
# the optimum by ~1e-5 relative.
SOLVER_OPTIONS: dict[str, dict[str, object]] = {
    "HIGHS": {},
    "CLARABEL": {},
}


_sequence = 0
_banner_lock = threading.Lock()
_banner_shown = False


def _absorb_highs_banner() -> None:
    """Makes this process's first HiGHS object with descriptor 1 on /dev/null, once.

    HiGHS writes its banner ("Running HiGHS 1.16.0 ... Copyright") to descriptor 1 when the
    first ``Highs`` object of a process is made: before any option can apply, so neither
    cvxpy's ``verbose=False`` nor HiGHS' ``output_flag`` silences it, and it lands in front of
    a ``--json`` document or in the middle of a table. Descriptor 1 is swapped only for that
    one constructor call; no solve output is hidden (a verbose solve still logs).
    """
    global _banner_shown
    with _banner_lock:
        if _banner_shown:
            return
        _banner_shown = True
        try:
            import highspy
        except ImportError:  # cvxpy without HiGHS: no banner either
            return
        sys.stdout.flush()  # Python's own buffered output goes where it was meant to
        saved = os.dup(1)
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.close(null)
            highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)


def start_sequence() -> None:
    """Starts a new sequence of solves: the next solve of every cached problem starts cold.

    Call it where a computation that must be reproducible begins (a trial, a baseline).
    """
    global _sequence
    _sequence += 1


def solve(lp: MeanCvarLP | OverlayLP, accept: tuple[str, ...] = ()) -> str:
    """Solves ``lp.problem`` with the first solver that returns a solution; returns the status.

    Warm-started from the problem's previous solution only within the current sequence.

    Statuses in ``accept`` (e.g. ``"infeasible"`` for the overlay) are returned as they are.
    An inaccurate solution warns and is returned as ``"optimal_inaccurate"``.

    Raises:
        SolverError: no solver returned a solution.
    """
    _absorb_highs_banner()
    problem = lp.problem
    warm = lp.sequence == _sequence
    lp.sequence = _sequence
    failures: list[str] = []
    for name, options in SOLVER_OPTIONS.items():
        try:
            problem.solve(solver=name, warm_start=warm, **options)
        except cp.error.SolverError as err:
            failures.append(f"{name}: {err}")
            logger.warning("%s failed (%s); trying the next solver", name, err)
            continue
        status = problem.status
        if status == cp.OPTIMAL or status in accept:
            if failures:
                logger.info("%s solved after %s", name, "; ".join(failures))
            return status
        if status == cp.OPTIMAL_INACCURATE:
            message = f"{name} returned an inaccurate solution; recorded as {status!r}"
            logger.warning(message)
            warnings.warn(message, RuntimeWarning, stacklevel=3)
            return status
        failures.append(f"{name}: status {status!r}")
        logger.warning("%s returned status %r; trying the next solver", name, status)
    raise SolverError("no solver returned a solution (" + "; ".join(failures) + ")")
