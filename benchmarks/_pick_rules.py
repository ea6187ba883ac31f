"""Pick rules replayed on a session's rows at its finalize, beside the pick the session makes:
the former rule and the alternatives it was measured against, as a session would have run
them (the same rows, the same seed means of the folds' days, the same order of kept trials).

Each takes the session's context and finished rows and returns the trial it would pick, or
None (the default). ``benchmarks.bench_generalisation`` replays them in every session it runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any
from unittest import mock

from alphaloop.journal import TrialKind, TrialRecord, TrialStatus
from alphaloop.meta_agent import finalize, folding, picking
from alphaloop.meta_agent.recording import violation_of
from alphaloop.validation import aligned_matrix, search_set, sharpe_difference
from alphaloop.validation.pick_rule import PickRule
from alphaloop.validation.sharpe import effective_trials
from alphaloop.validation.stepm import stepm

LEVEL = 0.05
# Resamples of the bootstrap test at the Sidak level for twenty configs (0.00256): about 26 of
# 9,999 resamples lie beyond it, so the level is resolved to +-20%.
SIDAK_REPS = 9999

Rule = Callable[[Any, list[TrialRecord]], TrialRecord | None]
# Finalize's own pick, kept before a benchmark wraps it to replay these rules beside it.
_PICK = finalize.pick


def sidak(alpha: float, n_tests: float) -> float:
    """Šidák's per-test level for ``n_tests`` independent tests at family-wise ``alpha``."""
    return 1.0 - (1.0 - alpha) ** (1.0 / max(n_tests, 1.0))


def _kept_and_default(ctx: Any, rows: list[TrialRecord]) -> tuple[list[TrialRecord], Any]:
    kept = sorted(
        (t for t in rows if t.kind == TrialKind.search and t.status == TrialStatus.keep),
        key=lambda t: -t.score,
    )
    base = [t for t in rows if t.kind == TrialKind.baseline and t.objective is not None]
    return kept, (folding.seed_mean_returns(ctx, base) if base else None)


def _first_passing(
    ctx: Any, rows: list[TrialRecord], kept: list[TrialRecord], default: Any, alpha: float,
    **test: Any,
) -> TrialRecord | None:  # fmt: skip
    for trial in kept:
        ours = folding.seed_mean_returns(ctx, folding.seed_rows(ctx, rows, trial))
        pair = aligned_matrix([ours, default])
        if sharpe_difference(pair[:, 0], pair[:, 1], **test).p_value < alpha:
            return trial
    return None


def former(ctx: Any, rows: list[TrialRecord]) -> TrialRecord | None:
    """The rule this release replaced: the keep rule's paired test (Newey-West) at 5% Šidák-
    corrected over Li & Ji's effective count of the search configs' daily excess over the
    default on the days they all share; the top kept trial, untested, when the default breaks
    the limits."""
    kept, default = _kept_and_default(ctx, rows)
    if not kept or default is None:
        return None
    base = next(t for t in rows if t.kind == TrialKind.baseline and t.objective is not None)
    if violation_of(ctx.spec.objective, base) is not None:
        return kept[0]
    search = search_set(rows)
    days = aligned_matrix([*(t.val_returns for t in search), default])
    n_eff = max(effective_trials(days[:, :-1] - days[:, -1:]), 1.0)
    return _first_passing(ctx, rows, kept, default, sidak(LEVEL, n_eff), method="newey_west")


def sidak_nominal(method: str) -> Rule:
    """The paired test (``method``) at 5% Šidák-corrected over every search config tried."""

    def rule(ctx: Any, rows: list[TrialRecord]) -> TrialRecord | None:
        kept, default = _kept_and_default(ctx, rows)
        if not kept or default is None:
            return None
        alpha = sidak(LEVEL, len(search_set(rows)))
        reps = {"reps": SIDAK_REPS} if method == "bootstrap" else {}
        return _first_passing(ctx, rows, kept, default, alpha, method=method, **reps)

    return rule


def today(rule: PickRule, *, recentre: bool = False) -> Rule:
    """Finalize's own pick under ``rule`` (StepM with Hansen's recentring when ``recentre``)."""

    def pick(ctx: Any, rows: list[TrialRecord]) -> TrialRecord | None:
        patched = functools.partial(stepm, recentre=True) if recentre else stepm
        with mock.patch.object(picking, "stepm", patched):
            return _PICK(ctx, rows, rule)[0]

    return pick


RULES: dict[str, Rule] = {
    "former (Šidák over Li & Ji, Newey-West)": former,
    "Šidák over all configs, Newey-West": sidak_nominal("newey_west"),
    "Šidák over all configs, bootstrap test": sidak_nominal("bootstrap"),
    "StepM (today's strict rule)": today(PickRule()),
    "StepM, Hansen's recentring": today(PickRule(), recentre=True),
    "lenient (the best estimate)": today(PickRule(rule="lenient")),
}
FORMER = "former (Šidák over Li & Ji, Newey-West)"
