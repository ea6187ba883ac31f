"""Clear errors for ids that name no row, shared by the repositories that check them before a
write (a foreign key would refuse the write too, with less to say)."""

from __future__ import annotations

import sqlite3

from alphaloop.exceptions import NotFound
from alphaloop.journal.connection import JournalFile

# The order sessions are listed in (and their recent ids hinted at).
NEWEST_FIRST = "ORDER BY created_at DESC, rowid DESC"


def session_not_found(journal: JournalFile, session_id: str) -> NotFound:
    """The error for a session id that names nothing, listing the most recent ids."""
    recent = [r["id"] for r in journal._rows(f"SELECT id FROM sessions {NEWEST_FIRST} LIMIT 5")]
    hint = f"recent sessions: {', '.join(recent)}" if recent else "it has no sessions yet"
    return NotFound(f"no session {session_id!r} in {journal.path}; {hint}")


def trial_not_found(journal: JournalFile, trial_id: int) -> NotFound:
    """The error for a trial id that names nothing."""
    return NotFound(f"no trial with id {trial_id!r} in {journal.path}")


def check_refs(
    journal: JournalFile,
    conn: sqlite3.Connection,
    session_id: str | None,
    trial_id: int | None,
) -> None:
    """Raises what the foreign keys would refuse, inside the write transaction on ``conn``.

    Raises:
        NotFound: ``session_id`` is given and names no session.
        NotFound: ``trial_id`` is given and names no trial.
    """
    if (
        session_id is not None
        and conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None
    ):
        raise session_not_found(journal, session_id)
    if (
        trial_id is not None
        and conn.execute("SELECT 1 FROM trials WHERE id = ?", (trial_id,)).fetchone() is None
    ):
        raise trial_not_found(journal, trial_id)
