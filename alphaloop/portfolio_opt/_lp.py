"""The LPs behind the Mean-CVaR solver and :mod:`.overlay`, all solved by HiGHS (internal).

One solver per problem: the Mean-CVaR dual (:class:`MeanCvarLP`, handed to HiGHS directly) for
every Mean-CVaR solve, a trial's or a frontier's, whole or by scenario generation
(:mod:`._cutting`); the risk overlay's primal (:class:`OverlayLP`, a cvxpy model solved by
HiGHS). A solve HiGHS cannot finish is a :class:`~alphaloop.exceptions.SolverError`, never a
second solver's answer. cvxpy stays the reference the tests compare the dual with.

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

Why problems are cached: the Mean-CVaR dual of each shape a backtest solves keeps its matrix
layout and fills in numbers in place, then hands them to HiGHS itself (:class:`MeanCvarLP`); it
once went through cvxpy, whose filling of parameters took about half of each solve at a
trial's sizes. The
overlay's scenarios, probabilities and every scalar enter as ``cp.Parameter`` (the problem is
DPP), so cvxpy canonicalises each shape once (~0.05-0.2 s) and later solves only copy numbers
in.

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
from typing import TYPE_CHECKING

import numpy as np

from alphaloop.exceptions import SolverError

if TYPE_CHECKING:
    import cvxpy as cp

logger = logging.getLogger(__name__)

# cvxpy's names of the statuses a solve returns (cvxpy itself is imported only when a problem
# goes through it: about a second that a Mean-CVaR trial, solved by HiGHS directly, never pays).
OPTIMAL, OPTIMAL_INACCURATE = "optimal", "optimal_inaccurate"
INFEASIBLE, INFEASIBLE_INACCURATE = "infeasible", "infeasible_inaccurate"

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
    and ``-0.0``) merely stay separate atoms, which changes nothing in the LP. Atoms come in
    the bytewise order of their rows.
    """
    n_scen = scenarios.shape[0]
    rows = np.ascontiguousarray(scenarios, dtype=np.float64)
    first, counts = _distinct_rows(rows)
    if len(first) > 0.8 * n_scen:  # little to gain; keep the plain uniform problem
        return Atoms(rows, np.full(n_scen, 1.0 / n_scen))
    atoms = Atoms(rows[first], counts / n_scen)
    return padded(atoms, n_scen) if pad else atoms


