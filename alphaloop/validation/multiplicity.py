"""Many configs tried, one question each: which of them truly beat the default?

Three answers: Holm's family-wise correction and Benjamini-Hochberg's false discovery rate
(:mod:`.corrections`), and, as its book writes it:

- :func:`ras_lower_bounds`, the Rademacher Anti-Serum (Paleologo, *The Elements of Quantitative
  Investing*, 2025, ch. 8, Procedure 8.2): a lower bound on every config's true Sharpe ratio at
  once, holding with probability at least ``1 - delta``. Its price for searching is twice the
  empirical Rademacher complexity of the configs' standardised returns,
  ``R = E_eps[max_n eps . x_n / T]`` (:func:`rademacher_complexity`), which is small when the
  configs move alike: N identical configs cost what one does, N independent ones about
  ``sqrt(2 log N / T)``. For Sharpe ratios (sub-Gaussian returns)::

      theta_n >= theta_hat_n - 2 R - 3 sqrt(2 log(2 / delta) / T) - sqrt(2 log(2 N / delta) / T)

  per period, ``theta_hat_n`` the mean of config n's standardised returns.

The session's pick is StepM over the configs tried (``meta_agent.picking.pick``);
:func:`against_default` is what ``alphaloop validate``
reports: which configs beat the default on the folds' days under each of the three.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from alphaloop.metrics import TRADING_DAYS
from alphaloop.validation.corrections import benjamini_hochberg, holm
from alphaloop.validation.excess import sharpe_difference
from alphaloop.validation.summary import aligned_matrix

FDR_Q = 0.10  # the false discovery rate ``validate`` reports the configs that beat the default at

__all__ = [
    "ConfigVerdict",
    "Multiplicity",
    "against_default",
    "rademacher_complexity",
    "ras_lower_bounds",
]


def rademacher_complexity(x: np.ndarray, n_draws: int = 2000, seed: int = 0) -> float:
    """The empirical Rademacher complexity of the columns of ``x`` (T periods, N configs),
    ``E_eps[max_n eps . x_n / T]`` over random signs ``eps``, by Monte Carlo over ``n_draws``
    sign vectors (seeded: the same matrix always gives the same number).

    Raises:
        ValueError: ``x`` is not a finite (T, N) matrix with T >= 2, or ``n_draws < 1``.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 1 or not np.all(np.isfinite(x)):
        raise ValueError(f"need a finite (T periods, N configs) matrix, got shape {x.shape}")
    if n_draws < 1:
        raise ValueError(f"n_draws must be at least 1, got {n_draws}")
    rng = np.random.default_rng(seed)
    total, done = 0.0, 0
    while done < n_draws:  # in blocks, so a long history does not hold every draw at once
        k = min(256, n_draws - done)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(k, x.shape[0]))
        total += float((signs @ x).max(axis=1).sum())
        done += k
    return total / (n_draws * x.shape[0])


def ras_lower_bounds(
    returns: np.ndarray, delta: float = 0.05, n_draws: int = 2000, seed: int = 0
) -> tuple[np.ndarray, float]:
    """Simultaneous lower bounds on every config's true per-period Sharpe ratio, and the
    Rademacher complexity they were charged (see the module docstring).

    Args:
        returns: (T periods, N configs) returns on the same days; each column is standardised
            by its own standard deviation, so ``theta_hat`` is its per-period Sharpe.
        delta: the bounds all hold with probability at least ``1 - delta``.
        n_draws, seed: the Monte Carlo of :func:`rademacher_complexity`.

    Raises:
        ValueError: a column that does not vary, ``delta`` outside (0, 1), or a bad matrix.
    """
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    r = np.asarray(returns, dtype=float)
    if r.ndim != 2 or r.shape[0] < 2:
        raise ValueError(f"need a (T periods, N configs) matrix, got shape {r.shape}")
    sd = r.std(axis=0, ddof=1)
    if np.any(sd <= 1e-15):
        raise ValueError("a config whose returns do not vary has no Sharpe ratio")
    x = r / sd
    t, n = x.shape
    complexity = rademacher_complexity(x, n_draws, seed)
    price = (
        2.0 * complexity
        + 3.0 * math.sqrt(2.0 * math.log(2.0 / delta) / t)
        + math.sqrt(2.0 * math.log(2.0 * n / delta) / t)
    )
    return x.mean(axis=0) - price, complexity


