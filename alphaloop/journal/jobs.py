"""Jobs: long work handed to a worker process, one ``jobs`` row each. A repository the journal
holds as ``journal.jobs``.

A job is journaled ``queued`` with its request before any process exists; its worker claims it
(``running``, with its pid), then finishes it with a result or fails it with a typed error. The
journal stores the request and the result as JSON; what they mean is the operations layer's
(:mod:`alphaloop.ops.jobs`).
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any, ClassVar

from alphaloop.exceptions import AlphaloopError, NotFound
from alphaloop.journal.codec import now
from alphaloop.journal.connection import JournalFile, pid_alive
from alphaloop.journal.models import _Record


class JobStatus(StrEnum):
    """Where a job is. ``interrupted`` is never written: it is how a ``queued`` or ``running``
    row reads once its worker is gone (a kill -9, a crash), since nothing will move it on."""

    queued = "queued"
    running = "running"
    finished = "finished"
    failed = "failed"
    interrupted = "interrupted"


_LIVE = (JobStatus.queued.value, JobStatus.running.value)
# The type a job's error is given when its worker died without writing one.
WORKER_DIED = "WorkerDied"


class JobRecord(_Record):
    """One job as journaled: its request and result as JSON data, its error typed by the
    exception's class name, the exit code and HTTP status that error carries."""

    json_fields: ClassVar[frozenset[str]] = frozenset({"request", "result"})

    id: int
    kind: str
    request: dict[str, Any]
    status: JobStatus
    session_id: str | None = None
    result: dict[str, Any] | None = None
    error_type: str | None = None
    error: str | None = None
    exit_code: int | None = None
    http_status: int | None = None
    traceback_tail: str | None = None
    pid: int | None = None
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None


def _job(row: dict[str, Any]) -> JobRecord:
    """A job as it is: one left queued or running by a worker that is gone reads as
    ``interrupted``, with an error saying so. A queued row without a pid is still being
    handed to its worker."""
    if row["status"] in _LIVE and row["pid"] is not None and not pid_alive(row["pid"]):
        row = {
            **row,
            "status": JobStatus.interrupted.value,
            "error_type": WORKER_DIED,
            "error": f"its worker process {row['pid']} ended while the job was {row['status']}",
            "exit_code": 1,
            "http_status": 500,
        }
    return JobRecord.from_row(row)


class Jobs:
    """Reads and writes of the ``jobs`` table."""

    def __init__(self, journal: JournalFile) -> None:
        self._journal = journal

    def queue(self, kind: str, request: dict[str, Any]) -> int:
        """Journals a job to run (``queued``, no worker yet) and returns its id."""
        with self._journal._write():
            return int(
                self._journal.db["jobs"]
                .insert(
                    {
                        "kind": kind,
                        "request": json.dumps(request),
                        "status": JobStatus.queued.value,
                        "created_at": now(),
                    }
                )
                .last_rowid
            )

    def set_pid(self, job_id: int, pid: int) -> None:
        """Records the worker started for a queued job (it may have claimed the job already)."""
        with self._journal._write() as conn:
            conn.execute("UPDATE jobs SET pid = ? WHERE id = ? AND pid IS NULL", (pid, job_id))

    def claim(self, job_id: int, pid: int) -> JobRecord:
        """Marks a queued job ``running`` in process ``pid``: a job runs once.

        Raises:
            NotFound: no such job.
            AlphaloopError: it is not queued (another worker has it, or it has ended).
        """
        with self._journal._write() as conn:
            changed = conn.execute(
                "UPDATE jobs SET status = ?, pid = ?, started_at = ? WHERE id = ? AND status = ?",
                (JobStatus.running.value, pid, now(), job_id, JobStatus.queued.value),
            ).rowcount
        job = self.get(job_id)
        if not changed:
            raise AlphaloopError(f"job {job_id} is {job.status.value}, not queued")
        return job

    def link_session(self, job_id: int, session_id: str) -> None:
        """Records the session a job created or continues, once it is journaled."""
        with self._journal._write() as conn:
            conn.execute("UPDATE jobs SET session_id = ? WHERE id = ?", (session_id, job_id))

    def finish(self, job_id: int, result: dict[str, Any]) -> JobRecord:
        """Records a running job's result (``finished``)."""
        return self._end(job_id, {"status": JobStatus.finished.value, "result": result})

    def fail(
        self,
        job_id: int,
        *,
        error_type: str,
        error: str,
        exit_code: int,
        http_status: int,
        traceback_tail: str | None = None,
    ) -> JobRecord:
        """Records why a queued or running job failed (``failed``)."""
        values = {
            "status": JobStatus.failed.value,
            "error_type": error_type,
            "error": error,
            "exit_code": exit_code,
            "http_status": http_status,
            "traceback_tail": traceback_tail,
        }
        return self._end(job_id, values)

    def _end(self, job_id: int, values: dict[str, Any]) -> JobRecord:
        """Ends a job that has not ended yet.

        Raises:
            NotFound: no such job.
            AlphaloopError: it has ended already.
        """
        if "result" in values:
            values = {**values, "result": json.dumps(values["result"])}
        values["finished_at"] = now()
        sets = ", ".join(f"{k} = ?" for k in values)
        with self._journal._write() as conn:
            changed = conn.execute(
                f"UPDATE jobs SET {sets} WHERE id = ? AND status IN (?, ?)",
                (*values.values(), job_id, *_LIVE),
            ).rowcount
        job = self.get(job_id)
        if not changed:
            raise AlphaloopError(f"job {job_id} has already ended ({job.status.value})")
        return job

    def get(self, job_id: int) -> JobRecord:
        """One job.

        Raises:
            NotFound: no such job.
        """
        rows = self._journal._rows("SELECT * FROM jobs WHERE id = ?", (job_id,))
        if not rows:
            raise NotFound(f"no job {job_id!r} in {self._journal.path}")
        return _job(rows[0])

    def list(
        self, kind: str | None = None, *, after: int = 0, limit: int | None = None
    ) -> list[JobRecord]:
        """Jobs with an id above ``after`` (of one kind if given), oldest first."""
        sql, params = "SELECT * FROM jobs WHERE id > ?", [after]
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        sql += " ORDER BY id"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [_job(r) for r in self._journal._rows(sql, tuple(params))]

    def live(self, kind: str) -> list[JobRecord]:
        """Jobs of ``kind`` still queued or running in a living worker, oldest first."""
        rows = self._journal._rows(
            "SELECT * FROM jobs WHERE kind = ? AND status IN (?, ?) ORDER BY id", (kind, *_LIVE)
        )
        return [j for j in map(_job, rows) if j.status != JobStatus.interrupted]
