"""A dense primal-dual interior-point method for the scenario-restricted Mean-CVaR dual (internal).

The LP it solves is the dual of the Rockafellar-Uryasev problem restricted to a scenario subset
``S`` (see :mod:`._cutting`), written in minimisation form with ``q_s = pi_s x_s``::

    min  -nu + cap * sum(eta) + cost * prev . d'
    s.t. scale * R_S' q + nu - eta - cost * d' + s = -mu - cost       (one row per asset)
         sum(q) = tail                                                (the mass row)
         0 <= q <= pi_S,  eta, s >= 0,  0 <= d' <= 2,  nu free

with ``scale = risk_aversion / tail``, ``tail = 1 - alpha`` and ``d' = d + 1`` (the turnover
columns exist only with a turnover cost). The multipliers of the asset rows are minus the
portfolio weights and the mass row's multiplier is ``-scale * VaR``.

A minimum-return constraint ``rho . w >= target`` (what an efficient frontier asks of each
point) is one more column: ``t >= 0`` with ``rho`` in the asset rows and cost ``-target``, ``t``
being the constraint's multiplier. ``rho`` enters divided by its largest magnitude so that the
column is of the same order as the others.

Why a hand-written interior point: the LP has only ``n_assets + 1`` rows but dense columns, so
each Newton step is one ``(n_assets + 1)``-square normal matrix ``B' D B`` (a BLAS product over
the scenarios) and one Cholesky factorisation. Simplex codes pay per pivot, and the number of
pivots grows with the number of assets: HiGHS' dual simplex takes ~8-12 s at 392 assets where
this takes well under a second (see ``benchmarks/bench_cvar.py``). Exactness does not rest on
this solver: the caller certifies every answer with a bound (see :mod:`._cutting`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from alphaloop.exceptions import SolverError

_MAX_ITER = 80
_NEGLIGIBLE = 1e-13
_RESIDUAL_TOL = 1e-8
_RESIDUAL_STALL = 1e-6
_MU_SPENT = 1e-18
_STEP = 0.995  # fraction of the distance to the boundary taken per step


@dataclass(frozen=True)
class RestrictedDual:
    """The data of one restricted LP (see the module docstring)."""

    returns: np.ndarray  # (m, n) scenario returns of the subset
    mass: np.ndarray  # (m,) probabilities pi_S
    mean: np.ndarray  # (n,)
    scale: float
    tail: float
    cap: float
    cost: float
    prev: np.ndarray | None  # (n,) when there is a turnover term
    target_returns: np.ndarray | None = None  # (n,) rho of ``rho . w >= target``, or None
    target: float = 0.0


@dataclass(frozen=True)
class IpmResult:
    """Weights, VaR and tail masses ``q`` of the restricted optimum."""

    weights: np.ndarray
    var: float
    tail_mass: np.ndarray
    iterations: int
    state: tuple  # the iterate, to continue the same LP to a tighter tolerance
    target_multiplier: float = 0.0  # of ``rho . w >= target`` (0 without the constraint)


class _Point(NamedTuple):
    """An iterate: primal ``v`` and free ``nu``, upper-bound slacks, and the dual ``zl, zu, y``."""

    v: np.ndarray
    nu: float
    gap_b: np.ndarray
    zl: np.ndarray
    zu: np.ndarray
    y: np.ndarray


class _Residuals(NamedTuple):
    """Infeasibilities, objectives and complementarity of an iterate."""

    rp: np.ndarray
    rd: np.ndarray
    rd_nu: float
    primal: float
    dual: float
    comp: float
    mu: float


class _Direction(NamedTuple):
    """A Newton direction for every block of the iterate."""

    dv: np.ndarray
    dnu: float
    dy: np.ndarray
    dzl: np.ndarray
    dzu: np.ndarray


@dataclass(frozen=True)
class _Lp:
    """The restricted LP in standard form, with its constraint matrix as products.

    Variable blocks: q (m), eta (n), s (n), d' (n, turnover only), t (1, with a minimum-return
    constraint only, its column ``(target_col, 0)``); the free ``nu`` (cost -1,
    a 1 in every asset row) is kept apart and eliminated exactly from each Newton system,
    since splitting it into two signed parts makes the normal matrix ill-conditioned.
    """

    m: int
    n: int
    nv: int
    turnover: bool
    cost: float
    b_rows: np.ndarray  # (m, n): column s of the constraint matrix is (b_rows[s], 1)
    c: np.ndarray
    rhs: np.ndarray
    bounded: np.ndarray
    ub_b: np.ndarray
    free: np.ndarray  # the column of ``nu``
    target_col: np.ndarray | None = None  # (n,) the asset-row entries of the column of ``t``

    @property
    def turnover_block(self) -> slice:
        return slice(
            self.m + 2 * self.n, self.m + 3 * self.n if self.turnover else self.m + 2 * self.n
        )

    def a_mul(self, v: np.ndarray, nu: float) -> np.ndarray:
        """``A v`` with ``nu`` in every asset row."""
        m, n, cost = self.m, self.n, self.cost
        q = v[:m]
        out = np.empty(n + 1)
        rows = self.b_rows.T @ q + nu - v[m : m + n] + v[m + n : m + 2 * n]
        if self.turnover:
            rows -= cost * v[self.turnover_block]
        if self.target_col is not None:
            rows += self.target_col * v[-1]
        out[:n] = rows
        out[n] = q.sum()
        return out

    def at_mul(self, y: np.ndarray) -> np.ndarray:
        """``A' y`` for every block of ``v`` (``nu``'s column is ``free``)."""
        m, n, cost = self.m, self.n, self.cost
        ya, ym = y[:n], y[n]
        out = np.empty(self.nv)
        out[:m] = self.b_rows @ ya + ym
        out[m : m + n] = -ya
        out[m + n : m + 2 * n] = ya
        if self.turnover:
            out[self.turnover_block] = -cost * ya
        if self.target_col is not None:
            out[-1] = self.target_col @ ya
        return out

    def normal(self, d: np.ndarray) -> np.ndarray:
        """The normal matrix ``A D A'`` for the diagonal scaling ``d``."""
        m, n, cost = self.m, self.n, self.cost
        dq = d[:m]
        mat = np.empty((n + 1, n + 1))
        # Scenarios whose scaling has collapsed (settled at a bound) add nothing measurable;
        # leaving them out skips denormal arithmetic and shrinks the product as the method
        # converges and most scenarios leave the tail.
        live = np.flatnonzero(dq > _NEGLIGIBLE * dq.max())
        rows = self.b_rows[live]
        root = rows * np.sqrt(dq[live])[:, None]
        mat[:n, :n] = root.T @ root  # numpy hands A'A to BLAS syrk: half the flops of a gemm
        weighted = rows * dq[live, None]
        diag = d[m : m + n] + d[m + n : m + 2 * n]
        if self.turnover:
            diag = diag + cost * cost * d[self.turnover_block]
        mat[np.arange(n), np.arange(n)] += diag
        if self.target_col is not None:
            mat[:n, :n] += d[-1] * np.outer(self.target_col, self.target_col)
        col = weighted.sum(axis=0)
        mat[:n, n] = col
        mat[n, :n] = col
        mat[n, n] = dq[live].sum()
        return mat


