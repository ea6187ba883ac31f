"""Is the pick better than what the user already has? Paired evidence against a reference.

A deflated Sharpe tests "Sharpe = 0", the wrong null for a search whose alternative is simply to
keep holding 1/N or the default config: both earn a positive Sharpe in most markets, so a pick
that merely rides the market passes that test. The questions a user asks are paired ones, on the
same days: does the pick earn more than the default, and more than equal weight?

- :func:`sharpe_difference` is the Sharpe-difference test of Ledoit & Wolf (2008, "Robust
  performance hypothesis testing with the Sharpe ratio", J. Empirical Finance 15(5)): the delta
  method on the first two moments of both series, with a heteroskedasticity- and
  autocorrelation-consistent (HAC) covariance, so fat tails, volatility clustering and the
  autocorrelation of daily strategy returns do not make the test overconfident. The covariance
  is Newey & West's (Bartlett kernel) with their rule-of-thumb bandwidth
  ``floor(4 (T / 100) ** (2 / 9))``; Ledoit & Wolf's prewhitened quadratic-spectral kernel is
  a refinement of the same estimator. One-sided: the alternative is "the pick is better".
- :func:`excess_evidence` is that test of the pick against one reference on TEST: one
  pre-registered test per reference, nothing deflated by the configs the search tried (TEST
  selects nothing; see :mod:`.gates`).

The test compares Sharpe ratios, not returns: a pick that earns 1/N's return at a third of its
risk has a far higher Sharpe and no more return, and is better.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from alphaloop.evidence import ExcessEvidence, SharpeDifference
from alphaloop.metrics import TRADING_DAYS
from alphaloop.validation.summary import aligned_matrix

__all__ = [
    "ExcessEvidence",
    "SharpeDifference",
    "excess_evidence",
    "sharpe_difference",
]


def newey_west_lags(n_obs: int) -> int:
    """Newey & West's rule-of-thumb bandwidth for ``n_obs`` observations."""
    return math.floor(4.0 * (n_obs / 100.0) ** (2.0 / 9.0))


def _hac(y: np.ndarray, lags: int) -> np.ndarray:
    """The Newey-West (Bartlett kernel) long-run covariance of the rows of ``y`` (T, k),
    already centred."""
    n = y.shape[0]
    psi = y.T @ y / n
    for j in range(1, lags + 1):
        gamma = y[j:].T @ y[:-j] / n
        psi += (1.0 - j / (lags + 1.0)) * (gamma + gamma.T)
    return psi


def sharpe_difference(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    lags: int | None = None,
    periods: int = TRADING_DAYS,
) -> SharpeDifference:
    """Tests whether ``a`` has a higher Sharpe ratio than ``b`` on the same days.

    Args:
        a, b: daily returns of the two strategies, aligned day by day (equal length).
        lags: HAC bandwidth; Newey & West's rule of thumb for the sample size when None.
        periods: periods per year, to annualise the Sharpe ratios and the difference.

    Raises:
        ValueError: series of different lengths, fewer than 10 days, non-finite values, or a
            series that does not vary.
    """
    x, y = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"paired series must have equal lengths, got {x.size} and {y.size}")
    if x.size < 10 or not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("need at least 10 finite days of both series")
    n = x.size
    mu = np.array([x.mean(), y.mean()])
    gamma = np.array([(x**2).mean(), (y**2).mean()])
    var = gamma - mu**2
    if np.any(var <= 1e-24):
        raise ValueError("a series that does not vary has no Sharpe ratio")
    moments = np.column_stack([x - mu[0], y - mu[1], x**2 - gamma[0], y**2 - gamma[1]])
    lag = newey_west_lags(n) if lags is None else lags
    psi = _hac(moments, lag)
    # Gradient of f(mu_a, mu_b, gamma_a, gamma_b) = SR_a - SR_b (Ledoit & Wolf 2008, eq. 3).
    grad = np.array(
        [
            gamma[0] / var[0] ** 1.5,
            -gamma[1] / var[1] ** 1.5,
            -mu[0] / (2.0 * var[0] ** 1.5),
            mu[1] / (2.0 * var[1] ** 1.5),
        ]
    )
    scale = math.sqrt(periods)
    sharpe = mu / np.sqrt(var) * scale
    se = math.sqrt(max(float(grad @ psi @ grad), 0.0) / n) * scale
    # scipy.stats takes ~0.8 s to import; a trial's worker imports this module, never this.
    from scipy import stats

    diff = float(sharpe[0] - sharpe[1])
    z = diff / se if se > 0 else math.copysign(math.inf, diff) if diff else 0.0
    return SharpeDifference(
        sharpe_a=float(sharpe[0]),
        sharpe_b=float(sharpe[1]),
        difference=diff,
        se=se,
        z=z,
        p_value=float(stats.norm.sf(z)),
        n_obs=n,
        lags=lag,
    )


def excess_evidence(
    reference: str, pick: Sequence[float], baseline: Sequence[float]
) -> ExcessEvidence:
    """The pick's paired test against ``baseline``, both on TEST.

    Args:
        reference: what ``baseline`` is (``default`` or ``equal_weight``).
        pick, baseline: TEST daily returns; when their lengths differ (a strategy that starts
            later in the window) only their common, latest days are compared.
    """
    paired = aligned_matrix([pick, baseline])
    return ExcessEvidence(reference=reference, test=sharpe_difference(paired[:, 0], paired[:, 1]))
