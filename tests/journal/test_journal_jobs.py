"""The ``jobs`` table: a job's life from queued to finished or failed, and how a job whose
worker is gone reads."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from alphaloop.exceptions import AlphaloopError, NotFound
from alphaloop.journal import JobStatus, Journal


def dead_pid() -> int:
    """The id of a process that has ended (and been waited for)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_job_runs_once_from_queued_to_finished(journal: Journal) -> None:
    job_id = journal.jobs.queue("pm_tick", {"kind": "pm_tick", "book": "main"})
    queued = journal.jobs.get(job_id)
    assert queued.status == JobStatus.queued and queued.pid is None
    assert queued.request == {"kind": "pm_tick", "book": "main"}
    running = journal.jobs.claim(job_id, os.getpid())
    assert running.status == JobStatus.running and running.pid == os.getpid()
    assert running.started_at is not None
    with pytest.raises(AlphaloopError, match="is running, not queued"):
        journal.jobs.claim(job_id, os.getpid())
    journal.jobs.link_session(job_id, "s-20260101-000000-abcd")
    done = journal.jobs.finish(job_id, {"kind": "pm_tick", "decision_id": 3})
    assert done.status == JobStatus.finished
    assert done.result == {"kind": "pm_tick", "decision_id": 3}
    assert done.session_id == "s-20260101-000000-abcd" and done.finished_at is not None
    with pytest.raises(AlphaloopError, match="already ended"):
        journal.jobs.fail(job_id, error_type="X", error="x", exit_code=1, http_status=500)
    with pytest.raises(NotFound):
        journal.jobs.get(job_id + 1)


def test_a_failed_job_keeps_its_typed_error(journal: Journal) -> None:
    job_id = journal.jobs.queue("train", {"kind": "train"})
    journal.jobs.claim(job_id, os.getpid())
    failed = journal.jobs.fail(
        job_id, error_type="DataError", error="unknown symbol(s) NOPE", exit_code=2,
        http_status=422, traceback_tail="Traceback ...",
    )  # fmt: skip
    assert failed.status == JobStatus.failed and failed.result is None
    assert (failed.error_type, failed.error) == ("DataError", "unknown symbol(s) NOPE")
    assert (failed.exit_code, failed.http_status) == (2, 422)


def test_a_job_whose_worker_is_gone_reads_as_interrupted(journal: Journal) -> None:
    gone = dead_pid()
    running = journal.jobs.queue("dpo", {"kind": "dpo"})
    journal.jobs.claim(running, gone)
    handed = journal.jobs.queue("dpo", {"kind": "dpo"})
    journal.jobs.set_pid(handed, gone)
    being_handed = journal.jobs.queue("dpo", {"kind": "dpo"})  # no worker started yet
    alive = journal.jobs.queue("dpo", {"kind": "dpo"})
    journal.jobs.set_pid(alive, os.getpid())
    for job_id in (running, handed):
        row = journal.jobs.get(job_id)
        assert row.status == JobStatus.interrupted and row.error_type == "WorkerDied"
        assert str(gone) in (row.error or "") and row.http_status == 500
    assert journal.jobs.get(being_handed).status == JobStatus.queued
    assert [j.id for j in journal.jobs.live("dpo")] == [being_handed, alive]
    assert [j.id for j in journal.jobs.list("dpo", after=handed)] == [being_handed, alive]
    with pytest.raises(AlphaloopError, match="interrupted, not queued"):
        journal.jobs.claim(running, os.getpid())
