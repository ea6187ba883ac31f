"""Runs of the scheduler's jobs: one ``schedule_runs`` row per run, scheduled or asked for by
hand. A repository the journal holds as ``journal.schedule``.

A run is journaled ``running`` when it starts and finished with its outcome (``ok``,
``skipped``, ``failed``), so a run whose process died shows as a row that never finished.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import computed_field, field_validator

from alphaloop.exceptions import AlphaloopError
from alphaloop.journal.codec import now
from alphaloop.journal.connection import JournalFile
from alphaloop.journal.models import _Record


class ScheduleTrigger(StrEnum):
    schedule = "schedule"  # the scheduler's clock fired it
    manual = "manual"  # ``run-now`` from the CLI, the API or the page


class ScheduleOutcome(StrEnum):
    running = "running"
    ok = "ok"
    skipped = "skipped"  # nothing to do (no new pairs, no finished session to retrain)
    failed = "failed"


class ScheduleRunRecord(_Record):
    """One run of one job: what fired it, when, how it ended and what it did.

    ``detail`` is the job's result as journaled: a JSON object (what an ``ok`` run did, e.g. the
    pairs a ``prefs_extract`` added) or a message (why a run was skipped); ``summary`` is either
    one as a line of text, for people.
    """

    json_fields: ClassVar[frozenset[str]] = frozenset()

    id: int
    job: str
    trigger: ScheduleTrigger
    outcome: ScheduleOutcome
    detail: dict[str, Any] | str | None = None
    error: str | None = None
    started_at: str
    finished_at: str | None = None

    @field_validator("detail", mode="before")
    @classmethod
    def _object_or_message(cls, value: Any) -> Any:
        if isinstance(value, str) and value.startswith("{"):
            try:
                return json.loads(value)
            except json.JSONDecodeError:  # a message that happens to start with a brace
                return value
        return value

    @computed_field  # type: ignore[prop-decorator]
    @property
    def summary(self) -> str | None:
        """``detail`` in one line: an object's fields as ``name: value``, nested ones flattened."""
        if self.detail is None or isinstance(self.detail, str):
            return self.detail
        return "; ".join(f"{k}: {_flat(v)}" for k, v in self.detail.items())


def _flat(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {_flat(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list):
        return ", ".join(_flat(v) for v in value) or "none"
    return str(value)


class Schedule:
    """Reads and writes of the ``schedule_runs`` table."""

    def __init__(self, journal: JournalFile) -> None:
        self._journal = journal

    def start_run(self, job: str, trigger: ScheduleTrigger | str) -> ScheduleRunRecord:
        """Journals a job run about to start (outcome ``running``) and returns it."""
        trigger = ScheduleTrigger(trigger)
        with self._journal._write():
            run_id = int(
                self._journal.db["schedule_runs"]
                .insert(
                    {
                        "job": job,
                        "trigger": trigger.value,
                        "outcome": ScheduleOutcome.running.value,
                        "started_at": now(),
                    }
                )
                .last_rowid
            )
        return self.get_run(run_id)

    def finish_run(
        self,
        run_id: int,
        outcome: ScheduleOutcome | str,
        *,
        detail: str | None = None,
        error: str | None = None,
    ) -> ScheduleRunRecord:
        """Records how a run ended.

        Raises:
            ValueError: ``running`` is not an ending.
            AlphaloopError: no such run, or it has already finished.
        """
        outcome = ScheduleOutcome(outcome)
        if outcome is ScheduleOutcome.running:
            raise ValueError("a run ends ok, skipped or failed, not running")
        with self._journal._write() as conn:
            changed = conn.execute(
                "UPDATE schedule_runs SET outcome = ?, detail = ?, error = ?, finished_at = ? "
                "WHERE id = ? AND outcome = 'running'",
                (outcome.value, detail, error, now(), run_id),
            ).rowcount
        if not changed:
            self.get_run(run_id)  # raises when there is no such run
            raise AlphaloopError(f"schedule run {run_id} has already finished")
        return self.get_run(run_id)

    def get_run(self, run_id: int) -> ScheduleRunRecord:
        """One run.

        Raises:
            AlphaloopError: no such run.
        """
        rows = self._journal._rows("SELECT * FROM schedule_runs WHERE id = ?", (run_id,))
        if not rows:
            raise AlphaloopError(f"no schedule run {run_id!r} in {self._journal.path}")
        return ScheduleRunRecord.from_row(rows[0])

    def runs(
        self, job: str | None = None, *, after: int = 0, limit: int | None = None
    ) -> list[ScheduleRunRecord]:
        """Runs with an id above ``after`` (of one job if given), oldest first."""
        sql, params = "SELECT * FROM schedule_runs WHERE id > ?", [after]
        if job is not None:
            sql += " AND job = ?"
            params.append(job)
        sql += " ORDER BY id"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [ScheduleRunRecord.from_row(r) for r in self._journal._rows(sql, tuple(params))]

    def last_run(self, job: str) -> ScheduleRunRecord | None:
        """The newest run of ``job``, or None."""
        rows = self._journal._rows(
            "SELECT * FROM schedule_runs WHERE job = ? ORDER BY id DESC LIMIT 1", (job,)
        )
        return ScheduleRunRecord.from_row(rows[0]) if rows else None
