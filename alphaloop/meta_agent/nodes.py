"""The research loop's steps (verbs), for one worker or many; the loop that calls them is
:mod:`.loop`, the keep rule's statistics are in :mod:`.keep_rule`, trials in flight in
:mod:`.flight`, ``finalize`` in :mod:`.finalize`.

``propose`` starts search trials until one per worker is in flight, one more with several
workers (:data:`LOOKAHEAD`; trials a killed run interrupted first, each run again once);
``wait_for_oldest`` waits for the oldest trial in flight and holds its outcome in the journal;
``confirm`` re-runs a candidate that passed the keep rule's screen on fresh seeds; ``record``
gives the verdict against the best so far as of its index.

Each step reads the journal, does one thing, and writes its result to the journal before
returning, and every step is idempotent on resume, so the loop needs no checkpoint: a resumed
session starts at ``baseline`` (which runs only the seeds without an outcome) and rebuilds its
flight from the journal.
"""

from __future__ import annotations

import logging
import statistics
from collections import deque
from collections.abc import Iterator

from pydantic import BaseModel, ConfigDict

from alphaloop import telemetry
from alphaloop.exceptions import TrialCrashed
from alphaloop.journal import TrialKind, TrialRecord, TrialStatus, best_trial
from alphaloop.knobs import TrialConfig
from alphaloop.meta_agent import flight, folding, keep_rule
from alphaloop.meta_agent.events import TrialFinished
from alphaloop.meta_agent.keep_rule import SeedMean
from alphaloop.meta_agent.recording import (
    confirmations,
    finished_trials,
    incumbent_seeds,
    proposal_context,
    record_outcome,
    seed_noise,
    trial_view,
    violation_of,
)
from alphaloop.meta_agent.state import InFlight, SessionContext
from alphaloop.meta_agent.tracing import RECORD, TRIAL, OpenSpan
from alphaloop.placement import OutcomeStatus, Pending, TrialOutcome, outcome_of
from alphaloop.trials import TrialResult
from alphaloop.validation import aligned_matrix

__all__ = [
    "TrialVerdict",
    "baseline",
    "confirm",
    "decide",
    "may_start",
    "passed_screen",
    "proposal_context",
    "propose",
    "record",
    "screened",
    "stop_reason",
    "trial_view",
    "verdict",
    "wait_for_oldest",
]

logger = logging.getLogger(__name__)
# With several workers, search trials proposed beyond one per worker. The loop gives verdicts
# in index order, so it proposes the next trial only once the oldest has its verdict; a worker
# that finishes a younger trial meanwhile would idle until then. One trial more in flight keeps
# its first fold queued for that worker. It costs the proposer one result: it proposes without
# the verdict of one more trial still running (each of them shown to it, TPE's constant liar).
LOOKAHEAD = 1


# --- steps ---------------------------------------------------------------------------------


def baseline(ctx: SessionContext) -> None:
    """Runs the default config on the ``noise_seeds`` seeds without an outcome (side by side
    when there are workers), sets the noise floor (the spread of their objectives), and takes
    up what a killed run left: trials awaiting their verdict, and interrupted ones to rerun."""
    run_seeds(ctx, flight.start_baselines(ctx), TrialConfig(), "baseline")
    set_noise_floor(ctx)
    ctx.flight.extend(flight.awaiting_verdict(ctx))
    ctx.reruns.extend(flight.interrupted_without_rerun(ctx))


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
    ctx.journal.sessions.update(ctx.session_id, noise_floor=spread)


def propose(ctx: SessionContext) -> None:
    """Starts search trials while there is room: interrupted ones again first, then new
    proposals. Stops short when a stop is requested while the proposer thinks."""
    while may_start(ctx):
        if ctx.reruns:
            started = flight.rerun(ctx, ctx.reruns.popleft())
        else:
            started = flight.propose_and_start(ctx)
        if started is None:
            break
        ctx.flight.append(started)


def wait_for_oldest(ctx: SessionContext) -> None:
    """Waits for the oldest trial in flight and holds its outcome in the journal, where its
    verdict will read it (a kill from here on judges it on resume instead of rerunning it)."""
    trial = ctx.flight[0]
    outcome = trial.outcome = outcome_of(trial.pending)
    telemetry.set_attributes(trial.trial_span.span, {"alphaloop.outcome": outcome.status.value})
    trial.trial_span.end()
    ctx.journal.trials.hold_outcome(trial.row.id, outcome.model_dump_json())


def passed_screen(ctx: SessionContext) -> bool:
    """Whether the oldest trial in flight is a search trial that passed the keep rule's screen
    and so is confirmed on fresh seeds before its verdict."""
    trial = ctx.flight[0]
    first = screened(ctx, trial.outcome or outcome_of(trial.pending))
    return first is not None and first.passed


