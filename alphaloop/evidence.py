"""The evidence a pick is judged on, as data: the deflated Sharpe, the paired Sharpe-difference
test against a reference, the PBO summary and the go/no-go gates' verdicts.

Data only, no statistics: :mod:`alphaloop.validation` (and :mod:`alphaloop.metrics`) compute
these models, the journal stores them inside a session's final report, and every view reads
them back as these types. They live below the journal so that the journal can type what it
stores without knowing the package that computes it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class DeflatedSharpe(BaseModel):
    """The deflated Sharpe ratio of a selected strategy, under N and under N effective.

    Sharpe figures are per period (daily), as the formulas need; ``None`` marks a ratio that is
    undefined (too few returns, no variation), so the model journals as plain JSON.

    Attributes:
        sharpe: the candidate's per-period Sharpe on the returns given.
        n_obs, skew, kurtosis: the sample behind it (kurtosis 3 for a normal law).
        psr: probability that the true Sharpe exceeds 0.
        n_trials: N, the trials the candidate was selected from.
        sr_variance: the variance of the trials' Sharpe ratios (ddof 1), which the hurdle uses.
        hurdle: expected maximum Sharpe of N unskilled trials.
        dsr: PSR against ``hurdle``.
        n_effective: effective number of independent trials, when given.
        hurdle_effective, dsr_effective: the same under ``n_effective``.
    """

    model_config = _FROZEN

    sharpe: float | None
    n_obs: int
    skew: float | None
    kurtosis: float | None
    psr: float | None
    n_trials: float
    sr_variance: float
    hurdle: float
    dsr: float | None
    n_effective: float | None = None
    hurdle_effective: float | None = None
    dsr_effective: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _without_the_former_cap(cls, data: Any) -> Any:
        # Reports journaled while the hurdle's variance was capped carry the cap and the
        # uncapped variance too; they read as what they were, without those two numbers.
        if isinstance(data, dict) and ("luck_variance" in data or "observed_sr_variance" in data):
            return {k: v for k, v in data.items() if k not in _FORMER_CAP}
        return data


_FORMER_CAP = ("luck_variance", "observed_sr_variance")


class SharpeDifference(BaseModel):
    """The paired Sharpe-difference test of ``a`` against ``b`` on the same days.

    Attributes:
        sharpe_a, sharpe_b: annualised Sharpe ratios (population moments, as the test uses).
        difference: ``sharpe_a - sharpe_b``, annualised.
        se: its HAC standard error, annualised.
        z: ``difference / se``.
        p_value: one-sided, for the alternative "a has the higher Sharpe".
        n_obs: days compared.
        lags: the HAC bandwidth used (the last lag with a non-zero weight).
        method: how the p-value was found: ``bootstrap`` (Ledoit & Wolf's studentized circular
            block bootstrap), ``hac`` (its standard error, a normal p-value),
            ``bootstrap_parzen`` (the bootstrap as Ledoit & Wolf's code studentizes the
            observed days) or ``newey_west`` (the former test; every test journaled before
            the others existed).
        block, reps: the bootstrap's block length and resamples (None without a bootstrap).
    """

    model_config = _FROZEN

    sharpe_a: float
    sharpe_b: float
    difference: float
    se: float
    z: float
    p_value: float
    n_obs: int
    lags: int
    method: Literal["bootstrap", "hac", "bootstrap_parzen", "newey_west"] = "newey_west"
    block: int | None = None
    reps: int | None = None


class ExcessEvidence(BaseModel):
    """How the pick compares with one reference (the default config, or 1/N) on TEST.

    Attributes:
        reference: ``default`` or ``equal_weight``.
        test: the paired Sharpe-difference test of the pick against the reference.
        looks: the distinct picks journaled as tested against this reference on the same TEST
            days of the same data, this one included (1: the first look; the default in
            reports from before looks were counted).
        p_adjusted: the test's p-value Holm-adjusted over those looks' p-values, what the gate
            judges when there was more than one look (None: one look, ``test.p_value``).
    """

    model_config = _FROZEN

    reference: str
    test: SharpeDifference
    looks: int = 1
    p_adjusted: float | None = None

    @property
    def decisive_p(self) -> float:
        """The p-value the gate judges: Holm-adjusted over the looks when there were several."""
        return self.p_adjusted if self.p_adjusted is not None else self.test.p_value

    @model_validator(mode="before")
    @classmethod
    def _without_test_deflation(cls, data: Any) -> Any:
        # Reports journaled while the TEST excess was deflated by the configs tried carry that
        # deflated Sharpe too; TEST selects nothing, so it is no longer evidence and is dropped.
        if isinstance(data, dict) and "deflated" in data:
            return {k: v for k, v in data.items() if k != "deflated"}
        return data


class NoEvidence(BaseModel):
    """Why there is no evidence against a reference (say, "the pick is the default config")."""

    model_config = _FROZEN

    note: str


class PBOSummary(BaseModel):
    """PBO and the shape of its logit distribution, small enough to journal.

    Attributes:
        pbo: share of combinations whose logit is < 0, those at exactly 0 counting half.
        n_blocks, n_trials, n_days, n_combinations: what CSCV ran over.
        prob_oos_loss: share of combinations whose in-sample winner lost out of sample.
        degradation_slope: slope of the winner's OOS Sharpe on its IS Sharpe (None if flat).
        logit_quantiles: ``"5%"`` ... ``"95%"`` of the logits.
        histogram_edges, histogram_counts: the logit histogram (``len(edges) = len(counts)+1``).
        interval: PBO's 95% bootstrap interval (``validation.pbo.pbo_interval``); None in
            summaries journaled before it existed.
        n_trials_left_out: search trials not in the matrix (``validation.summary.fold_block``):
            raced out after fewer folds than the trials in it ran.
    """

    model_config = _FROZEN

    pbo: float
    n_blocks: int
    n_trials: int
    n_days: int
    n_combinations: int
    prob_oos_loss: float
    degradation_slope: float | None
    logit_quantiles: dict[str, float]
    histogram_edges: tuple[float, ...]
    histogram_counts: tuple[int, ...]
    interval: tuple[float, float] | None = None
    n_trials_left_out: int = 0


class GateResult(BaseModel):
    """One gate's verdict and why."""

    model_config = _FROZEN

    gate: str
    passed: bool
    value: float | None
    threshold: float
    comparison: Literal[">", "<"]
    reason: str


