"""Research sessions (``sessions``): a repository the journal holds as ``journal.sessions``.

A session row is written by the process that owns it (its ``owner_pid``); a stop may be asked
from any process (:meth:`Sessions.request_stop`). A session left ``running`` or ``stopping`` by
a process that is gone reads as ``interrupted``.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from datetime import UTC, datetime
from typing import Any

from alphaloop.journal.codec import columns, now
from alphaloop.journal.connection import JournalFile, pid_alive
from alphaloop.journal.logs import insert_event
from alphaloop.journal.models import EventKind, SessionRecord, SessionStatus
from alphaloop.journal.refs import NEWEST_FIRST, session_not_found
from alphaloop.journal.walks import link_epoch

STOP_REQUESTED = EventKind.stop_requested
# Fields a caller may change with ``update``: all but the identity and the timestamps the
# journal keeps itself.
SESSION_UPDATABLE = frozenset(SessionRecord.model_fields) - {"id", "created_at", "updated_at"}
_LIVE = (SessionStatus.running.value, SessionStatus.stopping.value)


def new_session_id() -> str:
    """A short, readable, sortable id: ``s-<yyyymmdd-hhmmss>-<4 hex>`` (UTC)."""
    return f"s-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def _session(row: dict[str, Any]) -> SessionRecord:
    """A session as it is: one left ``running`` or ``stopping`` by a process that is gone (a
    kill -9, a power cut) reads as ``interrupted``, since nothing will ever move it on. The row
    itself keeps what its owner last wrote (a resumed session honours a pending stop)."""
    if row["status"] in _LIVE and not pid_alive(row["owner_pid"]):
        gone = f"its process {row['owner_pid']} ended while it was {row['status']}"
        row = {**row, "status": SessionStatus.interrupted.value, "error": row["error"] or gone}
    return SessionRecord.from_row(row)


class Sessions:
    """Reads and writes of the ``sessions`` table through the journal's connection."""

    def __init__(self, journal: JournalFile) -> None:
        self._journal = journal

    def create(
        self,
        *,
        goal: str,
        mode: str,
        objective: dict[str, Any],
        proposer: str,
        budget: int,
        seed: int,
        data_source: str,
        data_fingerprint: str | None,
        settings: dict[str, Any],
        baseline_config: dict[str, Any],
        time_budget_s: float | None = None,
        max_tokens_total: int | None = None,
        walk: tuple[str, int, str, str] | None = None,
    ) -> str:
        """Journals a new session, status ``running`` and owned by this process; returns its id.

        ``walk`` (``walk_id, epoch, first_day, last_day``) makes it that walk's epoch, linked in
        the same transaction: a walk killed at any instant never starts an epoch twice.

        Raises:
            ValueError: a value of the wrong type (the message names the field).
        """
        row = columns(
            SessionRecord,
            {
                "goal": goal,
                "mode": mode,
                "objective": objective,
                "proposer": proposer,
                "budget": budget,
                "seed": seed,
                "data_source": data_source,
                "data_fingerprint": data_fingerprint,
                "settings": settings,
                "baseline_config": baseline_config,
                "time_budget_s": time_budget_s,
                "max_tokens_total": max_tokens_total,
            },
        )
        stamp = now()
        row.update(
            status=SessionStatus.running.value,
            owner_pid=os.getpid(),
            created_at=stamp,
            updated_at=stamp,
        )
        for _ in range(20):
            session_id = new_session_id()
            try:
                with self._journal._write() as conn:
                    self._journal.db["sessions"].insert({"id": session_id, **row})
                    if walk is not None:
                        link_epoch(conn, walk, session_id)
            except sqlite3.IntegrityError as err:
                if "sessions.id" in str(err):  # two sessions in one second drew the same suffix
                    continue
                raise
            return session_id
        raise RuntimeError("could not draw a unique session id in 20 attempts")

    def update(self, session_id: str, **fields: Any) -> SessionRecord:
        """Sets some fields of a session and returns it as now stored.

        Setting ``status`` to ``finished`` or ``failed`` also sets ``finished_at`` (unless given).

        Raises:
            ValueError: an unknown field name, or a value of the wrong type.
            NotFound: no such session.
        """
        unknown = sorted(set(fields) - SESSION_UPDATABLE)
        if unknown:
            raise ValueError(
                f"sessions.update: unknown field(s) {', '.join(unknown)}; "
                f"expected some of {', '.join(sorted(SESSION_UPDATABLE))}"
            )
        values = columns(SessionRecord, fields)
        ended = values.get("status") in (SessionStatus.finished, SessionStatus.failed)
        if ended and "finished_at" not in values:
            values["finished_at"] = now()
        values["updated_at"] = now()
        assignments = ", ".join(f"{name} = ?" for name in values)
        with self._journal._write() as conn:
            cur = conn.execute(
                f"UPDATE sessions SET {assignments} WHERE id = ?", (*values.values(), session_id)
            )
            if cur.rowcount == 0:
                raise session_not_found(self._journal, session_id)
        return self.get(session_id)

    def request_stop(self, session_id: str) -> bool:
        """Asks a running session to stop after its current trial; safe from any process.

        Sets status ``stopping`` if the session is ``running`` and journals a ``StopRequested``
        event either way. Returns whether the status changed.

        Raises:
            NotFound: no such session.
        """
        with self._journal._write() as conn:
            row = conn.execute("SELECT status FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if row is None:
                raise session_not_found(self._journal, session_id)
            applied = row[0] == SessionStatus.running
            if applied:
                conn.execute(
                    "UPDATE sessions SET status = ?, updated_at = ? WHERE id = ?",
                    (SessionStatus.stopping.value, now(), session_id),
                )
            insert_event(
                self._journal,
                session_id,
                STOP_REQUESTED,
                {"status_before": row[0], "applied": applied, "pid": os.getpid()},
            )
        return applied

    def list(self) -> list[SessionRecord]:
        """Every session, newest first."""
        rows = self._journal._rows(f"SELECT * FROM sessions {NEWEST_FIRST}")
        return [_session(r) for r in rows]

    def get(self, session_id: str) -> SessionRecord:
        """One session.

        Raises:
            NotFound: no such id (the message lists the most recent ids).
        """
        rows = self._journal._rows("SELECT * FROM sessions WHERE id = ?", (session_id,))
        if not rows:
            raise session_not_found(self._journal, session_id)
        return _session(rows[0])

    def stop_requested(self, session_id: str) -> bool:
        """Whether a stop was requested and the session has not finished yet."""
        rows = self._journal._rows("SELECT status FROM sessions WHERE id = ?", (session_id,))
        if not rows:
            raise session_not_found(self._journal, session_id)
        return rows[0]["status"] == SessionStatus.stopping.value
