"""Reading a session's history from the journal and journaling what a trial produced.

Shared by the research loop's nodes, its finalize step and manual runs, so a trial's row is
written the same way whoever ran it.
"""

from __future__ import annotations

from alphaloop.journal import (
    FINISHED_STATUSES,
    MAX_CURVE_POINTS,
    Journal,
    TrialKind,
    TrialRecord,
    TrialStatus,
    best_trial,
)
from alphaloop.knobs import BoundsClip, TrialConfig
from alphaloop.meta_agent.keep_rule import Noise, SeedMean
from alphaloop.meta_agent.proposers import ProposalContext, TrialView
from alphaloop.meta_agent.state import SessionContext
from alphaloop.metrics import Metrics
from alphaloop.placement import OutcomeStatus, TrialOutcome
from alphaloop.spec import Objective
from alphaloop.trials import TrialResult

LOOP_KINDS = (TrialKind.baseline, TrialKind.search)


def is_outcome(row: TrialRecord) -> bool:
    """Whether ``row`` finished with an outcome. Interrupted rows are no outcome: counted as
    done, a baseline seed killed mid-trial would never run again (shrinking the noise floor),
    and a resumed proposer would see a history an uninterrupted session never had."""
    return row.status in FINISHED_STATUSES and not row.interrupted


def finished_trials(
    ctx: SessionContext, kinds: tuple[TrialKind, ...] = LOOP_KINDS, *, series: bool = False
) -> list[TrialRecord]:
    """Trials of ``kinds`` with an outcome (see :func:`is_outcome`).

    Without ``series`` the per-day series are not read and only the rows changed since the last
    read are (``ctx.history``): every step of the loop reads the whole history, and only
    finalize needs the daily returns."""
    rows = (
        ctx.journal.trials.of_session(ctx.session_id, series=True) if series else ctx.history.rows()
    )
    return [t for t in rows if t.kind in kinds and is_outcome(t)]


def confirmations(ctx: SessionContext, candidate_id: int) -> list[TrialRecord]:
    """The ``confirm`` rows of a search trial that have an outcome, in the order they ran."""
    return [
        t
        for t in ctx.history.rows()
        if t.kind == TrialKind.confirm and t.parent_id == candidate_id and is_outcome(t)
    ]


def _baseline_objectives(rows: list[TrialRecord]) -> list[float]:
    return [t.objective for t in rows if t.kind == TrialKind.baseline and t.objective is not None]


def seed_noise(rows: list[TrialRecord]) -> Noise:
    """The session's seed noise: the spread of its baseline seeds (``n - 1`` dof)."""
    return Noise.of(_baseline_objectives(rows))


def incumbent_seeds(rows: list[TrialRecord], incumbent: TrialRecord) -> SeedMean:
    """The incumbent's mean over its seeds: every baseline seed for the baseline, the confirmed
    seeds of a kept trial, or its one seed (a trial kept without confirmation, or of a journal
    written before confirmations)."""
    if incumbent.kind == TrialKind.baseline:
        return SeedMean.of(_baseline_objectives(rows))
    if incumbent.seed_mean is not None and incumbent.n_seeds:
        return SeedMean(mean=incumbent.seed_mean, n=incumbent.n_seeds)
    return SeedMean(mean=incumbent.objective, n=1)


def violation_of(objective: Objective, row: TrialRecord) -> str | None:
    """The limit ``row``'s metrics break, computed (not read from ``row.violation``) so rows of
    a schema-1 journal, which never had it, are judged too."""
    return objective.violation(Metrics(**row.metrics)) if row.metrics else None


def proposal_context(
    ctx: SessionContext,
    rows: list[TrialRecord] | None = None,
    pending: list[TrialRecord] | None = None,
) -> ProposalContext:
    """What the proposer may see: validation results of baseline and search trials only.

    ``rows`` are the finished trials when the caller has just read them; ``pending`` the search
    trials still running (parallel workers), which the proposer must not propose again.
    """
    rows = finished_trials(ctx) if rows is None else rows
    history = [_finished_view(ctx, t) for t in rows]
    running = [trial_view(ctx.spec.objective, t, _clips(ctx, t)) for t in pending or ()]
    best = best_trial(rows)
    session = ctx.journal.sessions.get(ctx.session_id)
    counted = ctx.journal.trials.counted(ctx.session_id)
    return ProposalContext(
        session_id=ctx.session_id,
        goal=ctx.spec.goal,
        objective=ctx.spec.objective,
        mode=ctx.spec.mode,
        n_assets=ctx.data.n_assets,
        budget_total=ctx.spec.budget,
        budget_left=max(ctx.spec.budget - counted, 0),
        noise_floor=session.noise_floor or 0.0,
        best_config=TrialConfig(**best.trial.config) if best else TrialConfig(),
        best_objective=best.score if best else None,
        history=history,
        seed=ctx.spec.seed,
        pending=running,
    )