def confirm(ctx: SessionContext) -> None:
    """Re-runs the oldest trial in flight, which passed the screen, on the session's
    confirmation seeds side by side, one ``confirm`` row each (not counted against the budget;
    their time counts against the time budget). Seeds whose row already has an outcome are
    skipped, so a resumed session runs only the confirmations a kill cut short."""
    trial = ctx.flight[0]
    candidate = trial.row
    rows = flight.start_confirmations(ctx, candidate)
    why = flight.confirmation_reason(candidate)
    run_seeds(ctx, rows, TrialConfig(**candidate.config), why, trial.iteration)


def run_seeds(
    ctx: SessionContext,
    rows: Iterator[TrialRecord],
    config: TrialConfig,
    why: str,
    iteration: OpenSpan | None = None,
) -> None:
    """Runs ``config`` for each row ``rows`` journals (baseline or confirmation seeds), up to
    ``workers`` at once, and journals each outcome in order (kept when it ran: these rows earn
    no verdict of their own). A row is journaled only when a worker is free for it, so a kill
    interrupts no more seeds than were running. ``iteration``: the span the runs nest under."""
    running: deque[tuple[TrialRecord, Pending, OpenSpan | None]] = deque()

    def finish() -> None:
        row, pending, span = running.popleft()
        outcome = outcome_of(pending)
        if span is not None:
            span.end()
        rec = finish_outcome(ctx, row.id, outcome, kept_if_ok(outcome), why)
        ctx.on_event(TrialFinished(trial=rec))

    for row in rows:
        span = iteration.child(TRIAL, flight.trial_attributes(row)) if iteration else None
        running.append((row, folding.FoldedRun(ctx, row, config), span))
        if len(running) >= ctx.spec.workers:
            finish()
    while running:
        finish()


def record(ctx: SessionContext) -> None:
    """Gives the oldest trial in flight its verdict (keep / discard, or the crash), journals
    it and takes it out of flight."""
    trial: InFlight = ctx.flight[0]
    outcome = trial.outcome or outcome_of(trial.pending)

    def judge() -> TrialRecord:
        with telemetry.span(RECORD, flight.trial_attributes(trial.row)):
            return decide(ctx, trial.row.id, outcome)

    rec = trial.iteration.run(judge)
    ctx.flight.popleft()
    trial.iteration.set({"alphaloop.trial.status": rec.status.value})
    trial.iteration.end()
    ctx.on_event(TrialFinished(trial=rec))


def decide(ctx: SessionContext, trial_id: int, outcome: TrialOutcome) -> TrialRecord:
    """Gives search trial ``trial_id`` its verdict and journals it (see :func:`verdict`)."""
    found = verdict(ctx, trial_id, outcome)
    return finish_outcome(ctx, trial_id, outcome, found.status, found.reason, found.seeds)


# --- verdicts ------------------------------------------------------------------------------


