"""Is the pick better than what the user already has? Paired evidence against a reference.

A deflated Sharpe tests "Sharpe = 0", the wrong null for a search whose alternative is simply to
keep holding 1/N or the default config: both earn a positive Sharpe in most markets, so a pick
that merely rides the market passes that test. The questions a user asks are paired ones, on the
same days: does the pick earn more than the default, and more than equal weight?

- :func:`sharpe_difference` is the Sharpe-difference test of Ledoit & Wolf (2008, "Robust
  performance hypothesis testing with the Sharpe ratio", J. Empirical Finance 15(5)): the delta
  method on the first two moments of both series, with their studentized circular block
  bootstrap for the p-value. A resample is ``T // b`` blocks of ``b`` days, each studentized by
  Götze & Künsch's (1996) "natural" estimator, the covariance of its own block sums; the
  observed days are studentized by that estimator's expectation, the same covariance over
  every circular block of ``b`` days (the Bartlett kernel of bandwidth ``b``), so both sides
  see the same long-run variance. The one-sided p-value is the share of resamples whose
  ``(D* - D) / se*`` reaches the observed ``D / se``. The block length is Politis & White's for
  the statistic's influence series (its linearisation, day by day), so it lengthens with the
  autocorrelation the days carry. Resamples are seeded by the data: the same series always get
  the same p-value.

  Ledoit & Wolf's code studentizes the observed days by the prewhitened Parzen HAC instead
  (``method="bootstrap_parzen"``): when the days carry a persistent component that estimator
  sees little of it while long blocks do, and the test over-rejected (23% at 5% over nine
  folds of days with an AR(1) 0.97 component, against 8% studentized alike). The former test,
  Newey & West's Bartlett HAC at their rule-of-thumb bandwidth with a normal p-value
  (``method="newey_west"``, or ``lags=`` given), over-rejected under autocorrelation and more
  in the far tail, where the multiplicity levels live. ``python -m benchmarks.bench_validation
  --arm size`` measures all of them on the same pairs. ``method="hac"`` is today's standard
  error with a normal p-value, for callers that need only ``z`` (the fold race) or p-values
  far in the tail (Holm and BH over many configs, the preference pairs).
- :func:`minimum_detectable_edge` is the Sharpe difference such a test detects with a given
  power, from the standard error it observed.
- :func:`excess_evidence` is that test of the pick against one reference on TEST: one
  pre-registered test per reference, nothing deflated by the configs the search tried (TEST
  selects nothing; see :mod:`.gates`).

The test compares Sharpe ratios, not returns: a pick that earns 1/N's return at a third of its
risk has a far higher Sharpe and no more return, and is better.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from alphaloop.evidence import ExcessEvidence, SharpeDifference
from alphaloop.metrics import TRADING_DAYS
from alphaloop.validation.bootstrap import block_length, circular_block_sums, data_rng
from alphaloop.validation.corrections import holm_adjusted
from alphaloop.validation.hac import newey_west, newey_west_lags, prewhitened_parzen
from alphaloop.validation.summary import aligned_matrix

__all__ = [
    "DEFAULT_REPS",
    "DETECTION_POWER",
    "ExcessEvidence",
    "SharpeDifference",
    "excess_evidence",
    "influence",
    "minimum_detectable_edge",
    "newey_west_lags",
    "sharpe_difference",
]

Method = Literal["bootstrap", "hac", "bootstrap_parzen", "newey_west"]
METHODS: tuple[str, ...] = ("bootstrap", "hac", "bootstrap_parzen", "newey_west")
# Bootstrap resamples of a test: a p-value near 5% is known to about +-0.005, and none is
# below 1 / 2000.
DEFAULT_REPS = 1999
# The power every minimum detectable edge is quoted at (a session's verdict, a walk's record).
DETECTION_POWER = 0.80
_CHUNK = 256  # resamples drawn at once: bounded memory on long fold spans


def _gradient(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sharpe difference ``SR_a - SR_b`` (per period) and its gradient in the means ``m`` =
    (mu_a, mu_b, E a^2, E b^2) (Ledoit & Wolf 2008, eq. 3); ``m`` is (..., 4)."""
    mu_a, mu_b, g_a, g_b = m[..., 0], m[..., 1], m[..., 2], m[..., 3]
    v_a = np.maximum(g_a - mu_a**2, 1e-300)
    v_b = np.maximum(g_b - mu_b**2, 1e-300)
    diff = mu_a / np.sqrt(v_a) - mu_b / np.sqrt(v_b)
    grad = np.stack(
        [g_a / v_a**1.5, -g_b / v_b**1.5, -mu_a / (2.0 * v_a**1.5), mu_b / (2.0 * v_b**1.5)],
        axis=-1,
    )
    return diff, grad