def _clips(ctx: SessionContext, t: TrialRecord) -> list[BoundsClip]:
    return [c.to_bounds_clip() for c in ctx.journal.logs.clips(t.id)]


def _finished_view(ctx: SessionContext, t: TrialRecord) -> TrialView:
    """``t``'s view, made once for each version of its row: a trial's clips are journaled when
    it starts, and its row no longer changes once it has finished."""
    held = ctx.views.get(t.id)
    if held is None or held[0] is not t:
        held = ctx.views[t.id] = (t, trial_view(ctx.spec.objective, t, _clips(ctx, t)))
    return held[1]


def trial_view(objective: Objective, t: TrialRecord, clips: list[BoundsClip]) -> TrialView:
    """A journaled trial as a proposer sees it (validation figures only)."""
    metrics = dict(t.metrics or {})
    violation = None
    if metrics and t.status in (TrialStatus.keep, TrialStatus.discard):
        violation = objective.violation(Metrics(**metrics))
    return TrialView(
        idx=t.idx,
        kind=t.kind,
        status=t.status,
        config=TrialConfig(**t.config),
        changes=dict((t.delta or {}).get("changes", {})),
        rationale=t.rationale or "",
        objective=t.objective,
        metrics=metrics,
        reason=t.reason,
        violation=violation,
        error=t.error,
        clips=clips,
    )


def record_result(
    journal: Journal,
    trial_id: int,
    result: TrialResult,
    *,
    status: TrialStatus | str,
    reason: str | None,
    max_curve_points: int = MAX_CURVE_POINTS,
    violation: str | None = None,
    seeds: SeedMean | None = None,
) -> TrialRecord:
    """Journals what a running trial produced: its PPO training curve (an even sample of at most
    ``max_curve_points`` points, for charts), the env steps PPO actually trained, and its
    finished row with ``violation``, the limit its metrics break (if any), ``seeds``, its
    mean over the seeds it was confirmed on (if it was), and the evaluator version that
    produced its numbers."""
    if result.curve:
        journal.trials.set_curve(
            trial_id, [list(p) for p in result.curve], max_points=max_curve_points
        )
    return journal.trials.finish(
        trial_id,
        status=status,
        objective=result.objective,
        metrics=result.metrics.model_dump(),
        baselines={k: v.model_dump() for k, v in result.baselines.items()},
        val_returns=result.daily_returns,
        final_weights=result.final_weights,
        elapsed_s=result.elapsed_s,
        reason=reason,
        policy_path=result.policy_path,
        env_steps=result.timesteps,
        violation=violation,
        n_seeds=seeds.n if seeds else None,
        seed_mean=seeds.mean if seeds else None,
        evaluator_version=result.evaluator_version,
    )


def record_outcome(
    journal: Journal,
    objective: Objective,
    trial_id: int,
    outcome: TrialOutcome,
    status: TrialStatus | str,
    reason: str | None,
    seeds: SeedMean | None = None,
) -> TrialRecord:
    """Journals ``outcome`` as the end of a running trial: its result with ``status`` (the
    limit it breaks, and ``seeds`` when it was confirmed), or the crash or timeout it was."""
    if outcome.status is not OutcomeStatus.ok or outcome.result is None:
        return journal.trials.finish(
            trial_id,
            status=outcome.status.value,
            error=outcome.error,
            traceback_tail=outcome.traceback_tail,
            reason=reason,
        )
    return record_result(
        journal,
        trial_id,
        outcome.result,
        status=status,
        reason=reason,
        violation=objective.violation(outcome.result.metrics),
        seeds=seeds,
    )