class TrialVerdict(BaseModel):
    """What became of a search trial, why, and its mean over seeds when it was confirmed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: str
    reason: str | None = None
    seeds: SeedMean | None = None


def _without_bar(
    ctx: SessionContext, outcome: TrialOutcome, rows: list[TrialRecord]
) -> TrialVerdict | None:
    """The verdict of a result the keep rule's comparison does not decide, or None.

    A trial that breaks a limit is discarded. A baseline that breaks the limits is no bar for
    a trial that respects them: otherwise every admissible trial scoring below it would be
    discarded, and the session would end reporting the violating baseline as its best.
    """
    violation = ctx.spec.objective.violation(outcome.result.metrics)
    if violation:
        return TrialVerdict(status=TrialStatus.discard, reason=violation)
    best = best_trial(rows)
    if best is None:
        return TrialVerdict(status=TrialStatus.keep, reason="first valid trial")
    if best.trial.kind == TrialKind.baseline:
        base_breaks = violation_of(ctx.spec.objective, best.trial)
        if base_breaks:
            why = f"first trial within the limits; the baseline breaks them ({base_breaks})"
            return TrialVerdict(status=TrialStatus.keep, reason=why)
    return None


def screened(
    ctx: SessionContext, outcome: TrialOutcome, rows: list[TrialRecord] | None = None
) -> keep_rule.Comparison | None:
    """Step 1 of the keep rule (:mod:`.keep_rule`) for a search outcome the comparison
    decides; None for a crash, a limit broken or a trial with no bar to clear.

    ``rows`` are the finished trials when the caller has just read them."""
    if outcome.status is not OutcomeStatus.ok or outcome.result is None or outcome.raced_out:
        return None
    rows = finished_trials(ctx) if rows is None else rows
    if _without_bar(ctx, outcome, rows) is not None:
        return None
    incumbent = best_trial(rows)
    if incumbent is None:  # _without_bar keeps a trial with no bar to clear
        return None
    return keep_rule.screen(
        outcome.result.objective, incumbent_seeds(rows, incumbent.trial), seed_noise(rows)
    )


def verdict(ctx: SessionContext, trial_id: int, outcome: TrialOutcome) -> TrialVerdict:
    """Keep or discard search trial ``trial_id``'s outcome (a crash or timeout stays what it
    is), and why: kept when it ran all its folds, respects the limits, passes the screen on its
    own seed, its mean over its confirmation seeds beats the incumbent's by the t-margin, and
    its daily returns beat the incumbent's on the same days of the folds (see
    :mod:`.keep_rule`)."""
    if outcome.status is not OutcomeStatus.ok or outcome.result is None:
        return TrialVerdict(status=outcome.status.value)
    if outcome.raced_out:
        return TrialVerdict(status=TrialStatus.discard, reason=outcome.raced_out)
    rows = finished_trials(ctx)
    free = _without_bar(ctx, outcome, rows)
    if free is not None:
        return free
    first = screened(ctx, outcome, rows)
    if first is None or not first.passed:
        return TrialVerdict(status=TrialStatus.discard, reason=first.describe() if first else None)
    confirms = confirmations(ctx, trial_id)
    failed = [t for t in confirms if t.objective is None]
    if failed:
        why = f"passed the screen, but its confirmation on seed {failed[0].seed} ended " + (
            f"{failed[0].status}: {failed[0].error}"
        )
        return TrialVerdict(status=TrialStatus.discard, reason=why)
    objectives = [outcome.result.objective, *(t.objective for t in confirms)]
    final = keep_rule.confirmed(objectives, first.incumbent, first.noise)
    if not final.passed:
        return TrialVerdict(
            status=TrialStatus.discard, reason=final.describe(), seeds=final.candidate
        )
    window = window_comparison(ctx, rows, outcome.result, confirms)
    if not window.passed:
        # The deciding test first: a table cuts a long reason at its end.
        why = f"{window.describe()}; {final.describe()}"
        return TrialVerdict(status=TrialStatus.discard, reason=why, seeds=final.candidate)
    why = f"{final.describe()}; {window.describe()}"
    return TrialVerdict(status=TrialStatus.keep, reason=why, seeds=final.candidate)


def window_comparison(
    ctx: SessionContext, rows: list[TrialRecord], result: TrialResult, confirms: list[TrialRecord]
) -> keep_rule.WindowComparison:
    """Step 3 of the keep rule: a candidate's daily returns over the folds (``result``'s, and
    its ``confirms`` seeds', averaged day by day) against the incumbent's seed-mean, on the same
    days."""
    incumbent = best_trial(rows)
    if incumbent is None:  # a verdict compares only a trial that had a bar to clear
        raise RuntimeError("no incumbent to compare the days with")
    theirs = folding.seed_mean_returns(ctx, folding.seed_rows(ctx, rows, incumbent.trial))
    series = [result.daily_returns, *(folding.fold_returns(ctx, t) for t in confirms)]
    return folding.compare_days(ctx, aligned_matrix(series).mean(axis=1), theirs)


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
    return record_outcome(ctx.journal, ctx.spec.objective, trial_id, outcome, status, reason, seeds)


def stop_reason(ctx: SessionContext) -> str | None:
    """Why the loop must stop now, or None to go on."""
    spec, journal, sid = ctx.spec, ctx.journal, ctx.session_id
    if journal.trials.counted(sid) >= spec.budget:
        return f"trial budget of {spec.budget} reached"
    if journal.sessions.stop_requested(sid):
        return "stop requested"
    if spec.time_budget_s is not None and journal.trials.seconds(sid) >= spec.time_budget_s:
        return f"time budget of {spec.time_budget_s:g} s reached"
    if spec.max_tokens_total is not None and ctx.proposer.tokens_used() >= spec.max_tokens_total:
        return f"LLM token budget of {spec.max_tokens_total} reached"
    return None


def in_flight_limit(ctx: SessionContext) -> int:
    """Search trials in flight at once: one per worker, and with several workers
    :data:`LOOKAHEAD` more (see there)."""
    return ctx.spec.workers + LOOKAHEAD if ctx.spec.workers > 1 else 1


def may_start(ctx: SessionContext) -> bool:
    """Whether another search trial may start: there is room in flight
    (:func:`in_flight_limit`), and no stop rule fires with the trials in flight counted
    against the budget."""
    if len(ctx.flight) >= in_flight_limit(ctx):
        return False
    if ctx.journal.trials.counted(ctx.session_id) + len(ctx.flight) >= ctx.spec.budget:
        return False
    return stop_reason(ctx) is None
