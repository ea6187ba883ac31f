"""Trials in flight: journaling a trial's row, handing it to the session's runner, and taking
its outcome back.

A row is journaled before its trial runs, so a kill never loses a trial that started: its row
stays ``running`` and is reaped on resume (an interrupted search trial runs again once, as
proposed; baseline and confirmation seeds without an outcome are simply run). A search trial's
outcome is held in the journal before its verdict (``Journal.trials.hold_outcome``), so a kill
between the two leaves it to be judged, not run again.

With one worker a trial runs in the loop's own process when its outcome is asked for; with more,
up to ``workers`` search trials run at once in worker processes or on Ray (placement),
one more is queued for the first worker free (``nodes.LOOKAHEAD``), and the loop waits for the
oldest. Waiting for the oldest (rather than any) buys determinism: what each proposal saw, and
so every verdict, does not depend on which worker finished first. It costs little idle time:
while the loop waits, a later trial's other folds start as soon as its first fold is in (see
:mod:`.folding`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from alphaloop import telemetry
from alphaloop.journal import EventKind, TrialKind, TrialRecord, best_trial
from alphaloop.knobs import BoundsClip, TrialConfig, clip, config_hash
from alphaloop.meta_agent.events import Proposal, TrialStarted
from alphaloop.meta_agent.folding import FoldedRun
from alphaloop.meta_agent.proposers import ProposalContext, Proposer, TPEProposer
from alphaloop.meta_agent.recording import (
    confirmations,
    finished_trials,
    proposal_context,
)
from alphaloop.meta_agent.state import InFlight, SessionContext
from alphaloop.meta_agent.tracing import ITERATION, PROPOSE, TRIAL, OpenSpan, iteration_attributes
from alphaloop.placement import Pending, TrialJob, TrialOutcome
from alphaloop.trials import Window

logger = logging.getLogger(__name__)
DUPLICATE_RETRIES = 2  # without settings (tests): as ALPHALOOP_LLM_DUPLICATE_RETRIES's default
FILL_DRAWS = 3  # TPE draws tried to fill a slot before a duplicate runs anyway


def job(
    ctx: SessionContext,
    row: TrialRecord,
    config: TrialConfig,
    *,
    window: Window = "validation",
    policy_path: str | None = None,
) -> TrialJob:
    return TrialJob(
        mode=ctx.spec.mode,
        config=config,
        budget=ctx.spec.trial_budget,
        seed=row.seed,
        metric=ctx.spec.objective.metric,
        policy_dir=str(ctx.session_policy_dir),
        idx=row.idx,
        kind=row.kind,
        window=window,
        policy_path=policy_path,
    )


def submit(ctx: SessionContext, row: TrialRecord, config: TrialConfig, **where: str) -> Pending:
    """Hands ``row``'s trial to the session's runner (``where``: the window and a saved policy,
    as :func:`job` takes them)."""
    if ctx.runner is None:
        raise RuntimeError("the session's runner is not open")
    return ctx.runner.submit(job(ctx, row, config, **where))


def trial_attributes(row: TrialRecord) -> dict[str, object]:
    return {
        "alphaloop.trial.idx": row.idx,
        "alphaloop.trial.kind": row.kind,
        "alphaloop.seed": row.seed,
    }


# --- baseline and confirmation seeds -------------------------------------------------------


def start_baselines(ctx: SessionContext) -> Iterator[TrialRecord]:
    """Journals (and yields, one at a time) a baseline row for each of the ``noise_seeds``
    seeds that has no outcome yet: a resumed session runs only what a kill cut short."""
    done = {t.seed for t in finished_trials(ctx, (TrialKind.baseline,))}
    config = TrialConfig()
    for seed in range(ctx.spec.seed, ctx.spec.seed + ctx.spec.noise_seeds):
        if seed in done:
            continue
        row = ctx.journal.trials.start(
            ctx.session_id,
            kind=TrialKind.baseline,
            config=config.model_dump(),
            config_hash=config_hash(config),
            delta={"changes": {}, "rationale": "baseline"},
            parent_id=None,
            seed=seed,
            rationale="baseline: default config",
            proposer="baseline",
            ran_on=ctx.where,
        )
        ctx.on_event(TrialStarted(idx=row.idx, kind=TrialKind.baseline))
        yield row


def confirmation_reason(candidate: TrialRecord) -> str:
    return f"confirmation of trial {candidate.idx} on a fresh seed"


def start_confirmations(ctx: SessionContext, candidate: TrialRecord) -> Iterator[TrialRecord]:
    """Journals (and yields, one at a time) a ``confirm`` row for each of the candidate's fresh
    seeds that has no outcome yet: a resumed session runs only what a kill cut short."""
    done = {t.seed for t in confirmations(ctx, candidate.id)}
    why = confirmation_reason(candidate)
    for seed in ctx.confirm_seed_range:
        if seed in done:
            continue
        row = ctx.journal.trials.start(
            ctx.session_id,
            kind=TrialKind.confirm,
            config=candidate.config,
            config_hash=candidate.config_hash,
            delta={"changes": {}, "rationale": why},
            parent_id=candidate.id,
            seed=seed,
            rationale=why,
            proposer="confirm",
            ran_on=ctx.where,
        )
        ctx.on_event(TrialStarted(idx=row.idx, kind=TrialKind.confirm))
        yield row


# --- search trials -------------------------------------------------------------------------


def interrupted_without_rerun(ctx: SessionContext) -> list[TrialRecord]:
    """Search trials a killed run interrupted that have not been run again, in index order."""
    rows = ctx.journal.trials.of_session(ctx.session_id, kind=TrialKind.search, series=False)
    rerun = {(t.delta or {}).get("rerun_of") for t in rows}
    return [t for t in rows if t.interrupted and t.id not in rerun]


def propose_and_start(ctx: SessionContext) -> InFlight | None:
    """Asks the proposer for an edit of the best config so far (showing it the trials in
    flight, so it proposes something else), clips it and starts it, never a config the session
    already ran (see :func:`distinct_proposal`); None when a stop was requested while the
    proposer was thinking (an LLM can take minutes)."""
    iteration = OpenSpan(ITERATION, iteration_attributes(ctx.session_id, ctx.spec.mode))
    rows = finished_trials(ctx)
    context = proposal_context(ctx, rows, pending=[f.row for f in ctx.flight])

    best = best_trial(rows)
    base = TrialConfig(**best.trial.config) if best else TrialConfig()
    carried = _carried(ctx, base)
    if carried is not None:
        proposal, config, clips = carried
    else:
        proposal, config, clips = iteration.run(lambda: distinct_proposal(ctx, context, base))
    if ctx.journal.sessions.stop_requested(ctx.session_id):
        iteration.end()
        return None
    delta = {"changes": proposal.changes, "rationale": proposal.rationale}
    parent = best.trial.id if best else None
    return _start(ctx, iteration, proposal, config, clips, parent, delta)


CARRIED = "carried"  # the proposer name of a start config's trial


def _carried(
    ctx: SessionContext, base: TrialConfig
) -> tuple[Proposal, TrialConfig, list[BoundsClip]] | None:
    """The first of the session's start configs it has not run, as an edit of ``base``, or
    None when every one has run (or is in flight)."""
    for start in (TrialConfig(**c) for c in ctx.spec.start_configs):
        if ctx.journal.trials.twin(ctx.session_id, config_hash(start)) is not None:
            continue
        changes = {k: float(v) for k, v in start.model_dump().items() if getattr(base, k) != v}
        proposal = Proposal(
            changes=changes,
            rationale="a start config: kept by an earlier epoch of this walk",
            proposer=CARRIED,
        )
        config, clips = clip(
            base, proposal.delta(), ctx.data.n_assets, ctx.spec.trial_budget.n_envs
        )
        if ctx.journal.trials.twin(ctx.session_id, config_hash(config)) is None:
            return proposal, config, clips
    return None


def _ask(proposer: Proposer, context: ProposalContext) -> Proposal:
    with telemetry.span(PROPOSE, {"alphaloop.proposer": proposer.name}):
        delta = proposer.propose(context)
    return Proposal.of(delta, proposer.last_name, getattr(proposer, "last_prompt", None))


def distinct_proposal(
    ctx: SessionContext, context: ProposalContext, base: TrialConfig
) -> tuple[Proposal, TrialConfig, list[BoundsClip]]:
    """A proposal whose clipped config the session has not run (nor has in flight).

    A duplicate is not run: the proposer is told which trial it clips to and asked again, up
    to ``llm_duplicate_retries`` times; then TPE fills the slot (its proposer is journaled as
    ``tpe (duplicate fill)``). Duplicates never become trial rows, so they cost no budget; each
    is a ``DuplicateProposal`` event. Should TPE's draws clip to run configs too (a tiny edit
    space), the last one runs rather than the session stalling.
    """
    retries = ctx.settings.llm_duplicate_retries if ctx.settings else DUPLICATE_RETRIES
    proposer, notes = ctx.proposer, []
    for attempt in range(retries + 1 + FILL_DRAWS):
        filling = attempt > retries
        if filling and attempt == retries + 1:
            proposer = getattr(ctx.proposer, "fallback", None) or TPEProposer()
        proposal = _ask(proposer, context.model_copy(update={"rejected": list(notes)}))
        if filling:
            proposal = proposal.model_copy(update={"proposer": f"{proposer.name} (duplicate fill)"})
        config, clips = clip(
            base, proposal.delta(), ctx.data.n_assets, ctx.spec.trial_budget.n_envs
        )
        twin = ctx.journal.trials.twin(ctx.session_id, config_hash(config))
        if twin is None:
            return proposal, config, clips
        edit = ", ".join(f"{k}={v:g}" for k, v in proposal.changes.items())
        note = f"{edit} clips to trial {twin}'s config, which already ran"
        notes.append(note)
        logger.info("duplicate proposal by %s: %s", proposal.proposer, note)
        ctx.journal.logs.add_event(
            ctx.session_id,
            EventKind.duplicate_proposal,
            {"proposer": proposal.proposer, "changes": proposal.changes, "clips_to": twin},
        )
    logger.warning("every draw clipped to a config already run; running the last one")
    return proposal, config, clips


def rerun(ctx: SessionContext, cut: TrialRecord) -> InFlight:
    """Runs an interrupted search trial again: its config, seed, parent, proposal and clips
    (its new row's ``delta["rerun_of"]`` names the row it reruns)."""
    attrs = {**iteration_attributes(ctx.session_id, ctx.spec.mode), "alphaloop.rerun_of": cut.idx}
    iteration = OpenSpan(ITERATION, attrs)
    changes = dict((cut.delta or {}).get("changes", {}))
    proposal = Proposal(
        changes=changes,
        rationale=cut.rationale or "",
        proposer=cut.proposer or "",
        prompt=ctx.journal.trials.get(cut.id).prompt,  # a series: the listing leaves it out
    )
    clips = [c.to_bounds_clip() for c in ctx.journal.logs.clips(cut.id)]
    delta = {"changes": changes, "rationale": cut.rationale or "", "rerun_of": cut.id}
    config = TrialConfig(**cut.config)
    return _start(ctx, iteration, proposal, config, clips, cut.parent_id, delta, cut.seed)


def _start(
    ctx: SessionContext,
    iteration: OpenSpan,
    proposal: Proposal,
    config: TrialConfig,
    clips: list[BoundsClip],
    parent_id: int | None,
    delta: dict,
    seed: int | None = None,
) -> InFlight:
    row = ctx.journal.trials.start(
        ctx.session_id,
        kind=TrialKind.search,
        config=config.model_dump(),
        config_hash=config_hash(config),
        delta=delta,
        parent_id=parent_id,
        seed=ctx.spec.seed if seed is None else seed,
        rationale=proposal.rationale,
        proposer=proposal.proposer,
        ran_on=ctx.where,
        prompt=proposal.prompt,
    )
    if clips:
        ctx.journal.logs.add_clips(row.id, clips)
    iteration.set({"alphaloop.trial.idx": row.idx})
    ctx.on_event(
        TrialStarted(idx=row.idx, kind=TrialKind.search, proposal=proposal, clips=tuple(clips))
    )
    trial_span = iteration.child(TRIAL, trial_attributes(row))
    return InFlight(row, FoldedRun(ctx, row, config, race=True), iteration, trial_span)


class _Held:
    """The outcome a killed run held in the journal for a trial awaiting its verdict."""

    def __init__(self, outcome: TrialOutcome) -> None:
        self._outcome = outcome

    def result(self) -> TrialOutcome:
        return self._outcome


def awaiting_verdict(ctx: SessionContext) -> list[InFlight]:
    """The search trials a killed run left finished but unjudged, as trials in flight whose
    outcome is known (oldest first)."""
    held = []
    for row, text in ctx.journal.trials.awaiting_verdict(ctx.session_id):
        attrs = iteration_attributes(ctx.session_id, ctx.spec.mode, row.idx)
        iteration = OpenSpan(ITERATION, attrs)
        trial_span = iteration.child(TRIAL, trial_attributes(row))
        pending = _Held(TrialOutcome.model_validate_json(text))
        held.append(InFlight(row, pending, iteration, trial_span))
    return held
