"""What each kind of job does: the operations the command line calls, with the job's fields.

Each runner takes its job, the settings and ``link`` (told the session the job runs, as soon as
that session is journaled) and returns the job's typed result; an error is raised, and the
worker (:func:`alphaloop.ops.jobs.execute_job`) journals it. The operations are imported on
first use: a worker loads only what its kind of job needs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel

from alphaloop.exceptions import AlphaloopError, LLMNotConfigured
from alphaloop.ops.jobs import (
    DpoJob,
    DpoResult,
    Job,
    PmTickJob,
    PmTickResult,
    ResearchJob,
    ResumeJob,
    ScheduleJob,
    ScheduleResult,
    SessionResult,
    TrainJob,
    TrainResult,
)
from alphaloop.settings import Settings

Link = Callable[[str], None]


class ScheduledJobFailed(AlphaloopError):
    """A scheduler job run now ended ``failed`` (its error is in its ``schedule_runs`` row)."""


def run(job: Job, settings: Settings, link: Link) -> BaseModel:
    """Runs ``job`` in this process and returns its typed result."""
    return _RUNNERS[job.kind](job, settings, link)


def _research(job: ResearchJob, settings: Settings, link: Link) -> SessionResult:
    from alphaloop import ops

    if job.proposer == "llm" and not settings.llm_configured:
        raise LLMNotConfigured(
            "the llm proposer needs ALPHALOOP_LLM_BASE_URL and ALPHALOOP_LLM_MODEL"
        )
    spec = ops.SessionSpec(
        goal=job.goal,
        mode=job.mode,
        budget=job.budget,
        proposer=job.proposer,
        objective=ops.Objective(
            metric=job.metric, max_drawdown=job.max_drawdown, max_turnover=job.max_turnover
        ),
        time_budget_s=job.time_budget_s,
        max_tokens_total=job.max_tokens_total,
        data=job.data,
        symbols=job.symbols,
        seed=job.seed,
        noise_seeds=job.noise_seeds,
        folds=job.folds,
        trial_budget=ops.trial_budget(job.total_timesteps),
    )
    session_id = ops.start_session(spec, settings)
    link(session_id)
    return _run_session("research", session_id, settings)


def _resume(job: ResumeJob, settings: Settings, link: Link) -> SessionResult:
    from alphaloop import ops

    ops.check_resume(job.session_id, settings)
    link(job.session_id)
    return _run_session("resume", job.session_id, settings)


def _run_session(kind: Literal["research", "resume"], sid: str, settings: Settings) -> Any:
    from alphaloop import ops

    final = ops.run_session(sid, settings)
    session = ops.get_session(settings, sid)
    return SessionResult(
        kind=kind,
        session_id=sid,
        status=session.status.value,
        stop_reason=final.stop_reason if final else None,
    )


def _train(job: TrainJob, settings: Settings, link: Link) -> TrainResult:
    from alphaloop import ops
    from alphaloop.knobs import ConfigDelta

    delta = ConfigDelta(changes=job.knobs, rationale="set by hand")
    spec = ops.ManualRunSpec(
        data=job.data,
        symbols=job.symbols,
        changes=dict(delta.changes),
        seed=job.seed,
        metric=job.metric,
        trial_budget=ops.trial_budget(job.total_timesteps),
    )
    run = ops.train(spec, settings, on_start=lambda trial, _planned: link(trial.session_id))
    return TrainResult(
        session_id=run.session.id,
        trial_id=run.trial.id,
        objective=run.trial.objective,
        policy_id=run.session.final.policy_id if run.session.final else None,
    )


def _dpo(job: DpoJob, settings: Settings, link: Link) -> DpoResult:
    from pathlib import Path

    from alphaloop.ops.dpo import train_dpo

    run = train_dpo(
        settings, Path(job.model_dir), Path(job.out_dir), lora=job.lora, max_steps=job.max_steps
    )
    return DpoResult(dpo_run_id=run.id, status=run.status.value)


def _pm_tick(job: PmTickJob, settings: Settings, link: Link) -> PmTickResult:
    from alphaloop.ops.pm import pm_tick

    decision = pm_tick(settings, date=job.date, data=job.data, book=job.book)
    return PmTickResult(
        decision_id=decision.id,
        book=decision.book,
        date=decision.date,
        status=decision.status,
    )


def _schedule(job: ScheduleJob, settings: Settings, link: Link) -> ScheduleResult:
    from alphaloop.ops.schedule import run_job

    run = run_job(settings, job.job)
    if run.outcome == "failed":
        first = (run.error or "").splitlines()[0] if run.error else "no error recorded"
        raise ScheduledJobFailed(f"scheduler job {run.job} failed (schedule run {run.id}): {first}")
    return ScheduleResult(
        run_id=run.id,
        job=run.job,
        outcome=run.outcome.value,
        detail=run.detail,
        summary=run.summary,
    )


_RUNNERS: dict[str, Callable[[Any, Settings, Link], BaseModel]] = {
    "research": _research,
    "resume": _resume,
    "train": _train,
    "dpo": _dpo,
    "pm_tick": _pm_tick,
    "schedule": _schedule,
}
