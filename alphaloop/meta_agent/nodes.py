"""The research loop's nodes (verbs) and routers; the keep rule's statistics are in
:mod:`.keep_rule`. Each node reads the journal, does one thing, and
writes its result to the journal before returning, so a kill between any two nodes loses at
most the node in flight. ``finalize`` lives in :mod:`.finalize`."""

from __future__ import annotations

import logging
import statistics
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from langgraph.runtime import Runtime
from pydantic import BaseModel, ConfigDict

from alphaloop import telemetry
from alphaloop.exceptions import TrialCrashed
from alphaloop.journal import TrialKind, TrialRecord, TrialStatus
from alphaloop.knobs import BoundsClip, TrialConfig, clip, config_hash
from alphaloop.meta_agent import keep_rule
from alphaloop.meta_agent.keep_rule import SeedMean
from alphaloop.meta_agent.objective import Objective
from alphaloop.meta_agent.proposers import ProposalContext, TrialView
from alphaloop.meta_agent.recording import (
    best_so_far,
    confirmations,
    finished_trials,
    incumbent_seeds,
    record_outcome,
    seed_noise,
    violation_of,
)
from alphaloop.meta_agent.state import (
    LoopEvent,
    OutcomeStatus,
    Proposal,
    SessionContext,
    SessionState,
    TrialOutcome,
    clips_of,
    config_of,
    outcome_of,
    proposal_of,
)
from alphaloop.meta_agent.tracing import PROPOSE, RECORD, TRIAL
from alphaloop.metrics import Metrics
from alphaloop.trials import run_trial as evaluate

logger = logging.getLogger(__name__)
T = TypeVar("T")

# --- reading the journal -------------------------------------------------------------------


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
    clips_by_trial: dict[int, list[BoundsClip]] = {}
    for c in ctx.journal.session_clips(ctx.session_id):
        clips_by_trial.setdefault(c.trial_id, []).append(c.to_bounds_clip())
    history = [trial_view(ctx.objective, t, clips_by_trial.get(t.id, [])) for t in rows]
    running = [trial_view(ctx.objective, t, clips_by_trial.get(t.id, [])) for t in pending or ()]
    best, best_obj = best_so_far(rows)
    session = ctx.journal.get_session(ctx.session_id)
    counted = ctx.journal.counted_trials(ctx.session_id)
    return ProposalContext(
        session_id=ctx.session_id,
        goal=ctx.goal,
        objective=ctx.objective,
        mode=ctx.mode,
        n_assets=ctx.data.n_assets,
        budget_total=ctx.budget,
        budget_left=max(ctx.budget - counted, 0),
        noise_floor=session.noise_floor or 0.0,
        best_config=TrialConfig(**best.config) if best else TrialConfig(),
        best_objective=best_obj,
        history=history,
        seed=ctx.seed,
        pending=running,
    )


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


def run_outcome(
    ctx: SessionContext, row: TrialRecord, config: TrialConfig, **kwargs: Any
) -> TrialOutcome:
    """Runs one trial for a journal row; a failing trial is an outcome, never an exception."""
    try:
        result = evaluate(
            ctx.mode,
            config,
            ctx.data,
            ctx.trial_budget,
            row.seed,
            metric=ctx.objective.metric,
            policy_dir=ctx.session_policy_dir,
            **kwargs,
        )
    except Exception as err:  # a failing trial is a journaled crash, and the loop goes on
        outcome = TrialOutcome.failed(err)
        logger.warning("trial %d (%s) ended %s: %s", row.idx, row.kind, outcome.status, err)
        return outcome
    return TrialOutcome(status=OutcomeStatus.ok, result=result)


def in_span(ctx: SessionContext, name: str, attributes: dict[str, Any], fn: Callable[[], T]) -> T:
    """Runs ``fn`` in a span ``name``, a child of the iteration in progress."""

    def spanned() -> T:
        with telemetry.span(name, attributes):
            return fn()

    return ctx.open_iteration().run(spanned)


def trial_attributes(row: TrialRecord) -> dict[str, Any]:
    return {
        "alphaloop.trial.idx": row.idx,
        "alphaloop.trial.kind": row.kind,
        "alphaloop.seed": row.seed,
    }


# --- nodes ---------------------------------------------------------------------------------


