"""Research sessions: start, run, resume and stop one.

The loop itself lives in :mod:`alphaloop.meta_agent`; these are the user-level actions over it.
It is imported on first use (the proposers, the evaluator), so reading the journal stays fast.
A run tells its ``on_event`` what happens as typed events (:mod:`alphaloop.meta_agent.events`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from alphaloop.exceptions import AlphaloopError, Conflict, InvalidRequest
from alphaloop.ops._journal import open_journal
from alphaloop.ops.requests import declared_by, first_error
from alphaloop.settings import Settings
from alphaloop.spec import Gates, Objective, SessionSpec, TrialBudget

if TYPE_CHECKING:
    from alphaloop.journal import FinalReport, SessionRecord

    # The events a run tells its on_event, for the front ends that watch one.
    from alphaloop.meta_agent.events import LoopEvent as LoopEvent
    from alphaloop.meta_agent.events import OnEvent
    from alphaloop.ops.goal import Understood


def session_spec(request: BaseModel) -> SessionSpec:
    """The session a research request asks for (what it is stored and resumed with), checked
    whole: each of the request's fields goes where the spec declares it (the spec itself, its
    objective or its trial budget, whose fields left None take the budget's defaults), its
    ``gates`` become the spec's, and a fold count is checked against the data.

    ``request`` is a :class:`~alphaloop.ops.requests.ResearchRequest`, or a model derived from
    it (an API body, a chat tool's arguments): the fields it lacks take the spec's defaults.

    Raises:
        InvalidRequest: a rule across fields (``stop_properly`` without ``truncate_drawdown``,
            say), a gate threshold out of its bounds, or a fold count the data cannot hold
            (the message names the most that fit); each message names what is wrong as the
            request's own errors do.
    """
    try:
        spec = SessionSpec(
            **{
                **declared_by(SessionSpec, request),
                "objective": Objective(**declared_by(Objective, request)),
                "trial_budget": TrialBudget(**declared_by(TrialBudget, request, given=True)),
                "gates": Gates(**getattr(request, "gates", {})),
            }
        )
    except ValidationError as err:
        raise InvalidRequest(first_error(err)) from None
    check_folds(spec)
    return spec


def check_folds(spec: SessionSpec) -> None:
    """Refuses a fold count the data cannot hold, naming the most that fit (the data is loaded
    only when a count was asked for: by default a session takes as many as fit).

    Raises:
        InvalidRequest: too many folds for the history before TEST, or data that cannot be
            loaded.
    """
    if spec.folds is not None:
        from alphaloop.market import market_of
        from alphaloop.meta_agent.session import resolve_folds

        resolve_folds(spec.folds, market_of(spec))


def check_proposer(proposer: str, settings: Settings) -> None:
    """Refuses the LLM proposer when no endpoint is configured, naming the settings to set.

    Raises:
        InvalidRequest: ``proposer`` is ``llm`` and the endpoint's settings are missing.
    """
    if proposer == "llm" and not settings.llm_configured:
        missing = [
            name
            for name, value in (
                ("ALPHALOOP_LLM_BASE_URL", settings.llm_base_url),
                ("ALPHALOOP_LLM_MODEL", settings.llm_model),
            )
            if not value
        ]
        raise InvalidRequest(
            f"the llm proposer needs an endpoint: set {' and '.join(missing)} (or choose "
            "proposer auto, tpe or random)"
        )


def start_session(
    spec: SessionSpec, settings: Settings, understood: Understood | None = None
) -> str:
    """Creates a session (its baseline runs first when it is run) and returns its id;
    ``understood`` (what :func:`alphaloop.ops.goal.understand_goal` read of its goal) is
    journaled with it, as a ``GoalRead`` event.

    Its trials run where the spec says, or, when it names no place, on the Ray cluster
    ``RAY_ADDRESS`` names (as ``ray.init()`` reads it), else on this machine. A cluster is
    reached and checked before the session is journaled.

    Raises:
        InvalidRequest: the data cannot be loaded.
        InvalidRequest: the spec asks for the LLM proposer and no endpoint is configured.
        Unavailable: the Ray cluster does not answer in time, or a node of it cannot
            run the trials (nothing is journaled).
    """
    from alphaloop.meta_agent.session import create_session

    session_id = create_session(spec, settings)
    if understood is not None:
        from alphaloop.journal import EventKind

        with open_journal(settings) as journal:
            journal.logs.add_event(session_id, EventKind.goal_read, understood.model_dump())
    return session_id


def folds_note(folds: int | None) -> str | None:
    """A warning for a session asked to score on one fold: window noise is then not measured."""
    if folds != 1:
        return None
    return (
        "--folds 1 scores trials on VALIDATION alone: window noise (how a config fares in other "
        "years) is not measured, and the keep rule's paired test sees only those days"
    )


def noise_seeds_note(noise_seeds: int) -> str | None:
    """A warning for a number of noise seeds that leaves the keep rule little power (2), or
    None. One seed is refused by :class:`SessionSpec` itself."""
    from alphaloop.meta_agent.keep_rule import seed_count_note

    return seed_count_note(noise_seeds)


def run_session(
    session_id: str,
    settings: Settings,
    on_event: OnEvent | None = None,
    *,
    workers: int | None = None,
    ray_address: str | None = None,
) -> FinalReport | None:
    """Runs (or continues) a session to its end and returns its final report.

    Args:
        session_id: a created session.
        settings: the alphaloop home and the endpoint.
        on_event: told each ``TrialStarted``, ``TrialFinished`` and the ``Finalized`` report.
        workers: how many trials run at once from now on (None: as before).
        ray_address: the Ray cluster its trials run on from now on, or ``local`` (a resume's
            move; None: where they ran before).

    Raises:
        Conflict: another live process is running it.
        Unavailable: its Ray cluster does not answer, or cannot run its trials
            (before anything is journaled), or lost one trial's task too often (it stops,
            resumable).
    """
    from alphaloop.meta_agent.session import run_session as run

    return run(session_id, settings, on_event, workers=workers, ray_address=ray_address)


def run_research(
    spec: SessionSpec,
    settings: Settings,
    on_event: OnEvent | None = None,
    understood: Understood | None = None,
) -> str:
    """Starts a session (journaling ``understood`` with it) and runs it to its end; returns its
    id.

    ``on_event`` is also told ``SessionCreated`` before the first trial.

    Raises:
        AlphaloopError: the session stopped with an error (it can be resumed).
    """
    from alphaloop.meta_agent.events import SessionCreated

    session_id = start_session(spec, settings, understood)
    if on_event is not None:
        on_event(SessionCreated(session_id=session_id))
    try:
        run_session(session_id, settings, on_event)
    except AlphaloopError as err:
        raise AlphaloopError(
            f"session {session_id} stopped with an error: {err}; resume it "
            f"with `alphaloop research resume {session_id}`"
        ) from err
    return session_id


def check_resume(session_id: str, settings: Settings) -> None:
    """Checks a session can be resumed: it has trials left to run.

    Raises:
        NoJournal, NotFound: nothing to resume.
        Conflict: a live process runs it (stop it or wait).
        Conflict: it finished with its budget used up; nothing to resume.
    """
    with open_journal(settings) as j:
        s, counted = j.sessions.get(session_id), j.trials.counted(session_id)
    if s.status in ("running", "stopping"):
        raise Conflict(
            f"session {session_id} is {s.status} in process {s.owner_pid}; stop it with "
            f"`alphaloop research stop {session_id}` or wait for it to end"
        )
    if s.status == "finished" and not s.continues_after_stop(counted):
        reason = s.final.stop_reason if s.final else "finished"
        raise Conflict(
            f"session {session_id} already finished ({reason}); nothing to resume; "
            f"`alphaloop journal {session_id}` shows its result"
        )


def stop_session(session_id: str, settings: Settings) -> SessionRecord:
    """Asks a running session to stop after its current trial (finalize still runs); returns
    the session as it now reads.

    Raises:
        NoJournal, NotFound: no such session.
        Conflict: no live process runs it.
    """
    from alphaloop.meta_agent.session import request_stop

    with open_journal(settings) as j:
        j.sessions.get(session_id)
    return request_stop(session_id, settings)
