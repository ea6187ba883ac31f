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

Why a hand-written interior point: the LP has only ``n_assets + 1`` rows but dense columns, so
each Newton step is one ``(n_assets + 1)``-square normal matrix ``B' D B`` (a BLAS product over
the scenarios) and one Cholesky factorisation. Simplex codes pay per pivot, and the number of
pivots grows with the number of assets: HiGHS' dual simplex takes ~8-12 s at 392 assets where
this takes well under a second (see ``benchmarks/bench_cvar.py``). Exactness does not rest on
this solver: the caller certifies every answer with a bound (see :mod:`._cutting`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve

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


@dataclass(frozen=True)
class IpmResult:
    """Weights, VaR and tail masses ``q`` of the restricted optimum."""

    weights: np.ndarray
    var: float
    tail_mass: np.ndarray
    iterations: int
    state: tuple  # the iterate, to continue the same LP to a tighter tolerance


def solve(lp: RestrictedDual, tol: float = 1e-10, state: tuple | None = None) -> IpmResult:
    """Mehrotra predictor-corrector on the restricted dual; raises SolverError if it stalls.

    ``state`` (from an earlier result on the same ``lp``) continues from that iterate, so a
    rough solve can be finished to a tight tolerance in a few more steps.
    """
    r, pi = lp.returns, lp.mass
    m, n = r.shape
    turnover = lp.prev is not None and lp.cost > 0.0
    cost = lp.cost if turnover else 0.0
    b_rows = lp.scale * r  # (m, n): column s of the constraint matrix is (b_rows[s], 1)

    # Variable blocks: q (m), eta (n), s (n), d' (n, turnover only); the free ``nu`` (cost -1,
    # a 1 in every asset row) is kept apart and eliminated exactly from each Newton system,
    # since splitting it into two signed parts makes the normal matrix ill-conditioned.
    nd = n if turnover else 0
    nv = m + 2 * n + nd
    c = np.zeros(nv)
    c[m : m + n] = lp.cap
    if turnover:
        c[m + 2 * n :] = cost * lp.prev
    rhs = np.concatenate([-lp.mean - cost, [lp.tail]])
    ub = np.full(nv, np.inf)
    ub[:m] = pi
    if turnover:
        ub[m + 2 * n :] = 2.0
    bounded = np.isfinite(ub)
    ub_b = ub[bounded]

    def a_mul(v: np.ndarray, nu: float) -> np.ndarray:
        q = v[:m]
        out = np.empty(n + 1)
        rows = b_rows.T @ q + nu - v[m : m + n] + v[m + n : m + 2 * n]
        if turnover:
            rows -= cost * v[m + 2 * n :]
        out[:n] = rows
        out[n] = q.sum()
        return out

    def at_mul(y: np.ndarray) -> np.ndarray:
        ya, ym = y[:n], y[n]
        out = np.empty(nv)
        out[:m] = b_rows @ ya + ym
        out[m : m + n] = -ya
        out[m + n : m + 2 * n] = ya
        if turnover:
            out[m + 2 * n :] = -cost * ya
        return out

    def normal(d: np.ndarray) -> np.ndarray:
        dq = d[:m]
        mat = np.empty((n + 1, n + 1))
        # Scenarios whose scaling has collapsed (settled at a bound) add nothing measurable;
        # leaving them out skips denormal arithmetic and shrinks the product as the method
        # converges and most scenarios leave the tail.
        live = np.flatnonzero(dq > _NEGLIGIBLE * dq.max())
        rows = b_rows[live]
        root = rows * np.sqrt(dq[live])[:, None]
        mat[:n, :n] = root.T @ root  # numpy hands A'A to BLAS syrk: half the flops of a gemm
        weighted = rows * dq[live, None]
        diag = d[m : m + n] + d[m + n : m + 2 * n]
        if turnover:
            diag = diag + cost * cost * d[m + 2 * n :]
        mat[np.arange(n), np.arange(n)] += diag
        col = weighted.sum(axis=0)
        mat[:n, n] = col
        mat[n, :n] = col
        mat[n, n] = dq[live].sum()
        return mat

    free = np.zeros(n + 1)
    free[:n] = 1.0
    if state is None:
        v = np.ones(nv)
        v[:m] = 0.5 * pi
        nu = 0.0
        gap_b = ub_b - v[bounded]
        zl = np.ones(nv)
        zu = np.ones(len(ub_b))
        y = np.zeros(n + 1)
    else:
        v, nu, gap_b, zl, zu, y = state
    b_norm = 1.0 + np.linalg.norm(rhs)
    c_norm = 1.0 + np.linalg.norm(c)
    n_comp = nv + len(ub_b)

    for it in range(1, _MAX_ITER + 1):
        rp = rhs - a_mul(v, nu)
        zu_full = np.zeros(nv)
        zu_full[bounded] = zu
        rd = c - at_mul(y) - zl + zu_full
        rd_nu = -1.0 - float(y[:n].sum())
        primal = float(c @ v) - nu
        dual = float(rhs @ y - ub_b @ zu)
        comp = float(v @ zl + gap_b @ zu)
        mu = comp / n_comp
        # Residuals stop at ~1e-10 in double precision on some subsets, so they are held to a
        # fixed 1e-8 (primal slack is repaired by the caller's certificate anyway); the
        # objective gap, which decides the weights' optimality, is held to ``tol``. A spent
        # complementarity with residuals that no longer shrink also ends the solve: the caller's
        # certificate says how good it is.
        feasible = max(tol, _RESIDUAL_TOL)
        residual = max(np.linalg.norm(rp) / b_norm, np.hypot(np.linalg.norm(rd), rd_nu) / c_norm)
        if (residual < feasible and abs(primal - dual) / (1.0 + abs(primal)) < tol) or (
            residual < _RESIDUAL_STALL and mu < _MU_SPENT
        ):
            return _result(y, v[:m], n, lp.scale, it, (v, nu, gap_b, zl, zu, y))

        inv_theta = zl / v
        inv_theta[bounded] += zu / gap_b
        d = 1.0 / inv_theta
        mat = normal(d)
        mat[np.diag_indices_from(mat)] += 1e-14 * max(1.0, float(np.trace(mat)) / (n + 1))
        try:
            chol = cho_factor(mat, lower=True, check_finite=False)
        except np.linalg.LinAlgError as err:
            message = f"interior point: normal matrix not positive definite ({err})"
            raise SolverError(message) from err

        m_free = None
        # Mehrotra: an affine (predictor) direction picks the centring, then the corrector.
        rl, ru = -v * zl, -gap_b * zu
        for corrector in (False, True):
            t = rl / v - rd
            t[bounded] -= ru / gap_b
            r = rp - a_mul(d * t, 0.0)
            if m_free is None:  # one solve for both right-hand sides
                both = cho_solve(chol, np.column_stack([free, r]), check_finite=False)
                m_free, m_rhs = both[:, 0], both[:, 1]
            else:
                m_rhs = cho_solve(chol, r, check_finite=False)
            # [M f; f' 0] [dy; dnu] = [r; rd_nu] by the Schur complement of M.
            dnu = float(free @ m_rhs - rd_nu) / float(free @ m_free)
            dy = m_rhs - dnu * m_free
            dv = d * (at_mul(dy) + t)
            dzl = (rl - zl * dv) / v
            dzu = (ru + zu * dv[bounded]) / gap_b
            if corrector:
                break
            ap = _max_step(v, dv, gap_b, -dv[bounded])
            ad = _max_step(zl, dzl, zu, dzu)
            comp_aff = float(
                (v + ap * dv) @ (zl + ad * dzl) + (gap_b - ap * dv[bounded]) @ (zu + ad * dzu)
            )
            sigma = (comp_aff / comp) ** 3
            rl = sigma * mu - v * zl - dv * dzl
            ru = sigma * mu - gap_b * zu + dv[bounded] * dzu
        ap = min(1.0, _STEP * _max_step(v, dv, gap_b, -dv[bounded]))
        ad = min(1.0, _STEP * _max_step(zl, dzl, zu, dzu))
        v = v + ap * dv
        nu = nu + ap * dnu
        gap_b = gap_b - ap * dv[bounded]
        y = y + ad * dy
        zl = zl + ad * dzl
        zu = zu + ad * dzu
        if not (np.isfinite(v).all() and np.isfinite(y).all()):
            break
    raise SolverError(f"interior point did not converge in {_MAX_ITER} iterations")


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
