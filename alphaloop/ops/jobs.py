"""Typed jobs: long work a front end hands to a worker process, queued in the journal.

A job is a frozen model (:data:`Job`, a union on ``kind``): a research session started or
resumed, a manual PPO run, a DPO run, a portfolio-manager tick, a scheduler job run now, a
walk started or resumed (:mod:`alphaloop.ops.walk_jobs`).
:func:`start_job` journals it ``queued`` and starts ``python -m alphaloop.ops.job_runners ID``,
a detached process, which claims the row, calls the same operations the command line calls,
and journals a typed result (:data:`JobResult`) or a typed error (:class:`JobError`) (see
:mod:`alphaloop.ops.job_runners`, which imports this module; this one never imports it).
Readers learn everything from the journal, never from a process's output.

Why the journal and a fresh process, not a pipe or ``multiprocessing``: the request is on record
before any process exists, so a worker needs only the job's id and a reader needs no handle on
the process; a fresh interpreter forks nothing from a threaded web server; and the worker, in
its own session, outlives a server restart, as work started from the command line does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from alphaloop.exceptions import Conflict, InvalidRequest, exit_code_of, http_status_of
from alphaloop.journal import JobRecord, JobStatus, Journal
from alphaloop.journal.books import DecisionStatus
from alphaloop.ops._journal import open_journal
from alphaloop.ops.goal import Understood
from alphaloop.ops.requests import (
    ResearchRequest,
    ResumeRequest,
    SessionId,
    TickRequest,
    TrainRequest,
    ValidateRequest,
    derive,
)
from alphaloop.ops.walk_jobs import WalkJob, WalkResult, WalkResumeJob
from alphaloop.settings import Settings

_STRICT = ConfigDict(frozen=True, extra="forbid")
# How long a front end waits, by default, for a new worker to journal what it started (it loads
# its libraries and data first).
WAIT_S = 60.0
_TRACEBACK_CHARS = 2000


def _kind(name: str) -> dict[str, Any]:
    return {"kind": (Literal[name], name)}  # type: ignore[valid-type]


# A job's payload is its request as declared once (alphaloop.ops.requests), checked completely
# before it is journaled, plus its kind.
ResearchJob: Any = derive(
    ResearchRequest, "ResearchJob", check=False,
    extra={**_kind("research"), "understood": (Understood | None, None)},
    doc="Start a research session and run it to its end (with what was understood of its "
    "goal, read before the job was queued, journaled with the session).",
)  # fmt: skip


ResumeJob: Any = derive(
    ResumeRequest, "ResumeJob", check=False, extra=_kind("resume"),
    doc="Continue a session after a crash, a kill or a stop (where it ran, or where it says).",
)  # fmt: skip


TrainJob: Any = derive(
    TrainRequest, "TrainJob", check=False, extra=_kind("train"),
    doc="One manual PPO run, journaled as a session of one trial.",
)  # fmt: skip


class DpoJob(BaseModel):
    """One DPO run on every labelled preference pair."""

    model_config = _STRICT

    kind: Literal["dpo"] = "dpo"
    model_dir: str
    out_dir: str
    lora: bool = False
    max_steps: int = 50
    max_length: int | None = None


PmTickJob: Any = derive(
    TickRequest, "PmTickJob", check=False, extra=_kind("pm_tick"),
    doc="One portfolio-manager tick of the active policy.",
)  # fmt: skip
ValidateJob: Any = derive(
    ValidateRequest, "ValidateJob", check=False,
    extra={**_kind("validate"), "session_id": (SessionId, ...)},
    doc="The validation suite of a session.",
)  # fmt: skip


class ScheduleJob(BaseModel):
    """One scheduler job run now (journaled in ``schedule_runs`` with trigger ``manual``)."""

    model_config = _STRICT

    kind: Literal["schedule"] = "schedule"
    job: str


Job = Annotated[
    ResearchJob
    | ResumeJob
    | TrainJob
    | DpoJob
    | PmTickJob
    | ScheduleJob
    | ValidateJob
    | WalkJob
    | WalkResumeJob,
    Field(discriminator="kind"),
]
# The kinds of job, as the union's discriminator names them: a filter by kind takes these only.
JOB_KINDS: tuple[str, ...] = tuple(
    kind
    for model in get_args(get_args(Job)[0])
    for kind in get_args(model.model_fields["kind"].annotation)
)
JobKind = Literal[JOB_KINDS]  # type: ignore[valid-type]


class SessionResult(BaseModel):
    """A session the job ran to its end (or to its stop)."""

    model_config = _STRICT

    kind: Literal["research", "resume"]
    session_id: str
    status: str
    stop_reason: str | None = None


class TrainResult(BaseModel):
    model_config = _STRICT

    kind: Literal["train"] = "train"
    session_id: str
    trial_id: int
    objective: float | None = None
    policy_id: int | None = None


class DpoResult(BaseModel):
    model_config = _STRICT

    kind: Literal["dpo"] = "dpo"
    dpo_run_id: int
    status: str


class PmTickResult(BaseModel):
    model_config = _STRICT

    kind: Literal["pm_tick"] = "pm_tick"
    decision_id: int
    book: str
    date: str
    status: DecisionStatus


class ValidateResult(BaseModel):
    model_config = _STRICT

    kind: Literal["validate"] = "validate"
    session_id: str
    trial_idx: int | None = None
    gates_passed: bool
    headline: str


class ScheduleResult(BaseModel):
    model_config = _STRICT

    kind: Literal["schedule"] = "schedule"
    run_id: int
    job: str
    outcome: str
    detail: dict[str, Any] | str | None = None  # as the schedule run's (see ScheduleRunRecord)
    summary: str | None = None


JobResult = Annotated[
    SessionResult
    | TrainResult
    | DpoResult
    | PmTickResult
    | ScheduleResult
    | ValidateResult
    | WalkResult,
    Field(discriminator="kind"),
]
JOB: TypeAdapter[Job] = TypeAdapter(Job)
RESULT: TypeAdapter[JobResult] = TypeAdapter(JobResult)


class JobError(BaseModel):
    """Why a job failed: the exception's class name and message, and the exit code and HTTP
    status that error stands for."""

    model_config = _STRICT

    type: str
    message: str
    exit_code: int
    http_status: int


# The columns a view shows as they are; the traceback tail stays in the journal, for people.
_VIEWED_COLUMNS = frozenset(
    {"id", "kind", "status", "session_id", "pid", "created_at", "started_at", "finished_at"}
)


class JobView(BaseModel):
    """A job as the journal has it, typed: its request, where it is, its result or error."""

    model_config = _STRICT

    id: int
    kind: str
    status: JobStatus
    job: Job
    session_id: str | None = None
    result: JobResult | None = None
    error: JobError | None = None
    pid: int | None = None
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None

    @property
    def ended(self) -> bool:
        return self.status not in (JobStatus.queued, JobStatus.running)

    @classmethod
    def from_record(cls, row: JobRecord) -> JobView:
        error = None
        if row.error_type is not None:
            error = JobError(
                type=row.error_type,
                message=row.error or "",
                exit_code=row.exit_code if row.exit_code is not None else 1,
                http_status=row.http_status if row.http_status is not None else 500,
            )
        return cls(
            **row.model_dump(include=_VIEWED_COLUMNS),
            job=JOB.validate_python(row.request),
            result=RESULT.validate_python(row.result) if row.result is not None else None,
            error=error,
        )


# --- starting and reading jobs (the front end's side) -------------------------------------------


KINDS = (
    "research", "resume", "train", "dpo", "pm_tick", "schedule", "validate", "walk", "walk_resume"
)  # fmt: skip
_starting = threading.Lock()


def start_job(settings: Settings, job: Job) -> JobView:
    """Journals ``job`` and starts its worker, detached (its own session; stdout and stderr to
    ``<home>/jobs/<id>.log``, for people: nothing reads it). A thread waits on the child so an
    ended worker never lingers as a zombie, which would still look alive to the journal.

    Returns:
        The job as journaled (``failed`` when the worker could not be started at all).

    Raises:
        Conflict: ``settings.max_jobs`` jobs are queued or running (nothing is journaled).
    """
    if settings.max_jobs == 0:
        raise Conflict(
            "this server runs no jobs (ALPHALOOP_MAX_JOBS=0); run the work from the command "
            "line, or restart the server with a capacity"
        )
    with _starting, Journal(settings.journal_path) as journal:
        live = [j.id for kind in KINDS for j in journal.jobs.live(kind)]
        if len(live) >= settings.max_jobs:
            raise Conflict(
                f"{len(live)} job(s) running ({', '.join(map(str, sorted(live))) or 'none'}) "
                f"and this server runs at most {settings.max_jobs} at once "
                "(ALPHALOOP_MAX_JOBS); wait for one to end (GET /api/jobs) and start again"
            )
        job_id = journal.jobs.queue(job.kind, job.model_dump(mode="json"))
    logs = settings.home / "jobs"
    logs.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "ALPHALOOP_HOME": str(settings.home.absolute())}
    try:
        with (logs / f"{job_id}.log").open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "alphaloop.ops.job_runners", str(job_id)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
    except OSError as err:
        with Journal(settings.journal_path) as journal:
            journal_failure(journal, job_id, err)
        return get_job(settings, job_id)
    threading.Thread(target=proc.wait, daemon=True, name=f"job-{job_id}").start()
    with Journal(settings.journal_path) as journal:
        journal.jobs.set_pid(job_id, proc.pid)
    return get_job(settings, job_id)


def get_job(settings: Settings, job_id: int) -> JobView:
    """One job.

    Raises:
        NoJournal: no journal yet.
        NotFound: no such job.
    """
    with open_journal(settings) as journal:
        return JobView.from_record(journal.jobs.get(job_id))


def list_jobs(settings: Settings, *, kind: str | None = None, after: int = 0) -> list[JobView]:
    """Jobs with an id above ``after`` (of one kind if given), oldest first.

    Raises:
        InvalidRequest: ``kind`` is not a kind of job (the message lists them).
    """
    if kind is not None and kind not in JOB_KINDS:
        raise InvalidRequest(f"unknown kind of job {kind!r}: choose one of {', '.join(JOB_KINDS)}")
    if not settings.journal_path.exists():
        return []
    with open_journal(settings) as journal:
        return [JobView.from_record(r) for r in journal.jobs.list(kind, after=after)]


def live_jobs(settings: Settings, kind: str) -> list[JobView]:
    """Jobs of ``kind`` queued or running in a living worker."""
    if not settings.journal_path.exists():
        return []
    with open_journal(settings) as journal:
        return [JobView.from_record(r) for r in journal.jobs.live(kind)]


def wait_for_job(
    settings: Settings,
    job_id: int,
    ready: Callable[[JobView], bool],
    timeout_s: float = WAIT_S,
    poll_s: float = 0.1,
) -> JobView:
    """Reads the job until ``ready(job)`` holds, it has ended, or ``timeout_s`` has passed;
    returns what it read last."""
    deadline = time.monotonic() + timeout_s
    while True:
        view = get_job(settings, job_id)
        if ready(view) or view.ended or time.monotonic() >= deadline:
            return view
        time.sleep(poll_s)


def _message(err: BaseException) -> str:
    if isinstance(err, ValidationError):  # one line naming the fields, as the API words it
        parts = [
            f"{'.'.join(str(p) for p in e['loc']) or 'job'}: {e['msg']}" for e in err.errors()[:5]
        ]
        return "invalid job: " + "; ".join(parts)
    return str(err) or repr(err)


def journal_failure(journal: Journal, job_id: int, err: BaseException) -> JobRecord:
    """Journals job ``job_id`` failed with ``err`` (its type, message, exit code, HTTP status
    and the tail of its traceback)."""
    exit_code, http_status = exit_code_of(err), http_status_of(err)
    return journal.jobs.fail(
        job_id,
        error_type=type(err).__name__,
        error=_message(err),
        exit_code=exit_code,
        http_status=http_status,
        traceback_tail="".join(traceback.format_exception(err))[-_TRACEBACK_CHARS:],
    )