class _System(NamedTuple):
    """One iteration's Newton system: the LP, the iterate, its residuals, scaling and factor."""

    std: _Lp
    p: _Point
    res: _Residuals
    d: np.ndarray
    chol: tuple


def solve(lp: RestrictedDual, tol: float = 1e-10, state: tuple | None = None) -> IpmResult:
    """Mehrotra predictor-corrector on the restricted dual; raises SolverError if it stalls.

    ``state`` (from an earlier result on the same ``lp``) continues from that iterate, so a
    rough solve can be finished to a tight tolerance in a few more steps.
    """
    std = _standard_form(lp)
    point = _start(std, lp.mass) if state is None else _Point(*state)
    for it in range(1, _MAX_ITER + 1):
        res = _residuals(std, point)
        if _converged(std, res, tol):
            result = _result(point.y, point.v[: std.m], std.n, lp.scale, it, point)
            if std.target_col is None:
                return result
            return replace(result, target_multiplier=float(point.v[-1]) / _target_scale(lp))
        inv_theta = point.zl / point.v
        inv_theta[std.bounded] += point.zu / point.gap_b
        d = 1.0 / inv_theta
        chol = _factor(std, d)
        step = _direction(_System(std, point, res, d, chol))
        point = _advance(point, step, std.bounded)
        if not (np.isfinite(point.v).all() and np.isfinite(point.y).all()):
            break
    raise SolverError(f"interior point did not converge in {_MAX_ITER} iterations")