class GateReport(BaseModel):
    """Every enabled gate's verdict; ``passed`` only when all of them pass.

    ``notes`` are what the verdict reports beside its gates without being decided by them (PBO
    and its interval when its gate is off, how often the TEST days were looked at), each a
    sentence; none in reports journaled before they existed.
    """

    model_config = _FROZEN

    passed: bool
    results: tuple[GateResult, ...]
    notes: tuple[str, ...] = ()

    @property
    def failed(self) -> tuple[GateResult, ...]:
        return tuple(r for r in self.results if not r.passed)

    def headline(self) -> str:
        """The one-line verdict, naming the tests that decided it: on a GO the two TEST tests
        (``GO: beats the default (p 0.004) and 1/N (p 0.011) on TEST; 8 of 8 gates passed``),
        on a NO-GO each gate that failed, the TEST tests first (``NO-GO: beats_default failed
        (p-value 0.214, needs < 0.05); 7 of 8 gates passed``)."""
        n, ok = len(self.results), len(self.results) - len(self.failed)
        tally = f"{ok} of {n} gates passed"
        if self.passed:
            tests = [r for r in self.results if r.gate in _PAIRED]
            if not tests:
                return f"GO: {tally} (the TEST tests against the default and 1/N are off)"
            said = " and ".join(
                f"{_PAIRED[r.gate]} (p {r.value:.3g})" for r in tests if r.value is not None
            )
            return f"GO: beats {said} on TEST; {tally}"
        failed = sorted(self.failed, key=lambda r: r.gate not in _PAIRED)
        return f"NO-GO: {', '.join(_failure(r) for r in failed)}; {tally}"

    def summary(self) -> str:
        """The :meth:`headline` and, on a NO-GO, each failed gate's reason, the TEST tests
        first; then the notes."""
        notes = "".join(f"; {n}" for n in self.notes)
        if self.passed:
            return self.headline() + notes
        failed = sorted(self.failed, key=lambda r: r.gate not in _PAIRED)
        return f"{self.headline()} ({'; '.join(r.reason for r in failed)}){notes}"


# The TEST tests, by gate name, and what the verdict calls their reference.
_PAIRED = {"beats_default": "the default", "beats_equal_weight": "1/N"}


def _failure(result: GateResult) -> str:
    """``beats_default failed (p-value 0.214, needs < 0.05)`` for the headline."""
    if result.value is None:
        return f"{result.gate} failed (not computed)"
    name = "p-value " if result.gate in _PAIRED else ""
    shown = f"{name}{result.value:.3g}, needs {result.comparison} {result.threshold:g}"
    return f"{result.gate} failed ({shown})"
