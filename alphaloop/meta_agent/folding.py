"""A trial scored on the session's folds, raced, with every fold journaled as it finishes.

A trial of the research loop (baseline seed, search trial, confirmation seed) is scored on the
session's walk-forward folds (``alphaloop.trials.folds``), one evaluator job per fold, handed to
the session's runner (so with several workers a trial's folds run side by side). Its outcome is
the folds' aggregate (``aggregate_folds``), or the first fold's crash.

Racing, as the keep rule races seeds: a search trial runs its folds from the most recent back,
in stages of one fold, then up to three in all, then nine, then 27 (:func:`stages`), and after
each stage but the last stops if the folds it ran already show it clearly worse than the
incumbent on the same days (the paired Sharpe-difference z below :data:`FOLD_SCREEN_Z`). A
raced-out trial is discarded with that reason. The screen only decides where runs are spent: a
trial is kept only on the test over all folds, so the screen cannot raise the false-keep rate.
The stages grow geometrically so that the history's extra folds stay cheap: a config clearly
behind stops after one fold or three, and the test of one that is not looks a handful of times
in all, not once a fold. Three folds race as they always did: one, then the other two.

With several workers, racing must not leave one idle while the loop waits for an older
trial: as soon as a later trial's stage is in, the loop journals it and, unless it already
trails the incumbent of the moment, starts its next stage (:meth:`FoldedRun.advance`). The race
itself is decided when the trial's turn comes, against the incumbent as of its index, as with one
worker: only when an older trial's keep changed the incumbent can the two disagree, and then the
folds started early are dropped (cancelled, or not journaled), never counted.

Each fold is journaled (``journal.folds``) in the loop's process as soon as its result is
known. A trial taken up again after a kill (an interrupted search trial's rerun, a baseline or
confirmation seed run again) carries over the folds its interrupted run journaled for the same
config and seed, and runs only the rest: no fold is run twice or lost.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from alphaloop.journal import FoldRecord, TrialKind, TrialRecord, best_trial
from alphaloop.knobs import TrialConfig
from alphaloop.meta_agent.keep_rule import KEEP_ALPHA, WindowComparison, window_test
from alphaloop.meta_agent.recording import (
    confirmations,
    finished_trials,
    is_outcome,
)
from alphaloop.meta_agent.state import SessionContext
from alphaloop.placement import (
    OutcomeStatus,
    Pending,
    TrialJob,
    TrialOutcome,
    finished,
    outcome_of,
)
from alphaloop.trials import TrialResult, aggregate_folds, fold_budget
from alphaloop.validation import aligned_matrix, sharpe_difference

# A search trial whose folds so far trail the incumbent's by more than half a standard error of
# the paired Sharpe difference runs no further fold. Loose on purpose: in bench_keep_rule (tied
# markets, three-year folds) all 96 candidates with +0.3 Sharpe planted in every fold passed it,
# while it stopped about a third of the seed-only and window-lucky ones after one fold.
FOLD_SCREEN_Z = -0.5


def stages(order: list[int], race: bool) -> list[list[int]]:
    """``order``'s folds in the stages a trial runs them in: all at once unless it is raced,
    else one, then up to three in all, nine, 27 (see the module docstring)."""
    if not race:
        return [order]
    out, start, upto = [], 0, 1
    while start < len(order):
        out.append(order[start:upto])
        start, upto = upto, 3 * upto
    return out


class FoldedRun:
    """A trial's folds in flight; :meth:`result` waits for them in order and aggregates."""

    def __init__(
        self,
        ctx: SessionContext,
        row: TrialRecord,
        config: TrialConfig,
        *,
        race: bool = False,
    ) -> None:
        self._ctx, self._row, self._config = ctx, row, config
        self._race = race and len(ctx.folds) > 1
        n = len(ctx.folds)
        # The most recent fold first, in stages (all at once when not raced).
        self._stages = stages(list(range(n - 1, -1, -1)), self._race)
        self._done: dict[int, TrialResult] = _carried_over(ctx, row)
        self._pending: dict[int, Pending] = {}
        self._outcome: TrialOutcome | None = None
        self._looked = 0  # stages :meth:`advance` has journaled and raced
        self._submit(self._stages[0])

    def _submit(self, folds: list[int]) -> None:
        for i in folds:
            if i not in self._done and i not in self._pending:
                self._pending[i] = self._ctx.runner.submit(self._job(i))  # type: ignore[union-attr]

    def _job(self, i: int) -> TrialJob:
        ctx, n = self._ctx, len(self._ctx.folds)
        return TrialJob(
            mode=ctx.spec.mode,
            config=self._config,
            budget=fold_budget(ctx.spec.trial_budget, n, i),
            seed=self._row.seed,
            metric=ctx.spec.objective.metric,
            # The most recent fold's policy is the trial's (it trained on the latest data).
            policy_dir=str(ctx.session_policy_dir) if i == n - 1 else None,
            idx=self._row.idx,
            kind=self._row.kind,
            rows=ctx.folds[i],
        )

    def result(self) -> TrialOutcome:
        if self._outcome is None:
            self._outcome = self._run()
        return self._outcome

    def advance(self) -> None:
        """Without waiting: once a raced trial's stage is in, journals its folds and starts the
        next stage unless the trial trails the incumbent of the moment (see the module
        docstring)."""
        if not self._race or self._outcome is not None or self._looked >= len(self._stages) - 1:
            return
        stage = self._stages[self._looked]
        waiting = [i for i in stage if i not in self._done]
        if not all(i in self._pending and finished(self._pending[i]) for i in waiting):
            return
        outcomes = {i: outcome_of(self._pending[i]) for i in waiting}
        if any(o.status is not OutcomeStatus.ok or o.result is None for o in outcomes.values()):
            return  # the trial's turn reports the crash
        for i, outcome in outcomes.items():
            del self._pending[i]
            self._done[i] = outcome.result  # type: ignore[assignment]
            _journal_fold(self._ctx, self._row.id, i, self._done[i])
        self._looked += 1
        ran = self._ran(self._looked)
        if raced_out(self._ctx, ran, self._aggregate(ran)) is None:
            self._submit(self._stages[self._looked])

    def _ran(self, n_stages: int) -> list[int]:
        """The folds of the first ``n_stages`` stages, oldest first."""
        return sorted(i for stage in self._stages[:n_stages] for i in stage)

    def _aggregate(self, folds: list[int]) -> TrialResult:
        return aggregate_folds([self._done[i] for i in folds])

    def _run(self) -> TrialOutcome:
        for step, stage in enumerate(self._stages):
            self._submit(stage)
            for i in stage:
                if i in self._done:
                    continue
                outcome = outcome_of(self._pending.pop(i), self._advance_others)
                if outcome.status is not OutcomeStatus.ok or outcome.result is None:
                    return _fold_failed(self._ctx, i, outcome)
                self._done[i] = outcome.result
                _journal_fold(self._ctx, self._row.id, i, outcome.result)
            if self._race and step < len(self._stages) - 1:
                ran = self._ran(step + 1)
                why = raced_out(self._ctx, ran, self._aggregate(ran))
                if why is not None:
                    self._drop_started()
                    return TrialOutcome(
                        status=OutcomeStatus.ok, result=self._aggregate(ran), raced_out=why
                    )
        ordered = [self._done[i] for i in range(len(self._ctx.folds))]
        return TrialOutcome(status=OutcomeStatus.ok, result=aggregate_folds(ordered))

    def _advance_others(self) -> None:
        for trial in self._ctx.flight:
            if isinstance(trial.pending, FoldedRun) and trial.pending is not self:
                trial.pending.advance()

    def _drop_started(self) -> None:
        """Cancels the folds :meth:`advance` started for a trial its turn races out (those a
        worker already runs finish unread: they are never journaled)."""
        for pending in self._pending.values():
            cancel = getattr(pending, "cancel", None)
            if cancel is not None:
                cancel()
        self._pending.clear()


