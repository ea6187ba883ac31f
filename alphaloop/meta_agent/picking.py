"""The session's pick: which search config finalize evaluates on TEST, by the session's pick
rule (:mod:`alphaloop.validation.pick_rule`), and a sentence saying which and why."""

from __future__ import annotations

import numpy as np

from alphaloop.journal import Ranking, TrialKind, TrialRecord, TrialStatus, best_estimate
from alphaloop.meta_agent import folding
from alphaloop.meta_agent.recording import violation_of
from alphaloop.meta_agent.state import SessionContext
from alphaloop.validation import search_set
from alphaloop.validation.pick_rule import PickRule
from alphaloop.validation.stepm import StepM, StepMConfig, stepm

__all__ = ["pick"]


def pick(
    ctx: SessionContext, rows: list[TrialRecord], rule: PickRule | None = None
) -> tuple[TrialRecord | None, str]:
    """The session's pick and why, by ``rule`` (None: the strict rule at 5%; see
    :mod:`alphaloop.validation.pick_rule`): a search trial, or None (the default itself: no
    improvement found).

    Strict: the best kept search trial (within the limits) among those that beat the default
    on the same days of the folds by StepM at the rule's family-wise level, over every search
    config tried (each averaged over its seeds, the default over the baseline's). The search's
    multiplicity is paid here, once: each kept trial passed its own test at ``KEEP_ALPHA``, but
    on a market where nothing beats the default one config in twenty would by luck. Every pick
    passes this test, also when the default breaks the session's limits. Lenient: the best fold
    score among the configs scored on every fold, if above the default's."""
    rule = rule or PickRule()
    base = [t for t in rows if t.kind == TrialKind.baseline and t.objective is not None]
    search = [t for t in search_set(rows) if violation_of(ctx.spec.objective, t) is None]
    kept = sorted((t for t in search if t.status == TrialStatus.keep), key=lambda t: -t.score)
    if not base:
        return None, "no improvement found: the default config has no baseline run"
    broken = violation_of(ctx.spec.objective, base[0])
    limits = f"; the default breaks the limits ({broken})" if broken else ""
    default = folding.seed_mean_returns(ctx, base)
    if rule.rule == "lenient":
        return _best_estimate(search, base, default, limits)
    if not kept:
        return None, f"no improvement found: no search trial was kept{limits}"
    series = {
        t.idx: folding.seed_mean_returns(ctx, folding.seed_rows(ctx, rows, t))
        for t in search_set(rows)
    }
    test = stepm(series, default, alpha=rule.level)
    for trial in kept:
        verdict = test.of(trial.idx)
        if verdict is not None and verdict.rejected:
            return trial, (
                f"trial {trial.idx} beats the default on the same days of the folds, "
                f"{_stepm_said(test, verdict)}{limits}"
            )
    best = max((test.of(t.idx) for t in kept if test.of(t.idx)), key=lambda v: v.t, default=None)
    closest = f"; the closest, {_stepm_said(test, best)}" if best is not None else ""
    return None, (
        f"no improvement found: none of the {len(kept)} kept search trial(s) beat the default "
        f"on the same days of the folds at a family-wise {rule.level:g} over the "
        f"{len(series)} configs tried (StepM){closest}{limits}; the default is the pick"
    )


def _stepm_said(test: StepM, verdict: StepMConfig) -> str:
    """``trial 7: Sharpe +0.31 over 6,804 days, t 3.9 > 2.6 (StepM step 1 of 20 configs, 5%)``"""
    step = verdict.step or len(test.critical)
    bar = test.critical[step - 1] if test.critical else float("nan")
    sign = ">" if verdict.rejected else "<="
    return (
        f"trial {verdict.key}: Sharpe {verdict.difference:+.2f} over {verdict.n_days:,} days, "
        f"t {verdict.t:.2f} {sign} {bar:.2f} (StepM step {step}, {len(test.configs)} configs, "
        f"family-wise {test.alpha:g})"
    )


def _best_estimate(
    search: list[TrialRecord], base: list[TrialRecord], default: np.ndarray, limits: str
) -> tuple[TrialRecord | None, str]:
    """The lenient rule: the best fold score among search trials within the limits scored on
    every fold (as many days as the default's), if above the default's mean over its seeds."""
    full = [t for t in search if len(t.val_returns or ()) >= len(default)]
    own = Ranking().add(base).baseline_mean
    best = best_estimate(full, base)
    if best is None:
        top = max(full, key=lambda t: t.score, default=None)
        what = f"trial {top.idx}'s {top.score:.4f}" if top is not None else "no search trial"
        return None, (
            f"no improvement found: the best estimate is the default ({own:.4f} over its "
            f"seeds; {what} scored on every fold; lenient rule, no test){limits}"
        )
    return best, (
        f"trial {best.idx}, the best estimate: fold score {best.score:.4f} against the "
        f"default's {own:.4f} (lenient rule, no test){limits}"
    )
