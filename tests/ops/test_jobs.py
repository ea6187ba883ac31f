"""Typed jobs: the models survive the journal, and a worker journals a typed result or error.
(A worker killed mid-job: ``tests/server/test_jobs.py``.)"""

from __future__ import annotations

import os

import pytest
from pydantic import ValidationError

from alphaloop.journal import JobStatus, Journal
from alphaloop.ops import job_runners, jobs
from alphaloop.settings import Settings

EXAMPLES: list[jobs.Job] = [
    jobs.ResearchJob(goal="max Sharpe", data="synthetic:3", symbols=["A00", "A01"], budget=4,
                     max_drawdown=0.2, time_budget_s=90.0, total_timesteps=128),
    jobs.ResumeJob(session_id="s-20260101-000000-abcd"),
    jobs.TrainJob(knobs={"lookback": 30.0}, seed=2, total_timesteps=256),
    jobs.DpoJob(model_dir="/models/tiny", out_dir="/home/dpo/run-1", lora=True, max_steps=3),
    jobs.PmTickJob(date="2024-01-02", book="paper"),
    jobs.ScheduleJob(job="prefs_extract"),
]  # fmt: skip


@pytest.mark.parametrize("job", EXAMPLES, ids=lambda j: j.kind)
def test_a_job_round_trips_through_json_and_the_journal(job: jobs.Job, tmp_path) -> None:
    assert jobs.JOB.validate_json(jobs.JOB.dump_json(job)) == job
    with Journal(tmp_path / "journal.db") as journal:
        row = journal.jobs.get(journal.jobs.queue(job.kind, job.model_dump(mode="json")))
    view = jobs.JobView.from_record(row)
    assert view.job == job and type(view.job) is type(job) and view.status == JobStatus.queued
    assert jobs.JobView.model_validate(view.model_dump(mode="json")) == view


def test_job_models_are_strict_and_frozen() -> None:
    with pytest.raises(ValidationError, match="extra"):
        jobs.JOB.validate_python({"kind": "pm_tick", "argv": ["--book", "x"]})
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        jobs.JOB.validate_python({"kind": "shell", "command": "ls"})
    with pytest.raises(ValidationError, match="frozen"):
        jobs.PmTickJob().book = "other"  # type: ignore[misc]
    result = jobs.RESULT.validate_python(
        {"kind": "resume", "session_id": "s", "status": "finished"}
    )
    assert isinstance(result, jobs.SessionResult)


def run_here(settings: Settings, job: jobs.Job) -> jobs.JobView:
    """``job`` queued, then run in this process as its worker would run it."""
    with Journal(settings.journal_path) as journal:
        job_id = journal.jobs.queue(job.kind, job.model_dump(mode="json"))
    return job_runners.execute_job(settings, job_id)


def test_a_failing_job_journals_its_error_typed(settings: Settings) -> None:
    no_policy = run_here(settings, jobs.PmTickJob())
    assert no_policy.status == JobStatus.failed and no_policy.result is None
    assert no_policy.error == jobs.JobError(
        type="Conflict",
        message="no active policy: activate a library entry with `alphaloop policies activate ID`",
        exit_code=2,
        http_status=409,
    )
    assert no_policy.pid == os.getpid() and no_policy.finished_at is not None
    unknown = run_here(settings, jobs.ScheduleJob(job="nightly"))
    assert unknown.error is not None and unknown.error.type == "InvalidRequest"
    assert "unknown job 'nightly'" in unknown.error.message
    assert (unknown.error.exit_code, unknown.error.http_status) == (2, 422)
    with Journal(settings.journal_path) as journal:  # the traceback is kept for people
        assert "InvalidRequest" in (journal.jobs.get(unknown.id).traceback_tail or "")


def test_a_finished_job_journals_its_typed_result(settings: Settings) -> None:
    done = run_here(settings, jobs.ScheduleJob(job="prefs_extract"))
    assert done.status == JobStatus.finished and done.error is None
    assert isinstance(done.result, jobs.ScheduleResult) and done.result.job == "prefs_extract"
    assert done.result.outcome in ("ok", "skipped")
    assert done.result.summary and "{" not in done.result.summary  # the run's detail, in words
    with pytest.raises(Exception, match="finished, not queued"):
        job_runners.execute_job(settings, done.id)  # a job runs once