def _standard_form(lp: RestrictedDual) -> _Lp:
    """Costs, right-hand side and bounds of ``lp`` as the interior point works on them."""
    m, n = lp.returns.shape
    turnover = lp.prev is not None and lp.cost > 0.0
    cost = lp.cost if turnover else 0.0
    nd = n if turnover else 0
    targeted = lp.target_returns is not None
    nv = m + 2 * n + nd + (1 if targeted else 0)
    c = np.zeros(nv)
    c[m : m + n] = lp.cap
    if turnover:
        c[m + 2 * n : m + 2 * n + nd] = cost * lp.prev
    target_col = None
    if targeted:
        size = _target_scale(lp)
        target_col = lp.target_returns / size
        c[-1] = -lp.target / size
    rhs = np.concatenate([-lp.mean - cost, [lp.tail]])
    ub = np.full(nv, np.inf)
    ub[:m] = lp.mass
    if turnover:
        ub[m + 2 * n : m + 2 * n + nd] = 2.0
    bounded = np.isfinite(ub)
    free = np.zeros(n + 1)
    free[:n] = 1.0
    b_rows = lp.scale * lp.returns
    return _Lp(m, n, nv, turnover, cost, b_rows, c, rhs, bounded, ub[bounded], free, target_col)


def _target_scale(lp: RestrictedDual) -> float:
    """What ``rho`` is divided by in the column of ``t`` (its largest magnitude, or 1)."""
    size = float(np.abs(lp.target_returns).max()) if lp.target_returns is not None else 0.0
    return size if size > 0.0 else 1.0


def _start(std: _Lp, pi: np.ndarray) -> _Point:
    """A cold start: half of each scenario's mass in the tail, unit slacks and multipliers."""
    v = np.ones(std.nv)
    v[: std.m] = 0.5 * pi
    gap_b = std.ub_b - v[std.bounded]
    return _Point(v, 0.0, gap_b, np.ones(std.nv), np.ones(len(std.ub_b)), np.zeros(std.n + 1))


def _residuals(std: _Lp, p: _Point) -> _Residuals:
    """Primal and dual residuals, both objectives and the mean complementarity of ``p``."""
    rp = std.rhs - std.a_mul(p.v, p.nu)
    zu_full = np.zeros(std.nv)
    zu_full[std.bounded] = p.zu
    rd = std.c - std.at_mul(p.y) - p.zl + zu_full
    rd_nu = -1.0 - float(p.y[: std.n].sum())
    primal = float(std.c @ p.v) - p.nu
    dual = float(std.rhs @ p.y - std.ub_b @ p.zu)
    comp = float(p.v @ p.zl + p.gap_b @ p.zu)
    mu = comp / (std.nv + len(std.ub_b))
    return _Residuals(rp, rd, rd_nu, primal, dual, comp, mu)


def _converged(std: _Lp, res: _Residuals, tol: float) -> bool:
    """Whether the iterate is good enough to hand to the caller's certificate."""
    b_norm = 1.0 + np.linalg.norm(std.rhs)
    c_norm = 1.0 + np.linalg.norm(std.c)
    # Residuals stop at ~1e-10 in double precision on some subsets, so they are held to a
    # fixed 1e-8 (primal slack is repaired by the caller's certificate anyway); the
    # objective gap, which decides the weights' optimality, is held to ``tol``. A spent
    # complementarity with residuals that no longer shrink also ends the solve: the caller's
    # certificate says how good it is.
    feasible = max(tol, _RESIDUAL_TOL)
    residual = max(
        np.linalg.norm(res.rp) / b_norm, np.hypot(np.linalg.norm(res.rd), res.rd_nu) / c_norm
    )
    gap = abs(res.primal - res.dual) / (1.0 + abs(res.primal))
    return bool(
        (residual < feasible and gap < tol) or (residual < _RESIDUAL_STALL and res.mu < _MU_SPENT)
    )


def _factor(std: _Lp, d: np.ndarray) -> tuple:
    """Cholesky factor of the (slightly regularised) normal matrix for the scaling ``d``."""
    from scipy.linalg import cho_factor  # a trial's small solves never get here: import late

    mat = std.normal(d)
    mat[np.diag_indices_from(mat)] += 1e-14 * max(1.0, float(np.trace(mat)) / (std.n + 1))
    try:
        return cho_factor(mat, lower=True, check_finite=False)
    except np.linalg.LinAlgError as err:
        message = f"interior point: normal matrix not positive definite ({err})"
        raise SolverError(message) from err