class ConfigVerdict(BaseModel):
    """One search config against the default on the days it was scored.

    Attributes:
        trial: the config's trial (its index in the session).
        n_days: the days compared (a config raced out early has fewer).
        sharpe_difference: its annualised Sharpe less the default's on those days.
        p_value: the paired test's one-sided p-value (Ledoit & Wolf's standard error, normal).
        fdr: beats the default at the report's false discovery rate (Benjamini-Hochberg).
        holm: beats it at the report's family-wise level (Holm).
        ras_lower: the Rademacher Anti-Serum's simultaneous lower bound on its true annualised
            Sharpe of the excess over the default (None for a config scored on fewer days
            than the rest: the bound needs every config on the same days).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    trial: int
    n_days: int
    sharpe_difference: float
    p_value: float
    fdr: bool
    holm: bool
    ras_lower: float | None = None


class Multiplicity(BaseModel):
    """Which of a session's configs beat the default, under three answers to "many tried".

    Attributes:
        q, alpha, delta: the false discovery rate, the family-wise level and the RAS bound's
            failure probability.
        configs: each search config's verdicts, in trial order.
        beat_default_fdr: the trials that beat the default at false discovery rate ``q``.
        ras_complexity: the Rademacher complexity the RAS bounds were charged (per period).
        ras_reach: what the RAS bound charges for the search, annualised: no config whose
            excess over the default has a lower Sharpe can have a bound above 0. Its constant
            terms alone take about 6.8 of annualised Sharpe at three years of days and 20
            configs, so RAS cannot reject there; it is reported, never part of a verdict.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    q: float
    alpha: float
    delta: float
    configs: tuple[ConfigVerdict, ...]
    beat_default_fdr: tuple[int, ...]
    ras_complexity: float | None = None
    ras_reach: float | None = None


def against_default(
    configs: Mapping[int, Sequence[float]],
    default: Sequence[float],
    q: float = FDR_Q,
    alpha: float = 0.05,
    delta: float = 0.05,
) -> Multiplicity:
    """Each config (by trial index, its daily returns over the folds) against the default's
    (its seed mean over the same folds), on their common latest days: the paired test, and
    which beat the default under Benjamini-Hochberg at ``q``, Holm at ``alpha`` and the
    Rademacher Anti-Serum at ``delta`` (its lower bound on the Sharpe of each config's excess
    over the default levered to the config's volatility, whose mean is positive exactly when
    the config's Sharpe is the higher).

    Raises:
        ValueError: no config, or a series too short or flat for the paired test.
    """
    if not configs:
        raise ValueError("no search config to weigh against the default")
    tests = {i: _paired(r, default) for i, r in configs.items()}
    p = [t.p_value for t in tests.values()]
    fdr = dict(zip(tests, benjamini_hochberg(p, q), strict=True))
    fwer = dict(zip(tests, holm(p, alpha), strict=True))
    ras, complexity, reach = _ras(configs, default, delta)
    verdicts = tuple(
        ConfigVerdict(
            trial=i,
            n_days=t.n_obs,
            sharpe_difference=t.difference,
            p_value=t.p_value,
            fdr=fdr[i],
            holm=fwer[i],
            ras_lower=ras.get(i),
        )
        for i, t in tests.items()
    )
    return Multiplicity(
        q=q,
        alpha=alpha,
        delta=delta,
        configs=verdicts,
        beat_default_fdr=tuple(v.trial for v in verdicts if v.fdr),
        ras_complexity=complexity,
        ras_reach=reach,
    )


def _paired(returns: Sequence[float], default: Sequence[float]) -> Any:
    # The test's standard error with a normal p-value: Holm's and BH's smallest levels (0.05 /
    # 20) lie where a bootstrap of a few thousand resamples has no resolution left, and twenty
    # bootstraps over nine folds of days would double the time ``validate`` takes.
    pair = aligned_matrix([returns, default])
    return sharpe_difference(pair[:, 0], pair[:, 1], method="hac")


def _ras(
    configs: Mapping[int, Sequence[float]], default: Sequence[float], delta: float
) -> tuple[dict[int, float], float | None, float | None]:
    """RAS bounds (annualised) for the configs scored on the most days, all on those days, the
    complexity charged and what the bound charges in all (annualised, see ``ras_reach``)."""
    longest = max(len(r) for r in configs.values())
    full = [i for i, r in configs.items() if len(r) == longest]
    matrix = aligned_matrix([*(configs[i] for i in full), default])
    sd = matrix.std(axis=0, ddof=1)
    excess = matrix[:, :-1] - (sd[:-1] / sd[-1]) * matrix[:, -1:]
    try:
        bounds, complexity = ras_lower_bounds(excess, delta)
    except ValueError:  # a config identical to the default has no excess to bound
        return {}, None, None
    scale = math.sqrt(TRADING_DAYS)
    x = excess / excess.std(axis=0, ddof=1)
    reach = float((x.mean(axis=0)[0] - bounds[0]) * scale)
    return {i: float(b * scale) for i, b in zip(full, bounds, strict=True)}, complexity, reach
