"""Checks shared by the solvers (internal): every problem is refused before solving, and
weights a solver returns are checked against the constraints before anyone sees them."""

from __future__ import annotations

import math

import numpy as np

from alphaloop.exceptions import InvalidRequest, SolverError

# Slack when testing ``max_weight * n_assets >= 1``: knobs.clip() rounds the cap up to 1e-6
# steps, so a cap of exactly 1/n computed in floating point must still count as feasible.
_CAP_SLACK = 1e-12
# Returned weights may miss the constraints by this much before they count as a failed solve;
# smaller misses (solver tolerance) are clipped away and the weights renormalised.
_WEIGHT_TOL = 1e-6


def check_scenarios(scenarios: object) -> np.ndarray:
    """Returns scenarios as a float (n_scenarios, n_assets) array, or raises ``ValueError``."""
    arr = np.asarray(scenarios, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(
            f"scenarios must be a 2-D array (n_scenarios, n_assets), got shape {arr.shape}"
        )
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"scenarios must have at least one row and one column, got {arr.shape}")
    if not np.isfinite(arr).all():
        bad = int((~np.isfinite(arr)).sum())
        raise ValueError(f"scenarios contain {bad} NaN or infinite values")
    return arr


def check_alpha(alpha: float) -> float:
    """Returns alpha as a float strictly inside (0, 1), or raises ``ValueError``."""
    a = float(alpha)
    if not (0.0 < a < 1.0):  # also rejects NaN
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha!r}")
    return a


def check_cap(max_weight: float, n_assets: int) -> float:
    """Returns the cap, or raises :class:`InvalidRequest` when no portfolio can meet it."""
    cap = float(max_weight)
    if not math.isfinite(cap) or cap <= 0.0:
        raise InvalidRequest(f"max_weight must be a positive finite number, got {max_weight!r}")
    if cap * n_assets < 1.0 - _CAP_SLACK:
        raise InvalidRequest(
            f"max_weight={cap:g} x {n_assets} assets = {cap * n_assets:g} < 1: a fully invested "
            f"long-only portfolio cannot respect the cap (need max_weight >= 1/{n_assets} = "
            f"{1.0 / n_assets:g})"
        )
    return cap


def check_nonneg(name: str, value: float) -> float:
    """Returns value as a finite float >= 0, or raises ``ValueError``."""
    v = float(value)
    if not math.isfinite(v) or v < 0.0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return v


def check_weights(name: str, weights: object, n_assets: int) -> np.ndarray:
    """Returns a finite float vector of length n_assets, or raises ``ValueError``."""
    arr = np.asarray(weights, dtype=np.float64)
    if arr.shape != (n_assets,):
        raise ValueError(
            f"{name} must have shape ({n_assets},) to match the scenarios' {n_assets} assets, "
            f"got shape {arr.shape}"
        )
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contain NaN or infinite values")
    return arr


def check_problem(
    scenarios: object, alpha: float, max_weight: float
) -> tuple[np.ndarray, float, float]:
    """The checked ``(scenarios, alpha, cap)`` every CVaR problem starts from."""
    r = check_scenarios(scenarios)
    return r, check_alpha(alpha), check_cap(max_weight, r.shape[1])


def clean_weights(raw: np.ndarray, cap: float) -> np.ndarray:
    """Clips solver round-off so weights are exactly in [0, cap] and sum to 1 (to 1e-15).

    Raises:
        SolverError: the weights miss a constraint by more than solver round-off.
    """
    raw = np.asarray(raw, dtype=np.float64)
    miss = max(float(-raw.min()), float(raw.max() - cap), abs(float(raw.sum()) - 1.0))
    if not np.isfinite(raw).all() or miss > _WEIGHT_TOL:
        raise SolverError(f"solver weights violate the constraints by {miss:.3g}")
    w = np.clip(raw, 0.0, cap)
    return w / w.sum()