def baseline(state: SessionState, runtime: Runtime[SessionContext]) -> dict:
    """Runs the default config with ``noise_seeds`` seeds (skipping any already journaled) and
    sets the noise floor: the standard deviation of their objectives."""
    ctx = runtime.context
    for row in start_baselines(ctx):
        finish_baseline(ctx, row, run_outcome(ctx, row, TrialConfig()))
    set_noise_floor(ctx)
    return {"session_id": ctx.session_id}


def set_noise_floor(ctx: SessionContext) -> None:
    """Journals the noise floor: the standard deviation of the baseline seeds' objectives.

    Raises:
        TrialCrashed: every baseline trial failed.
    """
    baselines = finished_trials(ctx, (TrialKind.baseline,))
    objectives = [t.objective for t in baselines if t.objective is not None]
    if not objectives:
        raise TrialCrashed("every baseline trial failed; see `alphaloop journal` for the errors")
    spread = statistics.stdev(objectives) if len(objectives) > 1 else 0.0
    ctx.journal.update_session(ctx.session_id, noise_floor=spread)


def propose(state: SessionState, runtime: Runtime[SessionContext]) -> dict:
    ctx = runtime.context
    rows = finished_trials(ctx)
    what = {"alphaloop.proposer": ctx.proposer.name}
    delta = in_span(ctx, PROPOSE, what, lambda: ctx.proposer.propose(proposal_context(ctx, rows)))
    best, _ = best_so_far(rows)
    prompt = getattr(ctx.proposer, "last_prompt", None)
    return {
        "proposal": Proposal.of(delta, ctx.proposer.last_name, prompt),
        "parent_id": best.id if best else None,
        "trial_id": None,
        "outcome": None,
    }


def clip_config(state: SessionState, runtime: Runtime[SessionContext]) -> dict:
    ctx = runtime.context
    parent = ctx.journal.get_trial(state["parent_id"]) if state.get("parent_id") else None
    base = TrialConfig(**parent.config) if parent else TrialConfig()
    config, clips = clip(
        base, proposal_of(state).delta(), ctx.data.n_assets, ctx.trial_budget.n_envs
    )
    return {"config": config, "clips": clips}


def run_trial(state: SessionState, runtime: Runtime[SessionContext]) -> dict:
    ctx = runtime.context
    proposal, config = proposal_of(state), config_of(state)
    row = ctx.journal.start_trial(
        ctx.session_id,
        kind=TrialKind.search,
        config=config.model_dump(),
        config_hash=config_hash(config),
        delta={"changes": proposal.changes, "rationale": proposal.rationale},
        parent_id=state.get("parent_id"),
        seed=ctx.seed,
        rationale=proposal.rationale,
        proposer=proposal.proposer,
        prompt=proposal.prompt,
    )
    ctx.open_iteration().set({"alphaloop.trial.idx": row.idx})
    clips = clips_of(state)
    if clips:
        ctx.journal.add_clips(row.id, clips)
    ctx.on_event(
        LoopEvent.trial_started,
        {"idx": row.idx, "kind": "search", "proposal": proposal.model_dump(), "clips": clips},
    )
    outcome = in_span(ctx, TRIAL, trial_attributes(row), lambda: run_outcome(ctx, row, config))
    return {"trial_id": row.id, "outcome": outcome}


def confirm(state: SessionState, runtime: Runtime[SessionContext]) -> dict:
    """Re-runs a candidate that passed the screen on the session's confirmation seeds, one
    ``confirm`` row each (not counted against the budget; their time counts against the time
    budget). Idempotent: seeds whose row already has an outcome are skipped, so a resumed
    session runs only the confirmations a kill cut short."""
    ctx = runtime.context
    candidate = ctx.journal.get_trial(state["trial_id"])
    config = TrialConfig(**candidate.config)
    for row in start_confirmations(ctx, candidate):
        outcome = in_span(
            ctx, TRIAL, trial_attributes(row), lambda row=row: run_outcome(ctx, row, config)
        )
        finish_confirmation(ctx, candidate, row, outcome)
    return {}


def start_baselines(ctx: SessionContext) -> Iterator[TrialRecord]:
    """Journals (and yields, one at a time) a baseline row for each of the ``noise_seeds``
    seeds that has no outcome yet: a resumed session runs only what a kill cut short."""
    done = {t.seed for t in finished_trials(ctx, (TrialKind.baseline,))}
    config = TrialConfig()
    for seed in range(ctx.seed, ctx.seed + ctx.noise_seeds):
        if seed in done:
            continue
        row = ctx.journal.start_trial(
            ctx.session_id,
            kind=TrialKind.baseline,
            config=config.model_dump(),
            config_hash=config_hash(config),
            delta={"changes": {}, "rationale": "baseline"},
            parent_id=None,
            seed=seed,
            rationale="baseline: default config",
            proposer="baseline",
        )
        ctx.on_event(LoopEvent.trial_started, {"idx": row.idx, "kind": "baseline"})
        yield row