def _fold_failed(ctx: SessionContext, i: int, outcome: TrialOutcome) -> TrialOutcome:
    """A fold's crash or timeout as the trial's, saying which fold when there are several."""
    if len(ctx.folds) == 1:
        return outcome
    rows = ctx.folds[i]
    first, last = ctx.data.window_dates(slice(rows.start, rows.stop))
    where = f"fold {i + 1} of {len(ctx.folds)} ({first}..{last}): "
    return outcome.model_copy(update={"error": where + (outcome.error or "")})


def _journal_fold(
    ctx: SessionContext, trial_id: int, i: int, result: TrialResult, reused: int | None = None
) -> FoldRecord:
    return ctx.journal.folds.add(
        trial_id,
        fold=i,
        n_folds=len(ctx.folds),
        start_date=result.start_date,
        end_date=result.end_date,
        objective=result.objective,
        metrics=result.metrics.model_dump(),
        result=result.model_dump(mode="json", exclude={"daily_returns"}),
        returns=result.daily_returns,
        elapsed_s=result.elapsed_s,
        env_steps=result.timesteps,
        evaluator_version=result.evaluator_version,
        reused_from=reused,
    )


def _as_result(record: FoldRecord) -> TrialResult:
    return TrialResult.model_validate({**record.result, "daily_returns": record.returns})


