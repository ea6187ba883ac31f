"""Notes on sessions and trials, versioned: kept as ``note`` events (no table of their own), one
event per version, so every earlier text stays readable. An edit names the version it was made
on; one made on an older version than the newest is refused (``Conflict``, a 409), so two
people editing the same note never overwrite each other unseen. A repository the journal holds
as ``journal.notes``."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import Conflict, NotFound
from alphaloop.journal.codec import now
from alphaloop.journal.connection import JournalFile
from alphaloop.journal.refs import session_not_found

NOTE = "note"  # the event kind
_OF = "kind = ? AND session_id = ? AND json_extract(payload, '$.trial_id') IS ?"


class NoteVersion(BaseModel):
    """One version of a note (version 1 is the first text)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: str
    trial_id: int | None
    version: int
    text: str
    created_at: str


def _version(row: Any) -> NoteVersion:
    payload = json.loads(row["payload"])
    return NoteVersion(
        session_id=row["session_id"],
        trial_id=payload.get("trial_id"),
        version=int(payload["version"]),
        text=str(payload["text"]),
        created_at=row["created_at"],
    )


class Notes:
    """Reads and writes of notes (``note`` events) through the journal's connection."""

    def __init__(self, journal: JournalFile) -> None:
        self._journal = journal

    def versions(self, session_id: str, trial_id: int | None = None) -> list[NoteVersion]:
        """Every version of the note on a session (or one of its trials), oldest first."""
        rows = self._journal._rows(
            f"SELECT session_id, payload, created_at FROM events WHERE {_OF} ORDER BY id",
            (NOTE, session_id, trial_id),
        )
        return [_version(r) for r in rows]

    def save(
        self, session_id: str, trial_id: int | None, text: str, base_version: int
    ) -> NoteVersion:
        """Journals ``text`` as the next version of the note, made on ``base_version`` (0 for
        a first note).

        Raises:
            NotFound, NotFound: no such session, or trial in it.
            Conflict: the note has a version newer than ``base_version``.
        """
        with self._journal._write() as conn:
            self._check_target(conn, session_id, trial_id)
            (current,) = conn.execute(
                f"SELECT COUNT(*) FROM events WHERE {_OF}", (NOTE, session_id, trial_id)
            ).fetchone()
            if base_version != current:
                raise Conflict(
                    f"the note was edited meanwhile: it is at version {current}, this edit was "
                    f"made on version {base_version}; reload it and edit again"
                )
            payload = {"trial_id": trial_id, "version": current + 1, "text": text}
            conn.execute(
                "INSERT INTO events (session_id, kind, payload, created_at) VALUES (?, ?, ?, ?)",
                (session_id, NOTE, json.dumps(payload), now()),
            )
        return self.versions(session_id, trial_id)[-1]

    def _check_target(self, conn: Any, session_id: str, trial_id: int | None) -> None:
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
            raise session_not_found(self._journal, session_id)
        if trial_id is not None:
            row = conn.execute("SELECT session_id FROM trials WHERE id = ?", (trial_id,)).fetchone()
            if row is None or row[0] != session_id:
                raise NotFound(f"no trial {trial_id} in session {session_id}")


__all__ = ["NOTE", "NoteVersion", "Notes"]