def finish_baseline(ctx: SessionContext, row: TrialRecord, outcome: TrialOutcome) -> None:
    """Journals a baseline run's outcome (kept when it ran)."""
    rec = finish_outcome(ctx, row.id, outcome, kept_if_ok(outcome), "baseline")
    ctx.on_event(LoopEvent.trial_finished, {"trial": rec})


def _confirmation_reason(candidate: TrialRecord) -> str:
    return f"confirmation of trial {candidate.idx} on a fresh seed"


def start_confirmations(ctx: SessionContext, candidate: TrialRecord) -> Iterator[TrialRecord]:
    """Journals (and yields, one at a time) a ``confirm`` row for each of the candidate's fresh
    seeds that has no outcome yet: a resumed session runs only what a kill cut short."""
    done = {t.seed for t in confirmations(ctx, candidate.id)}
    why = _confirmation_reason(candidate)
    for seed in ctx.confirm_seed_range:
        if seed in done:
            continue
        row = ctx.journal.start_trial(
            ctx.session_id,
            kind=TrialKind.confirm,
            config=candidate.config,
            config_hash=candidate.config_hash,
            delta={"changes": {}, "rationale": why},
            parent_id=candidate.id,
            seed=seed,
            rationale=why,
            proposer="confirm",
        )
        ctx.on_event(LoopEvent.trial_started, {"idx": row.idx, "kind": "confirm"})
        yield row


def finish_confirmation(
    ctx: SessionContext, candidate: TrialRecord, row: TrialRecord, outcome: TrialOutcome
) -> None:
    """Journals a confirmation run's outcome (kept when it ran: the verdict is the candidate's)."""
    rec = finish_outcome(ctx, row.id, outcome, kept_if_ok(outcome), _confirmation_reason(candidate))
    ctx.on_event(LoopEvent.trial_finished, {"trial": rec})


def record(state: SessionState, runtime: Runtime[SessionContext]) -> dict:
    """Gives the verdict (keep / discard, or the crash) and journals it. Idempotent: a trial
    already finished (a resumed session replaying this node) is left as it is."""
    ctx = runtime.context
    trial_id, outcome = state["trial_id"], outcome_of(state)
    row = ctx.journal.get_trial(trial_id)
    if row.status != TrialStatus.running:
        ctx.close_iteration()
        return {"proposal": None, "outcome": None}
    rec = in_span(ctx, RECORD, trial_attributes(row), lambda: decide(ctx, trial_id, outcome))
    ctx.open_iteration().set({"alphaloop.trial.status": rec.status.value})
    ctx.close_iteration()
    ctx.on_event(LoopEvent.trial_finished, {"trial": rec})
    return {"proposal": None, "outcome": None}


def decide(ctx: SessionContext, trial_id: int, outcome: TrialOutcome) -> TrialRecord:
    """Gives search trial ``trial_id`` its verdict and journals it (see :func:`verdict`)."""
    found = verdict(ctx, trial_id, outcome)
    return finish_outcome(ctx, trial_id, outcome, found.status, found.reason, found.seeds)


