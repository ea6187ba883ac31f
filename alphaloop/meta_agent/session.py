"""Starting, resuming and stopping research sessions.

The journal is the checkpoint of record: it holds everything that happened (trials, verdicts,
counts, the incumbent, the stop flag) and what was in flight (a trial's row is journaled before
it runs, a search trial's outcome before its verdict). A resumed session reaps the trials a dead
process left running (``crash``, "interrupted", not counted), then runs the loop from the
top: ``baseline`` runs only the seeds without an outcome, search trials awaiting their verdict
are judged from their held outcome, each interrupted search trial runs again once (same config,
seed and parent), confirmations skip the seeds already confirmed, and ``finalize`` reuses test
rows already written. One worker or many, it is the same loop (:mod:`.loop`).

A session finished by a stop request before its budget was used up can be resumed too: it is
reopened (its previous ``final`` kept in a ``ResumedAfterStop`` event), the search goes on from
the journal's history, and finalize runs again on the best config by then. The search only ever
sees validation results, so the held-out test rows of the first finalize do not steer it; the
best config's test row is reused when it is still the best, and a new best gets its own.
"""

from __future__ import annotations

import logging
import os

from alphaloop.exceptions import AlphaloopError, Conflict, InvalidRequest
from alphaloop.journal import (
    EventKind,
    FinalReport,
    Journal,
    SessionRecord,
    SessionStatus,
    report_json,
)
from alphaloop.knobs import TrialConfig
from alphaloop.market import MarketData, market_of
from alphaloop.meta_agent.events import OnEvent, ignore
from alphaloop.meta_agent.loop import run_loop
from alphaloop.meta_agent.moves import journal_move, loss_journal
from alphaloop.meta_agent.proposers import Proposer, RandomProposer, TPEProposer
from alphaloop.meta_agent.state import SessionContext
from alphaloop.placement import check, moved, place, placed, warm_up
from alphaloop.settings import Settings
from alphaloop.spec import MAX_FOLDS, SessionSpec
from alphaloop.trials import build_folds, max_folds
from alphaloop.validation import resolved_gates
from alphaloop.vocabulary import ProposerName

logger = logging.getLogger(__name__)

RESUMED_AFTER_STOP = EventKind.resumed_after_stop
_LIVE = (SessionStatus.running, SessionStatus.stopping)


def make_proposer(
    name: ProposerName | str, settings: Settings, journal: Journal, session_id: str
) -> Proposer:
    """The proposer a session asked for; ``auto`` is the LLM when one is configured, else TPE."""
    try:
        name = ProposerName(name)
    except ValueError:
        *first, last = ProposerName
        choices = f"{', '.join(first)} or {last}"
        raise AlphaloopError(f"unknown proposer {name!r}; choose {choices}") from None
    if name is ProposerName.auto:
        name = ProposerName.llm if settings.llm_configured else ProposerName.tpe
        logger.info("proposer auto: %s", name)
    if name is ProposerName.tpe:
        return TPEProposer()
    if name is ProposerName.random:
        return RandomProposer()
    from alphaloop.meta_agent.proposers.llm import LLMProposer

    return LLMProposer.from_settings(settings, journal, session_id, fallback=TPEProposer())


def _context(
    journal: Journal,
    session_id: str,
    spec: SessionSpec,
    settings: Settings,
    on_event: OnEvent | None,
) -> SessionContext:
    data = market_of(spec)
    session = journal.sessions.get(session_id)
    if session.data_fingerprint and session.data_fingerprint != data.fingerprint:
        raise AlphaloopError(
            f"the data at {spec.data!r} changed since session {session_id} started "
            f"(fingerprint {data.fingerprint} != {session.data_fingerprint}); "
            "start a new session on the new data"
        )
    proposer = make_proposer(spec.proposer, settings, journal, session_id)
    return SessionContext(
        session_id=session_id,
        spec=spec,
        journal=journal,
        data=data,
        proposer=proposer,
        policy_dir=settings.policies_dir,
        on_event=on_event or ignore,
        folds=build_folds(data, spec.folds or 1),
        settings=settings,
    )


def resolve_folds(folds: int | None, data: MarketData) -> int:
    """The fold count a session runs with: ``folds`` when the data holds them (else
    ``InvalidRequest``, naming the most that fit), or by default as many as the history
    before TEST holds (at most :data:`MAX_FOLDS`; one on data too short for two)."""
    if folds is None:
        return min(max_folds(data), MAX_FOLDS)
    build_folds(data, folds)
    return folds