def _distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first index of each distinct row of ``rows`` (bytewise) and its count, the rows in
    bytewise order: ``np.unique`` over the rows' bytes, as :func:`compress` needs it.

    A bytewise sort of thousands of rows costs more than the LP it shrinks, so the rows are
    grouped by a 64-bit hash first and only the distinct ones sorted. The hash reads a few
    columns (:data:`_KEY_COLUMNS`): hashing all 400 columns of 5,000 bootstrap scenarios took
    a quarter of a 400-asset Mean-CVaR trial. Every row is then checked against its group's
    first row, so rows that agree only on those columns cost a hash of every column, and a
    collision of that (never seen) the full sort, never a wrong atom."""
    as_void = np.dtype((np.void, rows.itemsize * rows.shape[1]))
    words = rows.view(np.uint64)
    n_cols = words.shape[1]
    few = np.unique(np.linspace(0, n_cols - 1, min(n_cols, _KEY_COLUMNS)).astype(np.intp))
    for columns in (few, slice(None)):
        _, first, inverse, counts = np.unique(
            _row_hash(words[:, columns]), return_index=True, return_inverse=True, return_counts=True
        )
        if np.array_equal(words, words[first[inverse]]):
            order = np.argsort(rows[first].view(as_void).ravel())
            return first[order], counts[order]
    keys = rows.view(as_void).ravel()  # a collision of the full hash: sort them all
    _, first, counts = np.unique(keys, return_index=True, return_counts=True)
    return first, counts


# Columns the first hash of :func:`_distinct_rows` reads, spread over the row.
_KEY_COLUMNS = 8


def _row_hash(words: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row of 64-bit words (multiply-shift mixing, summed mod 2^64)."""
    odd = np.arange(1, 2 * words.shape[1], 2, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    return ((words ^ (words >> np.uint64(29))) * odd).sum(axis=1)


def padded_size(n_rows: int, n_scenarios: int) -> int:
    """``n_rows`` rounded up to a bucket, but to at most ``n_scenarios`` rows."""
    return max(n_rows, min(n_scenarios, -(-n_rows // _BUCKET) * _BUCKET))


def padded(atoms: Atoms, n_scenarios: int) -> Atoms:
    """Atoms padded with zero-mass rows up to a bucketed size (at most ``n_scenarios`` rows)."""
    n_rows, n_assets = atoms.returns.shape
    size = padded_size(n_rows, n_scenarios)
    if size <= n_rows:
        return atoms
    returns = np.zeros((size, n_assets))
    probabilities = np.zeros(size)
    returns[:n_rows] = atoms.returns
    probabilities[:n_rows] = atoms.probabilities
    return Atoms(returns, probabilities)


class MeanCvarLP:
    """Dual of ``min lam*CVaR_a(w) - mu.w + c*|w - prev|_1`` s.t. ``sum w = 1, 0 <= w <= cap``
    (and ``rho . w >= target`` when ``has_target``), over a set of scenario rows, divided by
    ``lam``.

    With row probabilities ``pi`` and ``q_s`` the tail mass row ``s`` carries, the dual reads::

        max  nu - cap * sum(eta) - (c * prev) . d + target * t
        s.t. R' q / (1-a) + mu + nu - eta - c * d + t * rho <= 0     (dual: w)
             sum(q) = 1 - a,   0 <= q <= pi,   eta >= 0,   -1 <= d <= 1,   t >= 0

    with ``mu`` and ``c`` already divided by ``lam`` (the same weights; at the ``lam = 1e6`` of a
    minimum-CVaR solve the matrix would otherwise hold entries ~1e7 next to 1s). ``d`` exists
    only in the turnover variant and ``t`` (the return constraint's multiplier) only with a
    target. Each scenario's column is ``(1, R_s / (1-a))`` bounded by its probability: every
    entry of the matrix is of the order of one, however many scenarios share the mass, which
    keeps HiGHS' tolerances meaningful (with the probabilities in the columns instead, 10,000
    distinct scenarios of 392 assets left 1e-5 of the objective unproven). The LP goes to
    HiGHS as a column-wise matrix (columns ``nu, eta, d, t, q``; the equality row first) filled
    in place. The weights are the asset rows' duals; the value is the objective at HiGHS'
    primal solution. One column per scenario: scenario generation (:mod:`._cutting`) starts
    with some rows and adds more (:meth:`add_scenarios`), HiGHS going on from its last basis.
    """

    def __init__(
        self, n_rows: int, n_assets: int, has_prev: bool, has_target: bool = False
    ) -> None:
        self.n_rows, self.n_assets = n_rows, n_assets
        self.has_prev, self.has_target = has_prev, has_target
        k = n_assets
        n_dual = k + (k if has_prev else 0)  # eta, d: one entry each
        self.n_fixed = 1 + n_dual + (1 if has_target else 0)  # nu, eta, d, t
        self.n_cols = self.n_fixed + n_rows
        # nu: +1 on every asset row; eta_i and d_i: one entry on asset row i; t: rho on every
        # asset row; q_s: the equality row (a 1), then every asset row (its scaled returns),
        # zeros kept.
        one_each = np.arange(1, k + 1, dtype=np.int32)
        every_asset = [one_each] if has_target else []
        self.index = np.concatenate(
            [
                one_each,
                one_each,
                *([one_each] if has_prev else []),
                *every_asset,
                np.tile(np.arange(k + 1, dtype=np.int32), n_rows),
            ]
        )
        counts = [k, *([1] * n_dual), *([k] if has_target else []), *([k + 1] * n_rows)]
        self.start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        self.value = np.zeros(len(self.index))
        self.value[:k] = 1.0
        self.value[k : 2 * k] = -1.0
        fixed_nnz = k + n_dual + (k if has_target else 0)
        self._q_block = self.value[fixed_nnz:].reshape(n_rows, k + 1)
        self._q_block[:, 0] = 1.0
        self.cost = np.zeros(self.n_cols)
        self.cost[0] = -1.0  # maximise nu: minimise -nu
        self.col_lower = np.zeros(self.n_cols)
        self.col_lower[0] = -np.inf
        self.col_upper = np.full(self.n_cols, np.inf)
        if has_prev:
            self.col_lower[1 + k : 1 + n_dual] = -1.0
            self.col_upper[1 + k : 1 + n_dual] = 1.0
        self._continuous = np.zeros(self.n_cols, dtype=np.int32)  # HiGHS' kContinuous
        self.row_lower = np.full(k + 1, -np.inf)
        self.row_upper = np.zeros(k + 1)
        self.cap = 0.0
        self.cost_prev = np.zeros(k)
        self.target = 0.0
        self.weights: np.ndarray | None = None  # the solve's asset-row duals
        self.objective = float("nan")  # the solve's optimal value
        self.tail_mass = np.zeros(n_rows)  # q of each row, in column order
        self.target_multiplier = 0.0  # t
        self.lock = threading.Lock()
        self.sequence = -1  # the sequence of the last solve (see start_sequence)
        self._solution: object | None = None  # HiGHS' last optimal solution (a warm start)
        self._highs: object | None = None  # the HiGHS instance of the last solve

    def set(
        self,
        scaled_returns: np.ndarray,
        mass: np.ndarray,
        tail_mass: float,
        mean: np.ndarray,
        cap: float,
        cost: float = 0.0,
        cost_prev: np.ndarray | None = None,
        target_returns: np.ndarray | None = None,
        target: float = 0.0,
    ) -> None:
        """Fills in one problem's numbers: ``scaled_returns`` is ``R / (1-a)``, ``mass`` the rows'
        probabilities; ``mean``, ``cost`` and ``cost_prev`` (the turnover variant's) are divided
        by the risk aversion; ``target_returns`` and ``target`` come with a target."""
        k = self.n_assets
        self._q_block[:, 1:] = scaled_returns
        self.col_upper[self.n_fixed :] = mass
        self.cap = cap
        self.cost[1 : 1 + k] = cap
        if self.has_prev:
            self.value[2 * k : 3 * k] = -cost
            self.cost_prev = np.asarray(cost_prev, dtype=np.float64)
            self.cost[1 + k : 1 + 2 * k] = self.cost_prev
        if self.has_target:
            self.value[self.start[self.n_fixed - 1] : self.start[self.n_fixed]] = target_returns
            self.target = float(target)
            self.cost[self.n_fixed - 1] = -self.target
        self.row_lower[0] = self.row_upper[0] = tail_mass
        self.row_upper[1:] = -mean

    def run_highs(self, warm: bool) -> str:
        """Solves with HiGHS, warm-started from the last optimum when ``warm``; the status."""
        import highspy

        solver = highspy.Highs()
        solver.setOptionValue("log_to_console", False)
        for name, value in _MEAN_CVAR_OPTIONS.items():
            solver.setOptionValue(name, value)
        if not (self.col_upper[self.n_fixed :] == 0.0).any():
            # Presolve removes only the zero-mass padding's columns here: without them it
            # finds nothing (a dense column a scenario) and only spends time looking, 0.1-0.2 s
            # of CPU at 392 assets x 1,000 scenarios; the same simplex then runs to the same
            # answer. With them it stays on: its answers are the ones trials recorded.
            solver.setOptionValue("presolve", "off")
        # The arrays go in as they are (setting a HighsLp's fields copies them element by
        # element: 1.6 ms against 0.2 ms at 512 x 20); every column continuous, as an LP's.
        solver.passModel(
            self.n_cols,
            self.n_assets + 1,
            len(self.value),
            int(highspy.MatrixFormat.kColwise),
            int(highspy.ObjSense.kMinimize),
            0.0,
            self.cost,
            self.col_lower,
            self.col_upper,
            self.row_lower,
            self.row_upper,
            self.start,
            self.index,
            self.value,
            self._continuous,
        )
        if warm and self._solution is not None:
            solver.setSolution(self._solution)
        self._highs = solver
        return self._run()

    def add_scenarios(self, scaled_returns: np.ndarray, mass: np.ndarray) -> str:
        """Adds scenario rows to the last solve's LP and solves again from its basis (a
        primal simplex start: the new columns enter at zero, the old basis stays feasible).
        Their results follow the earlier rows' in :attr:`tail_mass`. Returns the status."""
        if self._highs is None:
            raise RuntimeError("add_scenarios() before run_highs()")
        m, k = scaled_returns.shape
        block = np.empty((m, k + 1))
        block[:, 0] = 1.0
        block[:, 1:] = scaled_returns
        self._highs.addCols(
            m,
            np.zeros(m),
            np.zeros(m),
            np.asarray(mass, dtype=np.float64),
            m * (k + 1),
            ((k + 1) * np.arange(m)).astype(np.int32),
            np.tile(np.arange(k + 1, dtype=np.int32), m),
            block.ravel(),
        )
        self.n_rows += m
        return self._run()

    def _run(self) -> str:
        """Runs HiGHS on the kept instance and reads its optimum; the status."""
        solver = self._highs
        solver.run()
        status = _HIGHS_STATUS.get(solver.getModelStatus().name, "solver_error")
        if status != OPTIMAL:
            self._solution = None
            return status
        solution = solver.getSolution()
        self._solution = solution
        k, n_fixed = self.n_assets, self.n_fixed
        self.weights = -np.array(solution.row_dual)[1:]
        primal = np.array(solution.col_value)
        objective = primal[0] - self.cap * np.sum(primal[1 : 1 + k])
        if self.has_prev:
            objective = objective - self.cost_prev @ primal[1 + k : 1 + 2 * k]
        if self.has_target:
            self.target_multiplier = float(primal[n_fixed - 1])
            objective = objective + self.target * self.target_multiplier
        self.objective = float(objective)
        self.tail_mass = primal[n_fixed:]
        return status


# HiGHS' model status names, as cvxpy maps them to its statuses.
_HIGHS_STATUS = {
    "kOptimal": OPTIMAL,
    "kInfeasible": INFEASIBLE,
    "kUnboundedOrInfeasible": "infeasible_or_unbounded",
    "kUnbounded": "unbounded",
    "kObjectiveBound": "user_limit",
    "kObjectiveTarget": "user_limit",
    "kTimeLimit": "user_limit",
    "kIterationLimit": "user_limit",
    "kSolutionLimit": "user_limit",
}


@lru_cache(maxsize=8)
def mean_cvar_lp(n_rows: int, n_assets: int, has_prev: bool) -> MeanCvarLP:
    """The cached dual Mean-CVaR LP for one shape (a rolling backtest's solves)."""
    return MeanCvarLP(n_rows, n_assets, has_prev)


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
    import cvxpy as cp

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


# HiGHS keeps its defaults but for the feasibility tolerances of the Mean-CVaR dual (and
# presolve, see :meth:`MeanCvarLP.run_highs`): devex pricing, other price/crash/scaling
# strategies and skipping the warm start measured within noise of them, and switching scaling
# off was faster but moved the optimum by ~1e-5 relative. The certificate bounds the optimum
# from the primal tail masses ``q``, so a ``q`` off its bounds by the default 1e-7 loosens it:
# 2e-8 left 1.6e-7 of a 392-asset frontier point unproven; at 1e-9 that point is proven to
# 7e-15 in the same simplex iterations.
_MEAN_CVAR_OPTIONS = {"primal_feasibility_tolerance": 1e-9, "dual_feasibility_tolerance": 1e-9}


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
    """Solves ``lp`` with HiGHS; returns the status.

    Warm-started from the problem's previous solution only within the current sequence.

    Statuses in ``accept`` (e.g. ``"infeasible"`` for the overlay) are returned as they are.
    An inaccurate solution warns and is returned as ``"optimal_inaccurate"``.

    Raises:
        SolverError: HiGHS returned no solution.
    """
    _absorb_highs_banner()
    warm = lp.sequence == _sequence
    lp.sequence = _sequence
    if isinstance(lp, MeanCvarLP):
        status = lp.run_highs(warm)
    else:
        status = _solve_problem(lp.problem, warm)
    return checked(status, accept)


def checked(status: str, accept: tuple[str, ...] = ()) -> str:
    """``status`` when it is an optimum or in ``accept`` (warning on an inaccurate one).

    Raises:
        SolverError: any other status.
    """
    if status == OPTIMAL or status in accept:
        return status
    if status == OPTIMAL_INACCURATE:
        message = f"HiGHS returned an inaccurate solution; recorded as {status!r}"
        logger.warning(message)
        warnings.warn(message, RuntimeWarning, stacklevel=3)
        return status
    raise SolverError(f"HiGHS returned no solution (status {status!r})")


def _solve_problem(problem: cp.Problem, warm: bool) -> str:
    """Solves a cvxpy problem with HiGHS; its status (``"solver_error"`` when HiGHS fails)."""
    import cvxpy as cp

    try:
        problem.solve(solver="HIGHS", warm_start=warm)
    except cp.error.SolverError as err:
        logger.warning("HiGHS failed: %s", err)
        return "solver_error"
    return problem.status