def influence(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> np.ndarray:
    """The per-period Sharpe difference's influence series: day t's share of the difference's
    deviation (``grad . (V_t - mean V)``, the delta method's linearisation), whose
    autocorrelation sets the bootstrap's block length."""
    x, y = _checked(a, b)
    raw = np.column_stack([x, y, x**2, y**2])
    means = raw.mean(axis=0)
    _, grad = _gradient(means)
    return (raw - means) @ grad


def _checked(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray):
    x, y = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"paired series must have equal lengths, got {x.size} and {y.size}")
    if x.size < 10 or not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("need at least 10 finite days of both series")
    if x.var() <= 1e-24 or y.var() <= 1e-24:
        raise ValueError("a series that does not vary has no Sharpe ratio")
    return x, y


_UPPER = np.triu_indices(4)


def _studentized_bootstrap(
    raw: np.ndarray, diff: float, d_observed: float, block: int, reps: int, rng: np.random.Generator
) -> float:
    """The one-sided p-value of Ledoit & Wolf's studentized circular block bootstrap: the share
    of resamples (the observed sample counted once) whose ``(D* - D) / se*`` reaches
    ``d_observed``, ``se*`` from the covariance of each resample's own block sums.

    A resample is ``T // b`` block starts; what it needs of them is the sum of its blocks' sums
    and of their outer products, each the count of every start times a table of all ``T``
    possible blocks, so a chunk of resamples is two matrix products, not a pass over its days.
    ``se*^2 = (sum_j (g . S_j)^2 - b T* (g . m*)^2) / T*^2`` is the natural estimator of the
    resample's own long-run variance (blocks ``S_j``, mean ``m*``, gradient ``g`` there).
    """
    n = raw.shape[0]
    blocks = circular_block_sums(raw, block)  # (n, 4): the block starting at each day
    outer = (blocks[:, :, None] * blocks[:, None, :])[:, _UPPER[0], _UPPER[1]]
    table = np.concatenate([blocks, outer], axis=1)  # (n, 14)
    n_blocks = n // block
    days = n_blocks * block
    hits, done = 0, 0
    while done < reps:
        k = min(_CHUNK, reps - done)
        starts = rng.integers(0, n, size=(k, n_blocks), dtype=np.int32)
        starts += (n * np.arange(k, dtype=np.int32))[:, None]
        counts = np.bincount(starts.ravel(), minlength=k * n).reshape(k, n).astype(float)
        drawn = counts @ table
        m = drawn[:, :4] / days
        q = np.zeros((k, 4, 4))
        q[:, _UPPER[0], _UPPER[1]] = drawn[:, 4:]
        q = q + np.triu(q, 1).transpose(0, 2, 1)
        d_star, grad = _gradient(m)
        spread = np.einsum("ri,rij,rj->r", grad, q, grad) - block * days * np.sum(grad * m, 1) ** 2
        se = np.sqrt(np.maximum(spread, 0.0)) / days
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (d_star - diff) / se
        hits += int(np.count_nonzero(t >= d_observed))
        done += k
    return (hits + 1) / (reps + 1)


