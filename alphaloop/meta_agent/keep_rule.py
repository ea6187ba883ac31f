"""The keep rule: when a search trial's validation objective is progress, not a lucky seed.

A trial is a pure function of (mode, config, data, seed, budget), so the seed is the only noise
between two runs of one config. The baseline runs the default config on ``n`` seeds; the
standard deviation ``s`` of their objectives estimates the seed noise ``sigma`` of any config,
with ``nu = n - 1`` degrees of freedom. Comparing means of independent seeds, the difference
over its estimated standard error is Student-t with ``nu`` degrees of freedom (the sample mean
and variance of normal draws are independent), so a one-sided margin at level ``alpha`` is::

    margin(m_c, m_i, alpha) = t_{1 - alpha, nu} * s * sqrt(1 / m_c + 1 / m_i)

for a candidate mean over ``m_c`` seeds against an incumbent mean over ``m_i`` seeds. A fixed
margin such as "2 x s" ignores that ``s`` itself is a noisy estimate: with 3 seeds it lets a
seed-only change through about one time in ten (the t tail, not the normal one).

The rule races a candidate the way SMAC's intensification and irace's racing do: cheap first,
more seeds only for the promising.

1. Screen: the candidate's own seed ``y_1`` must beat the incumbent's mean by
   ``margin(1, m_i, SCREEN_ALPHA)``; otherwise it is discarded after one run.
2. Confirm: a candidate that passes is re-run on ``k`` fresh seeds (``confirm`` rows) and kept
   only if its mean over ``1 + k`` seeds beats the incumbent's by ``margin(1 + k, m_i,
   KEEP_ALPHA)``.

A seed-only change (the same true mean as the incumbent) is kept only if it passes step 2, so
its keep rate is at most ``KEEP_ALPHA`` whatever the screen's level: the screen only decides
where confirmation runs are spent, and a looser screen buys power for few extra runs
(measured in ``benchmarks/bench_keep_rule.py``). The incumbent is compared by its mean over
its seeds too: the baseline's ``n``, a kept trial's ``1 + k``.

3. Window test: seeds say nothing of the days. A config that only fits the scored windows'
   noise ("window luck") earns a mean over seeds as high as a real edge, on those days. So a
   candidate that passes step 2 is kept only if its daily returns, averaged over its seeds,
   beat the incumbent's (averaged over its seeds) on the same days of all the session's folds
   by the paired Sharpe-difference test of Ledoit & Wolf (2008; their studentized block
   bootstrap, robust to fat tails and autocorrelation) at ``KEEP_ALPHA`` one-sided
   (:func:`window_test`). Each of the two kinds of luck is then kept about ``KEEP_ALPHA`` of
   the time or less. ``benchmarks/bench_keep_rule.py`` measured it with the former test
   (Newey-West) on tied markets (no config beats the default; 3 folds, 3 seeds): 2 of 96
   seed-only changes kept (2.1%, Wilson 95% 0.6-7.3%) and 5 of 96 window-lucky ones (5.2%,
   2.2-11.6%). There a seed alone also moves a Mean-CVaR book's days, and most of both kinds
   were discarded before steps 2 and 3, by the fold race or the screen.

One baseline seed gives no spread (``nu = 0``): sessions refuse it (two are warned about, see
:func:`seed_count_note`), and a session whose baseline seeds all but one crashed keeps nothing
(the margin is infinite), saying why.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Self

from pydantic import BaseModel, ConfigDict, Field

from alphaloop.spec import CONFIRM_SEEDS
from alphaloop.validation import SharpeDifference, sharpe_difference

SCREEN_ALPHA = 0.10  # one-sided level of the single-seed screen
KEEP_ALPHA = 0.05  # one-sided level of the confirmed comparison: the false-keep rate
# The window test's bootstrap resamples: a p-value near KEEP_ALPHA is known to about +-0.007,
# and a test on nine folds of days costs a tenth of a second or so, not several.
WINDOW_REPS = 999
_FROZEN = ConfigDict(frozen=True, extra="forbid")


def t_margin(spread: float, dof: int, n_candidate: int, n_incumbent: int, alpha: float) -> float:
    """How far a candidate mean over ``n_candidate`` seeds must beat an incumbent mean over
    ``n_incumbent`` seeds for a one-sided t-test at level ``alpha`` (see the module docstring).

    Infinite when ``dof < 1``: no spread was estimated, so no difference can be told from luck.

    Raises:
        ValueError: a seed count below 1 or ``alpha`` outside (0, 1).
    """
    if n_candidate < 1 or n_incumbent < 1:
        raise ValueError(f"seed counts must be >= 1, got {n_candidate} and {n_incumbent}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if dof < 1:
        return math.inf
    # scipy.stats takes ~0.8 s to import; a trial's worker imports this module, never this.
    from scipy import stats

    quantile = float(stats.t.ppf(1 - alpha, dof))
    return quantile * spread * math.sqrt(1 / n_candidate + 1 / n_incumbent)


class Noise(BaseModel):
    """The seed noise of a session: the baseline seeds' standard deviation and its dof."""

    model_config = _FROZEN

    spread: float = Field(ge=0)
    dof: int = Field(ge=0)

    @classmethod
    def of(cls, objectives: Sequence[float]) -> Self:
        """The noise estimated from the baseline seeds' objectives (``n - 1`` dof)."""
        spread = statistics.stdev(objectives) if len(objectives) > 1 else 0.0
        return cls(spread=spread, dof=max(len(objectives) - 1, 0))


