"""Which of many configs beat the default, with the chance of naming any of them wrongly held
at ``alpha``: Romano & Wolf's StepM over the stationary bootstrap.

A session tries many configs on the same days, and the pick is the best that beats the default
there. Testing each at 5% picks noise in about one session in four (twenty tries); dividing the
level by a count of configs is exact only when they are independent, and the effective count of
correlated ones (Li & Ji) under-corrected: on null sessions of twenty correlated configs it
picked 9.2-10.8% of the time at a nominal 5%. A max-statistic bootstrap needs no count: it
resamples whole days, so every config's statistic moves with the others as it did, and reads the
critical value off the distribution of their maximum.

- The statistic of config k is its annualised Sharpe less the default's on the days it was
  scored (a config raced out after its latest folds has only those), studentized by its
  bootstrap standard deviation: ``t_k = D_k / sd*_k``.
- Resamples are Politis & Romano's (1994) stationary bootstrap over the whole span of days
  (blocks of geometric length, mean ``b``: the longest of Politis & White's lengths for the
  configs' influence series, so the most autocorrelated config keeps its dependence); a config
  is scored on the resampled days that fall in its own span, the default beside it on the same
  days. Each resample gives ``t*_k = (D*_k - D_k) / sd*_k``.
- Romano & Wolf (2005, "Stepwise multiple testing as formalized data snooping", Econometrica
  73(4)): reject every config whose ``t_k`` exceeds the ``1 - alpha`` quantile of
  ``max_k t*_k``; drop them and repeat over the rest until none is rejected. The family-wise
  error rate is ``alpha`` asymptotically, whatever the dependence between configs.
- ``recentre``: Hansen's (2005, "A test for superior predictive ability", JBES 23(4))
  consistent recentring. A config far below the default (``t_k < -sqrt(2 log log T_k)``) keeps
  its own negative mean in the resamples instead of zero, so clearly worse configs no longer
  raise the maximum's quantile; a config near the default is centred as before, so the level
  holds.

The resamples are seeded by the data: the same series give the same verdicts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from alphaloop.metrics import TRADING_DAYS
from alphaloop.validation.bootstrap import block_length, data_rng, stationary_counts
from alphaloop.validation.excess import influence

__all__ = ["STEPM_REPS", "StepM", "StepMConfig", "stepm"]

STEPM_REPS = 1999
_CHUNK = 250  # resamples counted at once: bounded memory on a long span of days
_FROZEN = ConfigDict(frozen=True, extra="forbid")


class StepMConfig(BaseModel):
    """One config's statistic and verdict.

    Attributes:
        key: the config's name (its trial index in a session).
        n_days: the days it was scored on (its latest ones).
        difference: its annualised Sharpe less the default's on those days.
        sd: the bootstrap standard deviation of that difference.
        t: ``difference / sd``.
        step: the step of the procedure that rejected it (1 first), None if none did.
    """

    model_config = _FROZEN

    key: int
    n_days: int
    difference: float
    sd: float
    t: float
    step: int | None = None

    @property
    def rejected(self) -> bool:
        return self.step is not None


class StepM(BaseModel):
    """Romano & Wolf's StepM over a session's configs against the default.

    Attributes:
        alpha: the family-wise error rate.
        reps, mean_block: the stationary bootstrap's resamples and mean block length.
        recentred: whether Hansen's recentring was used.
        critical: the critical value of each step, in order.
        configs: each config's statistic and verdict, in the order given; configs identical
            to the default (nothing to test) are left out.
    """

    model_config = _FROZEN

    alpha: float = Field(gt=0, lt=1)
    reps: int
    mean_block: float
    recentred: bool
    critical: tuple[float, ...]
    configs: tuple[StepMConfig, ...]

    @property
    def rejected(self) -> tuple[int, ...]:
        """The configs that beat the default, in the order given."""
        return tuple(c.key for c in self.configs if c.rejected)

    def of(self, key: int) -> StepMConfig | None:
        return next((c for c in self.configs if c.key == key), None)


def _resampled_differences(
    span: np.ndarray, series: list[np.ndarray], counts: np.ndarray, periods: int
) -> np.ndarray:
    """Each config's Sharpe difference over the default on every resample (rows), each on the
    resampled days of its own span (the last ``len(series[k])`` days of ``span``)."""
    out = np.empty((counts.shape[0], len(series)))
    n = span.size
    by_start: dict[int, list[int]] = {}
    for k, s in enumerate(series):
        by_start.setdefault(n - s.size, []).append(k)
    for start, members in by_start.items():
        c = counts[:, start:].astype(float)
        days = c.sum(axis=1)
        cols = [span[start:], span[start:] ** 2]
        for k in members:
            cols += [series[k], series[k] ** 2]
        sums = c @ np.column_stack(cols) / days[:, None]

        def sharpe(mean: np.ndarray, square: np.ndarray) -> np.ndarray:
            return mean / np.sqrt(np.maximum(square - mean**2, 1e-300))

        base = sharpe(sums[:, 0], sums[:, 1])
        for j, k in enumerate(members):
            out[:, k] = (sharpe(sums[:, 2 + 2 * j], sums[:, 3 + 2 * j]) - base) * math.sqrt(periods)
    return out


def stepm(
    configs: Mapping[int, Sequence[float]],
    default: Sequence[float],
    *,
    alpha: float = 0.05,
    reps: int = STEPM_REPS,
    mean_block: float | None = None,
    recentre: bool = False,
    periods: int = TRADING_DAYS,
) -> StepM:
    """Which ``configs`` (by key, each its daily returns on its latest days) beat ``default``
    (daily returns over the whole span) with the family-wise error rate held at ``alpha`` (see
    the module docstring).

    Raises:
        ValueError: no config, ``alpha`` outside (0, 1), a config longer than the default or
            shorter than 10 days, or non-finite returns.
    """
    if not configs:
        raise ValueError("no config to weigh against the default")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    span = np.asarray(default, dtype=float).ravel()
    keys, series, observed = [], [], []
    for key, r in configs.items():
        x = np.asarray(r, dtype=float).ravel()
        if x.size > span.size:
            raise ValueError(f"config {key} has {x.size} days, more than the default's {span.size}")
        y = span[span.size - x.size :]
        if np.allclose(x, y, rtol=0.0, atol=1e-15):
            continue  # the default itself: nothing to test
        u = influence(x, y)
        keys.append(key)
        series.append(x)
        observed.append((x.size, u))
    if not keys:
        return StepM(alpha=alpha, reps=reps, mean_block=1.0, recentred=recentre, critical=(),
                     configs=())  # fmt: skip
    block = mean_block or max(block_length(u, "stationary") for _, u in observed)
    diff = np.array([_sharpe_difference(x, span, periods) for x in series])
    rng = data_rng(span, *series)
    draws = []
    for done in range(0, reps, _CHUNK):
        counts = stationary_counts(span.size, block, min(_CHUNK, reps - done), rng)
        draws.append(_resampled_differences(span, series, counts, periods))
    star = np.concatenate(draws)
    sd = star.std(axis=0, ddof=1)
    sd = np.where(sd > 0, sd, np.inf)
    t = diff / sd
    null = star - diff
    if recentre:
        far_below = t < -np.sqrt(2.0 * np.log(np.log([n for n, _ in observed])))
        null = null + np.where(far_below, diff, 0.0)
    null = null / sd
    steps = np.zeros(len(keys), dtype=int)
    critical: list[float] = []
    while not steps.all():
        active = steps == 0
        c = float(np.quantile(null[:, active].max(axis=1), 1.0 - alpha))
        newly = active & (t > c)
        critical.append(c)
        if not newly.any():
            break
        steps[newly] = len(critical)
    return StepM(
        alpha=alpha,
        reps=reps,
        mean_block=float(block),
        recentred=recentre,
        critical=tuple(critical),
        configs=tuple(
            StepMConfig(
                key=k,
                n_days=n,
                difference=float(diff[i]),
                sd=float(sd[i]),
                t=float(t[i]),
                step=int(steps[i]) or None,
            )
            for i, (k, (n, _)) in enumerate(zip(keys, observed, strict=True))
        ),
    )


def _sharpe_difference(x: np.ndarray, span: np.ndarray, periods: int) -> float:
    y = span[span.size - x.size :]
    return float((x.mean() / x.std() - y.mean() / y.std()) * math.sqrt(periods))