def create_session(
    spec: SessionSpec, settings: Settings, walk: tuple[str, int, str, str] | None = None
) -> str:
    """Places the session, validates its data and journals it; returns its id (nothing runs
    yet).

    Its trials run where the spec says, or, when it names no place, on the Ray cluster
    ``RAY_ADDRESS`` names (as ``ray.init()`` reads it), else on this machine. ``walk``
    (``walk_id, epoch, first_day, last_day``) makes it that walk's epoch, linked in the
    transaction that journals it.

    Raises:
        InvalidRequest: the data cannot be loaded, or is too short for the folds asked for
            (the message names the most that fit).
        Unavailable: the Ray cluster does not answer in time, or a node of it cannot run the
            trials (nothing is journaled).
    """
    spec = placed(spec, settings)
    # A session created here runs here next: its workers' fork server imports (torch, for
    # PPO) on another core while this process loads the data. The run's own warm-up (the one
    # a resume relies on) then finds the server up.
    warm_up(spec)
    data = market_of(spec)
    try:
        gates = resolved_gates(settings.gates, spec.gates, spec.objective.max_drawdown)
    except ValueError as err:  # the settings' gates: the request's were checked by the model
        raise InvalidRequest(f"ALPHALOOP_GATES: {err}") from None
    spec = spec.model_copy(update={"folds": resolve_folds(spec.folds, data), "gates": gates})
    # The cluster answers, and each node can run the trials, before anything is journaled (the
    # connection stays open for the run that follows in this process).
    check(spec, data, settings)
    with Journal(settings.journal_path) as journal:
        return journal.sessions.create(
            goal=spec.goal,
            mode=spec.mode,
            objective=spec.objective.model_dump(),
            proposer=spec.proposer,
            budget=spec.budget,
            seed=spec.seed,
            data_source=spec.data,
            data_fingerprint=data.fingerprint,
            settings={"spec": spec.model_dump(mode="json"), "data": data.describe()},
            baseline_config=TrialConfig().model_dump(),
            time_budget_s=spec.time_budget_s,
            max_tokens_total=spec.max_tokens_total,
            walk=walk,
        )


def run_session(
    session_id: str,
    settings: Settings,
    on_event: OnEvent | None = None,
    *,
    workers: int | None = None,
    ray_address: str | None = None,
) -> FinalReport | None:
    """Runs (or resumes) a session until a stop rule fires and finalize has run.

    ``workers`` and ``ray_address`` (a Ray cluster, or ``local``: this machine) move the
    session: its trials run there from now on, a ``Moved`` event says from where, and the
    session keeps the new place for later resumes. None: where it ran before. Nothing is
    journaled until the trials' runner is up: a cluster that does not answer, or a node that
    fails its check, leaves the session as it was.

    Returns the session's ``final`` report. Raises :class:`Conflict` when another live
    process owns the session, :class:`~alphaloop.exceptions.Unavailable` when its
    cluster cannot run it.
    """
    with Journal(settings.journal_path) as journal:
        session = journal.sessions.get(session_id)
        reopen = session.continues_after_stop(journal.trials.counted(session_id))
        if session.status == SessionStatus.finished and not reopen:
            return session.final
        _check_runnable(session)
        stored = _stored_spec(session)
        spec = moved(stored, workers, ray_address)
        warm_up(spec)
        ctx = _context(journal, session_id, spec, settings, on_event)
        ctx.runner = place(spec, ctx.data, settings, loss_journal(ctx))
        try:
            if spec != stored:
                journal_move(journal, session, stored, spec)
            resumed = not reopen and ctx.history.rows() != []
            _claim(journal, session, reopen)
            settings.home.mkdir(parents=True, exist_ok=True)
        except BaseException:
            ctx.runner.close(wait=False)
            raise
        _invoke(ctx, resumed)
        return journal.sessions.get(session_id).final


