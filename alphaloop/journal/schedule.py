"""Runs of the scheduler's jobs. Part of :class:`~alphaloop.journal.Journal`."""

from __future__ import annotations

from alphaloop.journal.connection import JournalFile


class ScheduleStore(JournalFile):
    """Reads and writes of the ``schedule_runs`` table."""
