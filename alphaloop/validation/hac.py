"""Long-run covariance of a vector series (heteroskedasticity- and autocorrelation-consistent,
HAC), as the paired Sharpe-difference test's former and alternative standard errors make it
(today's is the bootstrap's own, :mod:`alphaloop.validation.excess`).

- :func:`newey_west` is Newey & West's (1987) Bartlett kernel at their rule-of-thumb bandwidth
  ``floor(4 (T / 100) ** (2 / 9))``: the paired test's former estimator, kept as the
  reference the benchmarks weigh the new one against. It under-covers under autocorrelation:
  a rule-of-thumb bandwidth of 4 to 6 lags cannot see a persistent component at all.
- :func:`prewhitened_parzen` is the estimator Ledoit & Wolf's (2008) code uses for the standard
  error on the observed data (``method="bootstrap_parzen"``): Andrews & Monahan's (1992,
  Econometrica 60(4)) prewhitening by a VAR(1) (its singular values capped at 0.97, their page
  957), then Andrews' (1991, Econometrica 59(3)) Parzen kernel at his automatic bandwidth
  ``2.6614 (a(2) T) ** 0.2`` from AR(1) fits of each component (his eq. 6.4), recoloured by
  ``(I - A)^-1``, with the small-sample factor ``T / (T - 4)``. The bandwidth grows with the
  autocorrelation it finds.

Both take the rows of ``y`` (T, k) already centred and return the k x k long-run covariance;
``grad @ psi @ grad / T`` is the variance of a smooth function of the means with gradient
``grad`` (the delta method).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["andrews_bandwidth", "newey_west", "newey_west_lags", "prewhitened_parzen"]

# Andrews & Monahan's cap on the prewhitening VAR's singular values: a near-unit root would
# make the recolouring (I - A)^-1 explode.
PREWHITEN_CAP = 0.97


def newey_west_lags(n_obs: int) -> int:
    """Newey & West's rule-of-thumb bandwidth for ``n_obs`` observations."""
    return math.floor(4.0 * (n_obs / 100.0) ** (2.0 / 9.0))


def newey_west(y: np.ndarray, lags: int) -> np.ndarray:
    """The Bartlett-kernel long-run covariance of the rows of ``y`` (T, k) with ``lags`` lags."""
    n = y.shape[0]
    psi = y.T @ y / n
    for j in range(1, lags + 1):
        gamma = y[j:].T @ y[:-j] / n
        psi += (1.0 - j / (lags + 1.0)) * (gamma + gamma.T)
    return psi


def _ar1(v: np.ndarray) -> tuple[float, float]:
    """OLS AR(1) coefficient (capped at +-0.97) and innovation variance of a demeaned column."""
    x = v - v.mean()
    lagged = float(x[:-1] @ x[:-1])
    rho = float(x[1:] @ x[:-1]) / lagged if lagged > 0 else 0.0
    rho = max(min(rho, PREWHITEN_CAP), -PREWHITEN_CAP)
    resid = x[1:] - rho * x[:-1]
    return rho, float(resid @ resid) / max(resid.size, 1)


def andrews_bandwidth(y: np.ndarray) -> float:
    """Andrews' (1991) automatic Parzen bandwidth ``2.6614 (a(2) T) ** 0.2``, ``a(2)`` from an
    AR(1) fit of each column (equal weights)."""
    num = den = 0.0
    for i in range(y.shape[1]):
        rho, sigma2 = _ar1(y[:, i])
        num += 4.0 * rho**2 * sigma2**2 / (1.0 - rho) ** 8
        den += sigma2**2 / (1.0 - rho) ** 4
    alpha = num / den if den > 0 else 0.0
    return 2.6614 * (alpha * y.shape[0]) ** 0.2


def _parzen(x: float) -> float:
    x = abs(x)
    if x <= 0.5:
        return 1.0 - 6.0 * x**2 + 6.0 * x**3
    return 2.0 * (1.0 - x) ** 3 if x <= 1.0 else 0.0


def _parzen_psi(y: np.ndarray) -> tuple[np.ndarray, float]:
    """Andrews' Parzen-kernel long-run covariance of ``y`` at his automatic bandwidth, and the
    bandwidth."""
    n, k = y.shape
    bandwidth = andrews_bandwidth(y)
    psi = y.T @ y / n
    j = 1
    while j < bandwidth and j < n:
        gamma = y[j:].T @ y[:-j] / n
        psi += _parzen(j / bandwidth) * (gamma + gamma.T)
        j += 1
    return psi * n / max(n - k, 1), bandwidth


def prewhitened_parzen(y: np.ndarray) -> tuple[np.ndarray, float]:
    """Andrews & Monahan's prewhitened Parzen long-run covariance of the centred rows of ``y``
    (T, k) (see the module docstring), and the bandwidth used on the prewhitened residuals."""
    lagged, now = y[:-1], y[1:]
    coef, *_ = np.linalg.lstsq(lagged, now, rcond=None)  # now ~ lagged @ coef, coef = A'
    u, s, vt = np.linalg.svd(coef.T)
    a = u @ np.diag(np.minimum(s, PREWHITEN_CAP)) @ vt
    resid = now - lagged @ a.T
    psi, bandwidth = _parzen_psi(resid)
    recolour = np.linalg.inv(np.eye(y.shape[1]) - a)
    return recolour @ psi @ recolour.T, bandwidth