def _block(centred: np.ndarray, grad: np.ndarray, block: int | None) -> int:
    """The bootstrap's block length: ``block``, else Politis & White's for the influence series
    ``centred @ grad``; at most half the days."""
    chosen = block or max(1, round(block_length(centred @ grad, "circular")))
    return max(1, min(chosen, centred.shape[0] // 2))


def _natural_variance(centred: np.ndarray, grad: np.ndarray, block: int) -> float:
    """Götze & Künsch's variance of the statistic on the observed days: the covariance of the
    influence series' sums over every circular block of ``block`` days (the Bartlett kernel of
    bandwidth ``block``), the estimator each resample's is the bootstrap image of; per period,
    divided by the days."""
    u = circular_block_sums(centred, block) @ grad
    n = centred.shape[0]
    return float(u @ u) / (n * block) / n


def sharpe_difference(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    lags: int | None = None,
    periods: int = TRADING_DAYS,
    method: Method | None = None,
    reps: int = DEFAULT_REPS,
    block: int | None = None,
) -> SharpeDifference:
    """Tests whether ``a`` has a higher Sharpe ratio than ``b`` on the same days.

    Args:
        a, b: daily returns of the two strategies, aligned day by day (equal length).
        lags: a Newey-West bandwidth; given, the test is the former one
            (``method="newey_west"``) at that bandwidth.
        periods: periods per year, to annualise the Sharpe ratios and the difference.
        method: ``bootstrap`` (the default, see the module docstring); ``hac``, its standard
            error with a normal p-value; ``bootstrap_parzen``, Ledoit & Wolf's published code
            (the observed standard error by the prewhitened Parzen HAC); ``newey_west``, the
            former test.
        reps: bootstrap resamples.
        block: the bootstrap's block length; Politis & White's when None.

    Raises:
        ValueError: series of different lengths, fewer than 10 days, non-finite values, a
            series that does not vary, or an unknown method.
    """
    x, y = _checked(a, b)
    chosen = method or ("newey_west" if lags is not None else "bootstrap")
    if chosen not in METHODS:
        raise ValueError(f"unknown method {chosen!r}; use one of {', '.join(METHODS)}")
    n = x.size
    raw = np.column_stack([x, y, x**2, y**2])
    means = raw.mean(axis=0)
    diff, grad = _gradient(means)
    diff = float(diff)
    centred = raw - means
    used_block = used_reps = None
    if chosen == "newey_west":
        lag = newey_west_lags(n) if lags is None else lags
        variance = float(grad @ newey_west(centred, lag) @ grad) / n
    elif chosen == "bootstrap_parzen":
        psi, bandwidth = prewhitened_parzen(centred)
        lag, variance = max(math.ceil(bandwidth) - 1, 0), float(grad @ psi @ grad) / n
        used_block = _block(centred, grad, block)
    else:
        used_block = _block(centred, grad, block)
        lag, variance = used_block - 1, _natural_variance(centred, grad, used_block)
    se = math.sqrt(max(variance, 0.0))
    z = diff / se if se > 0 else math.copysign(math.inf, diff) if diff else 0.0
    # scipy.stats takes ~0.8 s to import; a trial's worker imports this module, never this.
    from scipy import stats

    p_value = float(stats.norm.sf(z))
    if chosen.startswith("bootstrap") and se > 0:
        used_reps = reps
        rng = data_rng(x, y)
        p_value = _studentized_bootstrap(raw, diff, z, used_block, reps, rng)  # type: ignore[arg-type]
    scale = math.sqrt(periods)
    sharpe = means[:2] / np.sqrt(means[2:] - means[:2] ** 2) * scale
    return SharpeDifference(
        sharpe_a=float(sharpe[0]),
        sharpe_b=float(sharpe[1]),
        difference=diff * scale,
        se=se * scale,
        z=z,
        p_value=p_value,
        n_obs=n,
        lags=lag,
        method=chosen,
        block=used_block,
        reps=used_reps,
    )


def minimum_detectable_edge(
    test: SharpeDifference | float, *, alpha: float = 0.05, power: float = DETECTION_POWER
) -> float:
    """The annualised Sharpe difference a one-sided paired test at level ``alpha`` detects with
    probability ``power``, given the standard error it observed: ``se (z_(1-alpha) +
    z_power)``. The standard error is the test's own (``test.se``, or a number in its units),
    so it carries the days' length, correlation and autocorrelation: a window of three years
    with a standard error of 0.37 cannot tell an edge below about 0.9 from luck.

    Raises:
        ValueError: ``alpha`` or ``power`` outside (0, 1), or a negative or non-finite standard
            error.
    """
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError(f"alpha and power must be in (0, 1), got {alpha!r} and {power!r}")
    se = test.se if isinstance(test, SharpeDifference) else float(test)
    if not math.isfinite(se) or se < 0:
        raise ValueError(f"the standard error must be a finite number >= 0, got {se!r}")
    from scipy import stats

    return se * float(stats.norm.ppf(1.0 - alpha) + stats.norm.ppf(power))


def excess_evidence(
    reference: str,
    pick: Sequence[float],
    baseline: Sequence[float],
    other_looks: Sequence[float] = (),
) -> ExcessEvidence:
    """The pick's paired test against ``baseline``, both on TEST, corrected for the other
    looks at those TEST days.

    TEST is sealed within one session; every other session (or pick) judged on the same TEST
    days of the same data looked at them too, and a user who keeps the best-looking of many
    reads noise. So when other distinct picks were tested against the same reference there
    (``other_looks``: their p-values), the gate judges this test's p-value Holm-adjusted over
    all of them (a family-wise level over the looks, whatever their dependence).

    Args:
        reference: what ``baseline`` is (``default`` or ``equal_weight``).
        pick, baseline: TEST daily returns; when their lengths differ (a strategy that starts
            later in the window) only their common, latest days are compared.
        other_looks: the p-values of the other distinct picks journaled on these TEST days.
    """
    paired = aligned_matrix([pick, baseline])
    test = sharpe_difference(paired[:, 0], paired[:, 1])
    if not other_looks:
        return ExcessEvidence(reference=reference, test=test)
    adjusted = holm_adjusted([test.p_value, *other_looks])[0]
    return ExcessEvidence(
        reference=reference, test=test, looks=1 + len(other_looks), p_adjusted=adjusted
    )