class SeedMean(BaseModel):
    """A config's mean objective over the seeds it ran on."""

    model_config = _FROZEN

    mean: float
    n: int = Field(ge=1)

    @classmethod
    def of(cls, objectives: Sequence[float]) -> Self:
        return cls(mean=statistics.fmean(objectives), n=len(objectives))

    def describe(self) -> str:
        return f"{self.mean:.4f}" if self.n == 1 else f"mean {self.mean:.4f} over {self.n} seeds"


class Comparison(BaseModel):
    """One step of the rule: a candidate against the incumbent at a level, and its verdict."""

    model_config = _FROZEN

    candidate: SeedMean
    incumbent: SeedMean
    noise: Noise
    alpha: float = Field(gt=0, lt=1)
    step: str  # "screen" or "confirmed"

    @property
    def margin(self) -> float:
        return t_margin(
            self.noise.spread, self.noise.dof, self.candidate.n, self.incumbent.n, self.alpha
        )

    @property
    def gain(self) -> float:
        return self.candidate.mean - self.incumbent.mean

    @property
    def passed(self) -> bool:
        return self.gain > self.margin

    def describe(self) -> str:
        """The verdict with its numbers, e.g. "mean 1.5200 over 3 seeds beats 1.3100 (mean
        over 3 seeds) by 0.2100 > t-margin 0.1200 (confirmed, alpha 0.05, 2 dof)"."""
        inc = self.incumbent
        bar = f"{inc.mean:.4f}" + (f" (mean over {inc.n} seeds)" if inc.n > 1 else "")
        how = f"({self.step}, alpha {self.alpha:g}, {self.noise.dof} dof)"
        if self.noise.dof < 1:
            return (
                f"{self.candidate.describe()} not kept: no seed noise could be estimated "
                f"({self.noise.dof + 1} baseline seed), so no gain can be told from luck"
            )
        if self.passed:
            return (
                f"{self.candidate.describe()} beats {bar} by {self.gain:.4f} > "
                f"t-margin {self.margin:.4f} {how}"
            )
        return (
            f"{self.candidate.describe()} does not beat {bar} by more than "
            f"t-margin {self.margin:.4f} {how}"
        )


def screen(objective: float, incumbent: SeedMean, noise: Noise) -> Comparison:
    """Step 1: the candidate's own seed against the incumbent's mean, at :data:`SCREEN_ALPHA`."""
    return Comparison(
        candidate=SeedMean(mean=objective, n=1),
        incumbent=incumbent,
        noise=noise,
        alpha=SCREEN_ALPHA,
        step="screen",
    )


def confirmed(objectives: Sequence[float], incumbent: SeedMean, noise: Noise) -> Comparison:
    """Step 2: the candidate's mean over all its seeds against the incumbent's, at
    :data:`KEEP_ALPHA`."""
    return Comparison(
        candidate=SeedMean.of(objectives),
        incumbent=incumbent,
        noise=noise,
        alpha=KEEP_ALPHA,
        step="confirmed",
    )


def seed_count_note(noise_seeds: int, confirm_seeds: int = CONFIRM_SEEDS) -> str | None:
    """A warning for a session whose noise seeds leave the keep rule little power, or None.

    Two seeds estimate the spread with one degree of freedom: the t quantile is then large (6.31
    at 5%), so only gains of many spreads are ever kept.
    """
    if noise_seeds != 2:
        return None
    factor = t_margin(1.0, 1, 1 + confirm_seeds, noise_seeds, KEEP_ALPHA)
    return (
        f"only 2 noise seeds: their spread has 1 degree of freedom, so a candidate must beat "
        f"the baseline by {factor:.1f} x that spread (t-margin at alpha {KEEP_ALPHA:g}) to be "
        "kept, and smaller real gains will be discarded; use 3 or more"
    )


class WindowComparison(BaseModel):
    """Step 3 (see the module docstring): the candidate's seed-mean daily returns against the
    incumbent's on the same days of ``n_folds`` folds."""

    model_config = _FROZEN

    test: SharpeDifference
    n_folds: int = Field(ge=1)
    alpha: float = Field(default=KEEP_ALPHA, gt=0, lt=1)

    @property
    def passed(self) -> bool:
        return self.test.p_value < self.alpha

    def describe(self) -> str:
        """e.g. "Sharpe +0.31 over the incumbent on the same 2,262 days of 3 folds (se 0.12,
        p 0.006 < 0.05)"."""
        t = self.test
        days = f"the same {t.n_obs:,} days of {self.n_folds} fold" + "s" * (self.n_folds > 1)
        numbers = f"se {t.se:.2f}, p {t.p_value:.3f}"
        if self.passed:
            bar = f"{numbers} < {self.alpha:g}"
            return f"Sharpe {t.difference:+.2f} over the incumbent on {days} ({bar})"
        return (
            f"Sharpe {t.difference:+.2f} over the incumbent on {days} is not significant "
            f"({numbers} >= {self.alpha:g}): window luck not ruled out"
        )


def window_test(
    candidate: Sequence[float],
    incumbent: Sequence[float],
    n_folds: int,
    alpha: float = KEEP_ALPHA,
) -> WindowComparison:
    """Step 3 of the rule on two aligned daily series (candidate, incumbent), at ``alpha``.

    Raises:
        ValueError: series of different lengths, too short, or one that does not vary.
    """
    test = sharpe_difference(candidate, incumbent, reps=WINDOW_REPS)
    return WindowComparison(test=test, n_folds=n_folds, alpha=alpha)