def _carried_over(ctx: SessionContext, row: TrialRecord) -> dict[int, TrialResult]:
    """The folds this row already has, and those an interrupted run of the same config and seed
    journaled (copied to this row, naming the row they came from)."""
    n = len(ctx.folds)
    own = {f.fold: _as_result(f) for f in ctx.journal.folds.of_trial(row.id) if f.n_folds == n}
    earlier = ctx.journal.folds.done_before(ctx.session_id, row.config_hash, row.seed)
    for i, record in earlier.items():
        if i not in own and record.n_folds == n and record.trial_id != row.id:
            own[i] = _as_result(record)
            _journal_fold(ctx, row.id, i, own[i], reused=record.reused_from or record.id)
    return own


# --- the incumbent's days ------------------------------------------------------------------


def fold_returns(ctx: SessionContext, trial: TrialRecord, folds: list[int] | None = None) -> list:
    """``trial``'s daily returns on ``folds`` (all when None), end to end, from its journaled
    folds; a trial journaled before folds has its VALIDATION returns."""
    by_fold = ctx.finished_returns.get(trial.id)
    if by_fold is None:
        by_fold = ctx.journal.folds.returns_of(trial.id)
        if is_outcome(trial):  # its folds are final
            ctx.finished_returns[trial.id] = by_fold
    if -1 in by_fold:
        return by_fold[-1]
    wanted = range(len(ctx.folds)) if folds is None else folds
    return [x for i in wanted for x in by_fold.get(i, [])]


def seed_rows(ctx: SessionContext, rows: list[TrialRecord], trial: TrialRecord) -> list:
    """The rows whose seeds make up ``trial``'s evidence: every baseline seed for a baseline,
    a search trial with its confirmation seeds."""
    if trial.kind == TrialKind.baseline:
        return [t for t in rows if t.kind == TrialKind.baseline and t.objective is not None]
    return [trial, *(t for t in confirmations(ctx, trial.id) if t.objective is not None)]


def compare_days(
    ctx: SessionContext, ours: Any, theirs: Any, alpha: float = KEEP_ALPHA
) -> WindowComparison:
    """The keep rule's test on the days (:func:`~.keep_rule.window_test`) of two daily series
    on their common, latest days, at ``alpha``."""
    pair = aligned_matrix([ours, theirs])
    return window_test(pair[:, 0], pair[:, 1], max(len(ctx.folds), 1), alpha)


def seed_mean_returns(
    ctx: SessionContext, trials: list[TrialRecord], folds: list[int] | None = None
) -> np.ndarray:
    """The day-by-day mean of ``trials``' returns on ``folds``: a config's return net of seed
    noise, on the same days for every config of the session."""
    return aligned_matrix([fold_returns(ctx, t, folds) for t in trials]).mean(axis=1)


def raced_out(ctx: SessionContext, folds: list[int], result: TrialResult) -> str | None:
    """Why a search trial stops after ``folds`` (the folds it ran, oldest first; ``result``
    their aggregate), or None to run on (see the module docstring); a trial with no incumbent
    to race against runs on."""
    rows = finished_trials(ctx)
    incumbent = best_trial(rows)
    if incumbent is None:
        return None
    theirs = seed_mean_returns(ctx, seed_rows(ctx, rows, incumbent.trial), folds)
    pair = aligned_matrix([result.daily_returns, theirs])
    try:
        # The race reads z alone: the test's standard error, no bootstrap p-value.
        test = sharpe_difference(pair[:, 0], pair[:, 1], method="hac")
    except ValueError:
        return None
    if test.z >= FOLD_SCREEN_Z:
        return None
    n = len(ctx.folds)
    where = (
        f"on fold {folds[0] + 1} of {n}" if len(folds) == 1 else f"after {len(folds)} of {n} folds"
    )
    return (
        f"raced out {where} ({result.start_date}..{result.end_date}): Sharpe "
        f"{test.sharpe_a:.2f} vs the incumbent's {test.sharpe_b:.2f} on the same days "
        f"(z {test.z:.2f} < {FOLD_SCREEN_Z:g}); its other folds were not run"
    )