def _direction(s: _System) -> _Direction:
    """Mehrotra: an affine (predictor) direction picks the centring, then the corrector."""
    from scipy.linalg import cho_solve

    p, bounded = s.p, s.std.bounded
    rl, ru = -p.v * p.zl, -p.gap_b * p.zu
    t, r = _reduced_rhs(s, rl, ru)
    # One solve for both right-hand sides; the corrector reuses the first column.
    both = cho_solve(s.chol, np.column_stack([s.std.free, r]), check_finite=False)
    m_free = both[:, 0]
    aff = _newton(s, t, rl, ru, m_free, both[:, 1])
    ap = _max_step(p.v, aff.dv, p.gap_b, -aff.dv[bounded])
    ad = _max_step(p.zl, aff.dzl, p.zu, aff.dzu)
    dv_b = aff.dv[bounded]
    comp_aff = float(
        (p.v + ap * aff.dv) @ (p.zl + ad * aff.dzl) + (p.gap_b - ap * dv_b) @ (p.zu + ad * aff.dzu)
    )
    sigma = (comp_aff / s.res.comp) ** 3
    rl = sigma * s.res.mu - p.v * p.zl - aff.dv * aff.dzl
    ru = sigma * s.res.mu - p.gap_b * p.zu + dv_b * aff.dzu
    t, r = _reduced_rhs(s, rl, ru)
    return _newton(s, t, rl, ru, m_free, cho_solve(s.chol, r, check_finite=False))


def _newton(
    s: _System,
    t: np.ndarray,
    rl: np.ndarray,
    ru: np.ndarray,
    m_free: np.ndarray,
    m_rhs: np.ndarray,
) -> _Direction:
    """The full direction from the two solves with the normal matrix."""
    # [M f; f' 0] [dy; dnu] = [r; rd_nu] by the Schur complement of M.
    dnu = float(s.std.free @ m_rhs - s.res.rd_nu) / float(s.std.free @ m_free)
    dy = m_rhs - dnu * m_free
    dv = s.d * (s.std.at_mul(dy) + t)
    dzl = (rl - s.p.zl * dv) / s.p.v
    dzu = (ru + s.p.zu * dv[s.std.bounded]) / s.p.gap_b
    return _Direction(dv, dnu, dy, dzl, dzu)


def _reduced_rhs(s: _System, rl: np.ndarray, ru: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``t`` and the normal equations' right-hand side for the complementarity targets."""
    t = rl / s.p.v - s.res.rd
    t[s.std.bounded] -= ru / s.p.gap_b
    return t, s.res.rp - s.std.a_mul(s.d * t, 0.0)


def _advance(p: _Point, step: _Direction, bounded: np.ndarray) -> _Point:
    """``p`` moved along ``step``, primal and dual each a fraction short of their boundary."""
    ap = min(1.0, _STEP * _max_step(p.v, step.dv, p.gap_b, -step.dv[bounded]))
    ad = min(1.0, _STEP * _max_step(p.zl, step.dzl, p.zu, step.dzu))
    return _Point(
        v=p.v + ap * step.dv,
        nu=p.nu + ap * step.dnu,
        gap_b=p.gap_b - ap * step.dv[bounded],
        zl=p.zl + ad * step.dzl,
        zu=p.zu + ad * step.dzu,
        y=p.y + ad * step.dy,
    )


def _result(
    y: np.ndarray, q: np.ndarray, n: int, scale: float, iterations: int, state: tuple
) -> IpmResult:
    return IpmResult(
        weights=-y[:n].copy(),
        var=-float(y[n]) / scale,
        tail_mass=q.copy(),
        iterations=iterations,
        state=state,
    )


def _max_step(x: np.ndarray, dx: np.ndarray, g: np.ndarray, dg: np.ndarray) -> float:
    """Largest step in [0, inf) keeping ``x + t dx`` and ``g + t dg`` non-negative."""
    step = np.inf
    neg = dx < 0
    if neg.any():
        step = min(step, float(np.min(-x[neg] / dx[neg])))
    neg = dg < 0
    if neg.any():
        step = min(step, float(np.min(-g[neg] / dg[neg])))
    return step
