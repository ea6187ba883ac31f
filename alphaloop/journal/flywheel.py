"""The preference flywheel: verdicts on decisions, preference pairs and DPO runs. Part of
:class:`~alphaloop.journal.Journal`."""

from __future__ import annotations

from alphaloop.journal.connection import JournalFile


class FlywheelStore(JournalFile):
    """Reads and writes of ``preferences``, ``dpo_runs`` and the verdict columns of
    ``decisions``."""