def _check_runnable(session: SessionRecord) -> None:
    """Refuses a manual training run, and a session a live process already runs."""
    if session.manual:
        raise InvalidRequest(
            f"{session.id} is a manual training run ({session.status}), not a research "
            "session: it cannot be resumed; start a new one with `alphaloop train`"
        )
    # Reads give a session whose owner died as interrupted: running or stopping here means a
    # live process has it.
    if session.owner_pid != os.getpid() and session.status in _LIVE:
        raise Conflict(
            f"session {session.id} is being run by process {session.owner_pid}; "
            f"stop it with `alphaloop research stop {session.id}` or wait for it"
        )


def _stored_spec(session: SessionRecord) -> SessionSpec:
    """The spec the session was started with, as the journal reads it.

    Raises:
        InvalidRequest: the session holds a spec this alphaloop refuses (the message says
            which setting), or none.
    """
    if isinstance(session.spec, SessionSpec):
        return session.spec
    why = session.settings.unread or "no research spec is stored with it"
    raise InvalidRequest(
        f"session {session.id} was started with a setting this alphaloop refuses ({why}); "
        "start a new session"
    )


def _claim(journal: Journal, session: SessionRecord, reopen: bool) -> None:
    """Makes this process the session's owner: reopened after a stop (its previous ``final``
    kept in an event), or running (stopping if a stop was requested before its owner died)."""
    if reopen:
        logger.info("session %s: reopened after a stop, with budget left", session.id)
        journal.logs.add_event(
            session.id, RESUMED_AFTER_STOP, {"previous_final": report_json(session.final)}
        )
        journal.sessions.update(
            session.id,
            owner_pid=os.getpid(),
            status=SessionStatus.running,
            final=None,
            finished_at=None,
        )
        return
    # A stop requested before the owner died still holds: finalize is what is left.
    stopping = journal.sessions.stop_requested(session.id)
    status = SessionStatus.stopping if stopping else SessionStatus.running
    journal.sessions.update(session.id, owner_pid=os.getpid(), status=status)


def _invoke(ctx: SessionContext, resumed: bool) -> None:
    """Runs the loop after reaping the trials a dead process left running (journaling the
    resume when this run takes up an earlier one); marks the session interrupted if anything
    stops it, and closes the session's runner either way."""
    journal, session_id = ctx.journal, ctx.session_id
    if ctx.runner is None:
        raise RuntimeError("the session's runner is not open")
    runner = ctx.runner
    try:
        _reap(ctx, resumed)
        run_loop(ctx)
    except BaseException as err:
        ctx.end_flight(err)
        runner.close(wait=False)
        # KeyboardInterrupt included: the row stays resumable, the reason is journaled.
        journal.sessions.update(session_id, status=SessionStatus.interrupted, error=repr(err)[:500])
        raise
    runner.close()


def _reap(ctx: SessionContext, resumed: bool) -> None:
    """Reaps the trials a dead process left running; journals the resume of an earlier run."""
    journal, session_id = ctx.journal, ctx.session_id
    reaped = journal.trials.reap_interrupted(session_id)
    if not resumed:
        return
    awaiting = [row.idx for row, _ in journal.trials.awaiting_verdict(session_id)]
    logger.info(
        "session %s: resuming; %d interrupted trial(s) will run again, %d await a verdict",
        session_id,
        len(reaped),
        len(awaiting),
    )
    journal.logs.add_event(
        session_id,
        EventKind.resumed,
        {"interrupted_trials": [t.idx for t in reaped], "awaiting_verdict": awaiting},
    )


def request_stop(session_id: str, settings: Settings) -> SessionRecord:
    """Asks a running session to stop after its current trial (safe from any process); returns
    the session as it now reads.

    Raises:
        NotFound: no such session.
        Conflict: no live process runs it (the message says how to resume it).
    """
    with Journal(settings.journal_path) as journal:
        session = journal.sessions.get(session_id)
        if session.status not in _LIVE:
            raise Conflict(_not_running(session, journal.trials.counted(session_id)))
        journal.sessions.request_stop(session_id)
        return journal.sessions.get(session_id)


def _not_running(session: SessionRecord, counted: int) -> str:
    what = (
        f"session {session.id} is not running ({session.status}, {counted}/{session.budget} trials)"
    )
    if session.manual:
        return f"{what}; it is a manual training run, which cannot be resumed"
    if session.status == SessionStatus.finished and not session.continues_after_stop(counted):
        return f"{what}; nothing to stop"
    return f"{what}; resume it with `alphaloop research resume {session.id}`"
