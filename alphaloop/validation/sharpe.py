"""The Sharpe ratio of a selection, judged: the probabilistic Sharpe ratio (Bailey & Lopez de
Prado, 2012), the deflated Sharpe ratio of the best of N trials (2014) and the effective number
of independent trials among correlated ones (Li & Ji, Nyholt).

They live with the rest of validation (PBO, the gates, the multiplicity of configs tried):
they judge how a pick was selected, not how one return series performed (that is
:mod:`alphaloop.metrics`).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from alphaloop.evidence import DeflatedSharpe
from alphaloop.metrics import as_returns

EULER_GAMMA = 0.5772156649015329


def probabilistic_sharpe_ratio(
    returns: np.ndarray | list[float], sr_benchmark: float = 0.0
) -> float:
    """Probability that the true (per-period) Sharpe exceeds ``sr_benchmark`` (Bailey & Lopez de
    Prado, 2012), correcting for sample length, skewness and kurtosis of the returns; NaN when
    undefined (fewer than 3 returns, no variation)."""
    r = as_returns(returns)
    if r.size < 3:
        return float("nan")
    sd = r.std(ddof=1)
    if sd <= 1e-15:
        return float("nan")
    from scipy import stats  # ~0.5 s to import: only the ratios that need it pay for it

    return psr_from_moments(
        float(r.mean() / sd),
        int(r.size),
        float(stats.skew(r)),
        float(stats.kurtosis(r, fisher=False)),
        sr_benchmark,
    )


def psr_from_moments(
    sr: float, n_obs: int, skew: float, kurtosis: float, sr_benchmark: float = 0.0
) -> float:
    """The probabilistic Sharpe ratio from summary statistics (Bailey & Lopez de Prado, 2012).

    Args:
        sr: observed per-period (not annualised) Sharpe ratio.
        n_obs: number of returns it was measured on.
        skew: skewness of the returns.
        kurtosis: kurtosis of the returns (3 for a normal law, not the excess).
        sr_benchmark: per-period Sharpe to beat.

    Returns:
        ``Phi((sr - sr_benchmark) sqrt(n_obs - 1) / sqrt(1 - skew sr + (kurtosis - 1) / 4 sr^2))``,
        NaN when the variance term is not positive or ``n_obs < 2``.
    """
    denom = 1.0 - skew * sr + (kurtosis - 1.0) / 4.0 * sr**2
    if n_obs < 2 or not denom > 0:
        return float("nan")
    from scipy import stats

    z = (sr - sr_benchmark) * math.sqrt(n_obs - 1) / math.sqrt(denom)
    return float(stats.norm.cdf(z))


def expected_max_sharpe(n_trials: float, sr_variance: float) -> float:
    """Expected maximum per-period Sharpe among ``n_trials`` unskilled trials (the DSR hurdle).

    The approximation of Bailey & Lopez de Prado (2014, eq. 5) holds for two trials or more. An
    effective number of trials (:func:`effective_trials`) need not be a whole number: between
    one trial (hurdle 0, the mean of one draw) and two the hurdle is interpolated linearly, so it
    grows continuously with ``n_trials``.
    """
    if n_trials <= 1 or sr_variance <= 0:
        return 0.0
    if n_trials < 2:
        return (n_trials - 1.0) * expected_max_sharpe(2, sr_variance)
    n = float(n_trials)
    from scipy import stats

    return math.sqrt(sr_variance) * (
        (1.0 - EULER_GAMMA) * stats.norm.ppf(1.0 - 1.0 / n)
        + EULER_GAMMA * stats.norm.ppf(1.0 - 1.0 / (n * math.e))
    )


def trial_sharpes(returns_matrix: np.ndarray) -> np.ndarray:
    """Per-period Sharpe ratio of each column of a (T days, N trials) return matrix, 0 for a
    column with no variation (as :func:`~alphaloop.metrics.sharpe`): the set whose variance the
    DSR needs."""
    x = _as_matrix(returns_matrix)
    sd = x.std(axis=0, ddof=1)
    safe = np.where(sd > 1e-15, sd, 1.0)
    return np.where(sd > 1e-15, x.mean(axis=0) / safe, 0.0)


def _as_matrix(returns_matrix: np.ndarray) -> np.ndarray:
    x = np.asarray(returns_matrix, dtype=float)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 1:
        raise ValueError(
            f"need a (T days, N trials) matrix with T >= 2 and N >= 1, got shape {x.shape}"
        )
    if not np.all(np.isfinite(x)):
        raise ValueError("returns contain NaN or inf")
    return x


def effective_trials(
    returns_matrix: np.ndarray, method: Literal["li_ji", "nyholt"] = "li_ji"
) -> float:
    """Effective number of independent trials among correlated ones, from the eigenvalues of
    the trials' return correlation matrix.

    Trials of one session share a validation window and are strongly correlated, so N overstates
    how many independent draws the best was selected from. ``li_ji`` (Li & Ji, 2005, Heredity
    95: 221-227) counts ``sum(1[l >= 1] + (l - floor(l)))`` over the eigenvalues ``l``: N for
    uncorrelated trials (and for sampling noise alone while every eigenvalue stays below 2), 1
    when all are identical. For k groups of identical trials it gives k only when the groups
    are exactly uncorrelated (each group's eigenvalue a whole number); with sampled data a
    group's eigenvalue is a whole number plus or minus a little, and its fractional part counts
    too, so the count lies between k and 2k (5 groups of 6 trials on sampled data: 7 to 8).
    ``nyholt`` (Nyholt,
    2004, Am. J. Hum. Genet. 74: 765-769) is ``1 + (N - 1)(1 - var(l) / N)``, which sampling noise
    biases down. Trials with no variation carry no correlation and are left out.

    Args:
        returns_matrix: (T days, N trials) daily returns on the same days.
        method: ``li_ji`` (default) or ``nyholt``.

    Returns:
        A number between 1 and the number of trials with variation (0 when none has any).
    """
    x = _as_matrix(returns_matrix)
    x = x[:, x.std(axis=0) > 1e-15]
    n = x.shape[1]
    if n <= 1:
        return float(n)
    eig = np.clip(np.linalg.eigvalsh(np.corrcoef(x, rowvar=False)), 0.0, None)
    if method == "li_ji":
        # Eigenvalues of an exact integer (a block of identical trials) come back a hair off.
        eig = np.where(np.abs(eig - np.round(eig)) < 1e-9, np.round(eig), eig)
        m_eff = float(np.sum((eig >= 1.0) + (eig - np.floor(eig))))
    elif method == "nyholt":
        m_eff = 1.0 + (n - 1) * (1.0 - float(np.var(eig, ddof=1)) / n)
    else:
        raise ValueError(f"unknown method {method!r}; use 'li_ji' or 'nyholt'")
    return float(min(max(m_eff, 1.0), n))


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def deflated_sharpe(
    returns: np.ndarray | list[float],
    trial_sharpe_ratios: np.ndarray | list[float],
    n_trials: float | None = None,
    n_effective: float | None = None,
) -> DeflatedSharpe:
    """Deflated Sharpe ratio (Bailey & Lopez de Prado, 2014) of ``returns``, the selected trial.

    N and the variance of Sharpe ratios describe one set: the trials the candidate was selected
    from (in a session the search trials with validation returns: baseline runs are not
    candidates). ``trial_sharpe_ratios`` holds one per-period Sharpe per counted trial, the
    candidate's included; N defaults to their number. The hurdle uses their variance as the
    paper does, uncapped: a cap at Lo's i.i.d. variance of one Sharpe, ``(1 + SR^2 / 2) / T``,
    binds under autocorrelation (luck spreads Sharpes wider) and lowers the hurdle; the best of
    50 AR(1) noise trials (0.4, T = 500) passed DSR > 0.95 in 23.0% of 300 repetitions under
    it, 0.7% without (``python -m benchmarks.bench_power --arm dsr``), and the paper's example
    (DSR 0.90) passed at 0.99. No floor: the trials' spread widens with autocorrelation as luck.

    Args:
        returns: the candidate's daily returns (the ones it was selected on).
        trial_sharpe_ratios: per-period Sharpe of every trial counted in N (:func:`trial_sharpes`).
        n_trials: N; defaults to ``len(trial_sharpe_ratios)``, may not be smaller.
        n_effective: effective independent trials (:func:`effective_trials`), reported with its
            own hurdle and DSR next to the nominal ones; at most N.

    Raises:
        ValueError: an empty or non-finite set of Sharpe ratios, or N inconsistent with it.
    """
    srs, n = _counted_trials(trial_sharpe_ratios, n_trials, n_effective)
    r = as_returns(returns)
    variance = float(srs.var(ddof=1)) if srs.size > 1 else 0.0
    sr, skew, kurt = _sharpe_moments(r)

    def psr(benchmark: float) -> float | None:
        ok = math.isfinite(sr) and r.size >= 3
        return _finite_or_none(psr_from_moments(sr, r.size, skew, kurt, benchmark)) if ok else None

    hurdle = expected_max_sharpe(n, variance)
    effective = {}
    if n_effective is not None:
        h_eff = expected_max_sharpe(n_effective, variance)
        effective = {
            "n_effective": n_effective,
            "hurdle_effective": h_eff,
            "dsr_effective": psr(h_eff),
        }
    return DeflatedSharpe(
        sharpe=_finite_or_none(sr),
        n_obs=int(r.size),
        skew=_finite_or_none(skew),
        kurtosis=_finite_or_none(kurt),
        psr=psr(0.0),
        n_trials=n,
        sr_variance=variance,
        hurdle=hurdle,
        dsr=psr(hurdle),
        **effective,
    )


def _counted_trials(
    trial_sharpe_ratios: np.ndarray | list[float],
    n_trials: float | None,
    n_effective: float | None,
) -> tuple[np.ndarray, float]:
    """The trials' Sharpe ratios and N, refused unless they and ``n_effective`` agree."""
    srs = np.asarray(trial_sharpe_ratios, dtype=float).ravel()
    if srs.size == 0 or not np.all(np.isfinite(srs)):
        raise ValueError("trial_sharpe_ratios must be a non-empty list of finite numbers")
    n = float(srs.size if n_trials is None else n_trials)
    if n < srs.size:
        raise ValueError(f"n_trials={n_trials} is below the {srs.size} trial Sharpe ratios given")
    if n_effective is not None and not 0 < n_effective <= n:
        raise ValueError(f"n_effective must be in (0, n_trials={n:g}], got {n_effective!r}")
    return srs, n


def _sharpe_moments(r: np.ndarray) -> tuple[float, float, float]:
    """Per-period Sharpe, skew and (non-excess) kurtosis of ``r``; all NaN for a flat series."""
    sd = r.std(ddof=1) if r.size > 1 else 0.0
    sr = float(r.mean() / sd) if sd > 1e-15 else float("nan")
    from scipy import stats

    skew = float(stats.skew(r)) if math.isfinite(sr) else float("nan")
    kurt = float(stats.kurtosis(r, fisher=False)) if math.isfinite(sr) else float("nan")
    return sr, skew, kurt