class Verdict(BaseModel):
    """What became of a search trial, why, and its mean over seeds when it was confirmed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: str
    reason: str | None = None
    seeds: SeedMean | None = None


def _without_bar(
    ctx: SessionContext, outcome: TrialOutcome, rows: list[TrialRecord]
) -> Verdict | None:
    """The verdict of a result the keep rule's comparison does not decide, or None.

    A trial that breaks a limit is discarded. A baseline that breaks the limits is no bar for
    a trial that respects them: otherwise every admissible trial scoring below it would be
    discarded, and the session would end reporting the violating baseline as its best.
    """
    violation = ctx.objective.violation(outcome.result.metrics)
    if violation:
        return Verdict(status=TrialStatus.discard, reason=violation)
    incumbent, _ = best_so_far(rows)
    if incumbent is None:
        return Verdict(status=TrialStatus.keep, reason="first valid trial")
    if incumbent.kind == TrialKind.baseline:
        base_breaks = violation_of(ctx.objective, incumbent)
        if base_breaks:
            why = f"first trial within the limits; the baseline breaks them ({base_breaks})"
            return Verdict(status=TrialStatus.keep, reason=why)
    return None


def screened(
    ctx: SessionContext, outcome: TrialOutcome, rows: list[TrialRecord] | None = None
) -> keep_rule.Comparison | None:
    """Step 1 of the keep rule (:mod:`.keep_rule`) for a search outcome the comparison
    decides; None for a crash, a limit broken or a trial with no bar to clear.

    ``rows`` are the finished trials when the caller has just read them."""
    if outcome.status is not OutcomeStatus.ok or outcome.result is None:
        return None
    rows = finished_trials(ctx) if rows is None else rows
    if _without_bar(ctx, outcome, rows) is not None:
        return None
    incumbent, _ = best_so_far(rows)
    return keep_rule.screen(
        outcome.result.objective, incumbent_seeds(rows, incumbent), seed_noise(rows)
    )


def verdict(ctx: SessionContext, trial_id: int, outcome: TrialOutcome) -> Verdict:
    """Keep or discard search trial ``trial_id``'s outcome (a crash or timeout stays what it
    is), and why: kept when it respects the limits, passes the screen on its own seed and its
    mean over its confirmation seeds beats the incumbent's by the t-margin (see
    :mod:`.keep_rule`)."""
    if outcome.status is not OutcomeStatus.ok or outcome.result is None:
        return Verdict(status=outcome.status.value)
    rows = finished_trials(ctx)
    free = _without_bar(ctx, outcome, rows)
    if free is not None:
        return free
    first = screened(ctx, outcome, rows)
    if first is None or not first.passed:
        return Verdict(status=TrialStatus.discard, reason=first.describe() if first else None)
    confirms = confirmations(ctx, trial_id)
    failed = [t for t in confirms if t.objective is None]
    if failed:
        why = f"passed the screen, but its confirmation on seed {failed[0].seed} ended " + (
            f"{failed[0].status}: {failed[0].error}"
        )
        return Verdict(status=TrialStatus.discard, reason=why)
    objectives = [outcome.result.objective, *(t.objective for t in confirms)]
    final = keep_rule.confirmed(objectives, first.incumbent, first.noise)
    status = TrialStatus.keep if final.passed else TrialStatus.discard
    return Verdict(status=status, reason=final.describe(), seeds=final.candidate)


def kept_if_ok(outcome: TrialOutcome) -> str:
    """A baseline or test-window row has no verdict to earn: kept when it produced a result."""
    return TrialStatus.keep if outcome.status is OutcomeStatus.ok else outcome.status.value


def finish_outcome(
    ctx: SessionContext,
    trial_id: int,
    outcome: TrialOutcome,
    status: str,
    reason: str | None,
    seeds: SeedMean | None = None,
) -> TrialRecord:
    return record_outcome(ctx.journal, ctx.objective, trial_id, outcome, status, reason, seeds)


def stop_reason(ctx: SessionContext) -> str | None:
    """Why the loop must stop now, or None to go on."""
    if ctx.journal.counted_trials(ctx.session_id) >= ctx.budget:
        return f"trial budget of {ctx.budget} reached"
    if ctx.journal.stop_requested(ctx.session_id):
        return "stop requested"
    if ctx.time_budget_s is not None:
        if ctx.journal.trial_seconds(ctx.session_id) >= ctx.time_budget_s:
            return f"time budget of {ctx.time_budget_s:g} s reached"
    if ctx.max_tokens_total is not None and ctx.proposer.tokens_used() >= ctx.max_tokens_total:
        return f"LLM token budget of {ctx.max_tokens_total} reached"
    return None


def route_next(state: SessionState, runtime: Runtime[SessionContext]) -> str:
    return "finalize" if stop_reason(runtime.context) else "propose"


def route_after_trial(state: SessionState, runtime: Runtime[SessionContext]) -> str:
    """A search trial that passed the keep rule's screen is confirmed on fresh seeds before its
    verdict; any other goes straight to ``record``."""
    first = screened(runtime.context, outcome_of(state))
    return "confirm" if first is not None and first.passed else "record"


def route_after_clip(state: SessionState, runtime: Runtime[SessionContext]) -> str:
    """A stop requested while the proposer was thinking (an LLM can take minutes) ends the
    session before another trial starts. Only the stop flag is checked here: budgets cannot
    have changed since ``route_next``, and tokens already spent on this proposal are worth its
    trial."""
    ctx = runtime.context
    if ctx.journal.stop_requested(ctx.session_id):
        ctx.close_iteration()
        return "finalize"
    return "run_trial"
