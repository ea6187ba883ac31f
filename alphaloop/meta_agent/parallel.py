"""The research loop with several trials in flight (``workers > 1``, or a Ray cluster).

The driver (this process) is the journal's one writer; trials run in worker processes or as
Ray tasks (:mod:`.executors`). The loop is the graph's, pipelined:

1. the baseline seeds run side by side, then the noise floor is set;
2. trials a killed run left ``running`` are reaped and each is run again once, first (a
   rerun's ``delta["rerun_of"]`` names the row it reruns);
3. up to ``workers`` search trials are in flight. A proposal is journaled (its row, index and
   prompt) the moment it is made, so indices follow proposal order, and the proposer is shown
   the trials in flight (TPE's constant liar, the LLM's prompt) so it proposes something else;
4. the verdicts are given in index order: the driver waits for the oldest trial in flight,
   confirms it on fresh seeds if it passes the keep rule's screen, records it against the
   best so far as of its index, and only then proposes the next trial.

Waiting for the oldest trial (rather than any) costs a little idle time when a later trial
finishes first, and buys determinism: what each proposal saw, and so every verdict, does not
depend on which worker finished first. With a seeded proposer the same seed gives the same
session whatever the timing.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass

from langgraph.runtime import Runtime

from alphaloop import telemetry
from alphaloop.journal import TrialKind, TrialRecord
from alphaloop.knobs import BoundsClip, TrialConfig, clip, config_hash
from alphaloop.meta_agent import finalize, nodes
from alphaloop.meta_agent.executors import Pending, TrialJob, TrialRunner, open_runner
from alphaloop.meta_agent.recording import best_so_far, finished_trials
from alphaloop.meta_agent.state import LoopEvent, Proposal, SessionContext, TrialOutcome
from alphaloop.meta_agent.tracing import (
    ITERATION,
    PROPOSE,
    RECORD,
    TRIAL,
    OpenSpan,
    iteration_attributes,
)

logger = logging.getLogger(__name__)


@dataclass
class InFlight:
    """A search trial running elsewhere, awaiting its verdict."""

    row: TrialRecord
    pending: Pending
    iteration: OpenSpan
    trial_span: OpenSpan


def run_parallel(ctx: SessionContext) -> None:
    """Runs a session's loop with ``ctx.workers`` trials in flight, then finalizes it.

    Call it after reaping the trials a dead process left running (see ``session``)."""
    runner = open_runner(ctx.data, ctx.workers, ctx.ray_address)
    flight: deque[InFlight] = deque()
    try:
        _baseline(ctx, runner)
        reruns = deque(interrupted_without_rerun(ctx))
        while True:
            _fill(ctx, runner, flight, reruns)
            if not flight:
                break
            _settle(ctx, runner, flight.popleft())
    except BaseException as err:
        for trial in flight:
            trial.trial_span.end(err)
            trial.iteration.end(err)
        runner.close(wait=False)
        raise
    runner.close()
    finalize.finalize({"session_id": ctx.session_id}, Runtime(context=ctx))


def _job(ctx: SessionContext, row: TrialRecord, config: TrialConfig) -> TrialJob:
    return TrialJob(
        mode=ctx.mode,
        config=config,
        budget=ctx.trial_budget,
        seed=row.seed,
        metric=ctx.objective.metric,
        policy_dir=str(ctx.session_policy_dir),
        idx=row.idx,
        kind=row.kind,
    )


def _outcome(pending: Pending) -> TrialOutcome:
    """What a trial produced; a worker that died (or a Ray task lost) is a crash."""
    try:
        return pending.result()
    except Exception as err:
        return TrialOutcome.failed(err)


# --- baseline ------------------------------------------------------------------------------


def _baseline(ctx: SessionContext, runner: TrialRunner) -> None:
    """The baseline seeds not yet journaled, side by side, recorded in seed order."""
    config = TrialConfig()
    started = [(row, runner.submit(_job(ctx, row, config))) for row in nodes.start_baselines(ctx)]
    for row, pending in started:
        nodes.finish_baseline(ctx, row, _outcome(pending))
    nodes.set_noise_floor(ctx)


# --- proposing and starting ----------------------------------------------------------------


def interrupted_without_rerun(ctx: SessionContext) -> list[TrialRecord]:
    """Search trials a killed run interrupted that have not been run again, in index order."""
    rows = ctx.journal.trials(ctx.session_id, kind=TrialKind.search, series=False)
    rerun = {(t.delta or {}).get("rerun_of") for t in rows}
    return [t for t in rows if t.interrupted and t.id not in rerun]


def _may_start(ctx: SessionContext, flight: deque[InFlight]) -> bool:
    """Whether another trial may start: the budget counts the trials in flight too."""
    if ctx.journal.counted_trials(ctx.session_id) + len(flight) >= ctx.budget:
        return False
    return nodes.stop_reason(ctx) is None


def _fill(
    ctx: SessionContext, runner: TrialRunner, flight: deque[InFlight], reruns: deque[TrialRecord]
) -> None:
    while len(flight) < runner.workers and _may_start(ctx, flight):
        started = _rerun(ctx, runner, reruns.popleft()) if reruns else _propose(ctx, runner, flight)
        if started is None:  # a stop came while the proposer was thinking
            return
        flight.append(started)


def _propose(ctx: SessionContext, runner: TrialRunner, flight: deque[InFlight]) -> InFlight | None:
    iteration = OpenSpan(ITERATION, iteration_attributes(ctx.session_id, ctx.mode))
    rows = finished_trials(ctx)
    context = nodes.proposal_context(ctx, rows, pending=[f.row for f in flight])

    def propose() -> Proposal:
        with telemetry.span(PROPOSE, {"alphaloop.proposer": ctx.proposer.name}):
            delta = ctx.proposer.propose(context)
        prompt = getattr(ctx.proposer, "last_prompt", None)
        return Proposal.of(delta, ctx.proposer.last_name, prompt)

    proposal = iteration.run(propose)
    if ctx.journal.stop_requested(ctx.session_id):
        iteration.end()
        return None
    best, _ = best_so_far(rows)
    parent = best.id if best else None
    base = TrialConfig(**best.config) if best else TrialConfig()
    config, clips = clip(base, proposal.delta(), ctx.data.n_assets, ctx.trial_budget.n_envs)
    delta = {"changes": proposal.changes, "rationale": proposal.rationale}
    return _start(ctx, runner, iteration, proposal, config, clips, parent, delta)


def _rerun(ctx: SessionContext, runner: TrialRunner, cut: TrialRecord) -> InFlight:
    """Runs an interrupted trial again: its config, seed, parent, proposal and clips."""
    attrs = {**iteration_attributes(ctx.session_id, ctx.mode), "alphaloop.rerun_of": cut.idx}
    iteration = OpenSpan(ITERATION, attrs)
    changes = dict((cut.delta or {}).get("changes", {}))
    proposal = Proposal(
        changes=changes,
        rationale=cut.rationale or "",
        proposer=cut.proposer or "",
        prompt=ctx.journal.get_trial(cut.id).prompt,  # a series: the listing leaves it out
    )
    clips = [
        c.to_bounds_clip()
        for c in ctx.journal.session_clips(ctx.session_id)
        if c.trial_id == cut.id
    ]
    delta = {"changes": changes, "rationale": cut.rationale or "", "rerun_of": cut.id}
    config = TrialConfig(**cut.config)
    return _start(ctx, runner, iteration, proposal, config, clips, cut.parent_id, delta, cut.seed)


def _start(
    ctx: SessionContext,
    runner: TrialRunner,
    iteration: OpenSpan,
    proposal: Proposal,
    config: TrialConfig,
    clips: list[BoundsClip],
    parent_id: int | None,
    delta: dict,
    seed: int | None = None,
) -> InFlight:
    row = ctx.journal.start_trial(
        ctx.session_id,
        kind=TrialKind.search,
        config=config.model_dump(),
        config_hash=config_hash(config),
        delta=delta,
        parent_id=parent_id,
        seed=ctx.seed if seed is None else seed,
        rationale=proposal.rationale,
        proposer=proposal.proposer,
        prompt=proposal.prompt,
    )
    if clips:
        ctx.journal.add_clips(row.id, clips)
    iteration.set({"alphaloop.trial.idx": row.idx})
    ctx.on_event(
        LoopEvent.trial_started,
        {"idx": row.idx, "kind": "search", "proposal": proposal.model_dump(), "clips": clips},
    )
    trial_span = iteration.child(TRIAL, nodes.trial_attributes(row))
    return InFlight(row, runner.submit(_job(ctx, row, config)), iteration, trial_span)


# --- verdicts, in index order --------------------------------------------------------------


def _settle(ctx: SessionContext, runner: TrialRunner, trial: InFlight) -> None:
    """Waits for the oldest trial in flight, confirms it if it passes the screen, and records
    its verdict against the best so far as of its index."""
    outcome = _outcome(trial.pending)
    telemetry.set_attributes(trial.trial_span.span, {"alphaloop.outcome": outcome.status.value})
    trial.trial_span.end()
    first = nodes.screened(ctx, outcome)
    if first is not None and first.passed:
        _confirm(ctx, runner, trial)

    def record() -> TrialRecord:
        with telemetry.span(RECORD, nodes.trial_attributes(trial.row)):
            return nodes.decide(ctx, trial.row.id, outcome)

    rec = trial.iteration.run(record)
    trial.iteration.set({"alphaloop.trial.status": rec.status.value})
    trial.iteration.end()
    ctx.on_event(LoopEvent.trial_finished, {"trial": rec})


def _confirm(ctx: SessionContext, runner: TrialRunner, trial: InFlight) -> None:
    """The candidate's confirmation seeds, side by side (as the graph's ``confirm`` node)."""
    candidate = trial.row
    config = TrialConfig(**candidate.config)
    started: list[tuple[TrialRecord, Pending, OpenSpan]] = []
    for row in nodes.start_confirmations(ctx, candidate):
        span = trial.iteration.child(TRIAL, nodes.trial_attributes(row))
        started.append((row, runner.submit(_job(ctx, row, config)), span))
    for row, pending, span in started:
        outcome = _outcome(pending)
        span.end()
        nodes.finish_confirmation(ctx, candidate, row, outcome)
