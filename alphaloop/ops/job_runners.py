"""The worker that runs a job, and what each kind of job does: the operations the command line
calls, with the job's fields.

``python -m alphaloop.ops.job_runners ID`` (started by :func:`alphaloop.ops.jobs.start_job`)
runs :func:`execute_job`: it claims the queued row, runs the job and journals its typed result
or its error. Each runner takes its job, the settings and ``link`` (told the session the job
runs, as soon as that session is journaled) and returns the job's typed result; an error is
raised, and :func:`execute_job` journals it. The operations are imported on first use: a worker
loads only what its kind of job needs. The queue (:mod:`alphaloop.ops.jobs`) never imports
this module.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from alphaloop.exceptions import AlphaloopError
from alphaloop.journal import Journal
from alphaloop.ops.jobs import (
    JOB,
    DpoJob,
    DpoResult,
    Job,
    JobView,
    PmTickResult,
    ResumeJob,
    ScheduleJob,
    ScheduleResult,
    SessionResult,
    TrainResult,
    ValidateResult,
    journal_failure,
)
from alphaloop.ops.walk_jobs import WalkResult, WalkResumeJob
from alphaloop.settings import Settings

if TYPE_CHECKING:
    from alphaloop.validation.gates import Gates

Link = Callable[[str], None]


def execute_job(settings: Settings, job_id: int) -> JobView:
    """Runs a queued job in this process: claims it, runs it, journals its result or error.

    An error of the job's work is journaled, not raised (the returned view holds it).

    Raises:
        NotFound: no such job.
        AlphaloopError: the job is not queued (another worker has it, or it has ended).
    """
    # The journal is opened for each write, not held across the work: the operations open it
    # themselves, as they do under the command line.
    with Journal(settings.journal_path) as journal:
        row = journal.jobs.claim(job_id, os.getpid())
    try:
        job = JOB.validate_python(row.request)
        result = run(job, settings, lambda session_id: _link(settings, job_id, session_id))
    except Exception as err:
        with Journal(settings.journal_path) as journal:
            return JobView.from_record(journal_failure(journal, job_id, err))
    with Journal(settings.journal_path) as journal:
        return JobView.from_record(journal.jobs.finish(job_id, result.model_dump(mode="json")))


def _link(settings: Settings, job_id: int, session_id: str) -> None:
    """Tells the journal which session the job runs, as soon as that session is journaled."""
    with Journal(settings.journal_path) as journal:
        journal.jobs.link_session(job_id, session_id)


def run(job: Job, settings: Settings, link: Link) -> BaseModel:
    """Runs ``job`` in this process and returns its typed result."""
    return _RUNNERS[job.kind](job, settings, link)


def _research(job: Any, settings: Settings, link: Link) -> SessionResult:
    from alphaloop.ops.requests import FILES, ResearchRequest
    from alphaloop.ops.research import check_proposer, session_spec, start_session

    check_proposer(job.proposer, settings)  # the setting may have changed since it was queued
    request = ResearchRequest.model_validate(
        job.model_dump(exclude={"kind", "understood"}), context={FILES: True}
    )
    session_id = start_session(session_spec(request), settings, job.understood)
    link(session_id)
    return _run_session("research", session_id, settings)


def _resume(job: ResumeJob, settings: Settings, link: Link) -> SessionResult:
    from alphaloop.ops.research import check_resume

    check_resume(job.session_id, settings)
    link(job.session_id)
    return _run_session(
        "resume", job.session_id, settings, workers=job.workers, ray_address=job.ray_address
    )


def _run_session(
    kind: Literal["research", "resume"], sid: str, settings: Settings, **move: int | str | None
) -> SessionResult:
    """Runs session ``sid`` to its end (``move``: a resume's workers and Ray address)."""
    from alphaloop.ops.research import run_session
    from alphaloop.ops.sessions import get_session

    final = run_session(sid, settings, **move)
    session = get_session(settings, sid)
    return SessionResult(
        kind=kind,
        session_id=sid,
        status=session.status.value,
        stop_reason=final.stop_reason if final else None,
    )


def _train(job: Any, settings: Settings, link: Link) -> TrainResult:
    from alphaloop.ops.requests import FILES, TrainRequest
    from alphaloop.ops.train import manual_spec, train

    request = TrainRequest.model_validate(job.model_dump(exclude={"kind"}), context={FILES: True})
    run = train(
        manual_spec(request), settings, on_start=lambda trial, _planned: link(trial.session_id)
    )
    return TrainResult(
        session_id=run.session.id,
        trial_id=run.trial.id,
        objective=run.trial.objective,
        policy_id=run.session.final.policy_id if run.session.final else None,
    )


def _dpo(job: DpoJob, settings: Settings, link: Link) -> DpoResult:
    from pathlib import Path

    from alphaloop.ops.dpo import DpoOptions, train_dpo

    options = DpoOptions(lora=job.lora, max_steps=job.max_steps, max_length=job.max_length)
    run = train_dpo(settings, Path(job.model_dir), Path(job.out_dir), options)
    return DpoResult(dpo_run_id=run.id, status=run.status.value)


def _pm_tick(job: Any, settings: Settings, link: Link) -> PmTickResult:
    from alphaloop.ops.pm import pm_tick

    day = None if job.date is None else job.date.isoformat()
    decision = pm_tick(settings, date=day, data=job.data, broker=job.broker, book=job.book)
    return PmTickResult(
        decision_id=decision.id,
        book=decision.book,
        date=decision.date,
        status=decision.status,
    )


def _validate(job: Any, settings: Settings, link: Link) -> ValidateResult:
    from alphaloop.ops.validate import validate_session

    link(job.session_id)
    report = validate_session(
        settings,
        job.session_id,
        n_blocks=job.blocks,
        n_windows=job.windows,
        gates=_job_gates(job),
        oos_start=None if job.oos_start is None else job.oos_start.isoformat(),
    )
    return ValidateResult(
        session_id=report.session_id,
        trial_idx=report.trial_idx,
        gates_passed=report.gates.passed,
        headline=report.gates.headline(),
    )


def _job_gates(job: Any) -> Gates | None:
    """The gate thresholds a validate job asks for (None: the defaults)."""
    from alphaloop.validation.gates import Gates

    return Gates(**job.gates) if job.gates else None


def _schedule(job: ScheduleJob, settings: Settings, link: Link) -> ScheduleResult:
    from alphaloop.ops.schedule import run_job

    run = run_job(settings, job.job)
    if run.outcome == "failed":
        first = (run.error or "").splitlines()[0] if run.error else "no error recorded"
        raise AlphaloopError(f"scheduler job {run.job} failed (schedule run {run.id}): {first}")
    return ScheduleResult(
        run_id=run.id,
        job=run.job,
        outcome=run.outcome.value,
        detail=run.detail,
        summary=run.summary,
    )


def _walk(job: Any, settings: Settings, link: Link) -> WalkResult:
    from alphaloop.ops.requests import FILES, WalkRequest
    from alphaloop.ops.research import check_proposer
    from alphaloop.ops.walk import start_walk, walk_spec

    check_proposer(job.proposer, settings)  # the setting may have changed since it was queued
    request = WalkRequest.model_validate(
        job.model_dump(exclude={"kind", "walk_id"}), context={FILES: True}
    )
    walk_id = start_walk(walk_spec(request), settings, job.walk_id)
    return _run_walk("walk", walk_id, settings, link)


def _walk_resume(job: WalkResumeJob, settings: Settings, link: Link) -> WalkResult:
    from alphaloop.ops.walk import check_resume

    check_resume(job.walk_id, settings)
    return _run_walk("walk_resume", job.walk_id, settings, link)


def _run_walk(
    kind: Literal["walk", "walk_resume"], walk_id: str, settings: Settings, link: Link
) -> WalkResult:
    """Runs walk ``walk_id`` to its report; the job is linked to each epoch's session as it
    begins (``GET /api/jobs/{id}`` names the session running now)."""
    from alphaloop.ops.walk import get_walk, run_walk
    from alphaloop.walk.events import EpochBegun, WalkEvent

    def on_event(event: WalkEvent) -> None:
        if isinstance(event, EpochBegun):
            link(event.session_id)

    report = run_walk(walk_id, settings, on_event)
    walk = get_walk(walk_id, settings).walk
    return WalkResult(
        kind=kind, walk_id=walk_id, status=walk.status.value, go=report.go, verdict=report.verdict
    )


_RUNNERS: dict[str, Callable[[Any, Settings, Link], BaseModel]] = {
    "research": _research,
    "resume": _resume,
    "train": _train,
    "dpo": _dpo,
    "pm_tick": _pm_tick,
    "schedule": _schedule,
    "validate": _validate,
    "walk": _walk,
    "walk_resume": _walk_resume,
}


def main(argv: list[str]) -> int:
    """``python -m alphaloop.ops.job_runners JOB_ID``: runs one job; exits with its error's
    exit code (0 when it finished)."""
    from alphaloop.settings import get_settings

    if len(argv) != 1 or not argv[0].isdigit():
        print("usage: python -m alphaloop.ops.job_runners JOB_ID", file=sys.stderr)
        return 2
    view = execute_job(get_settings(), int(argv[0]))
    if view.error is not None:
        print(f"job {view.id} failed: {view.error.type}: {view.error.message}", file=sys.stderr)
        return view.error.exit_code
    return 0


if __name__ == "__main__":
    # Run through the imported module, not this ``__main__`` copy of it: one set of classes.
    from alphaloop.ops import job_runners as _runners

    raise SystemExit(_runners.main(sys.argv[1:]))
