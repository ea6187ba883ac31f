"""Walks (``walks``, ``walk_epochs``, ``walk_returns``): a repository the journal holds as
``journal.walks``.

A walk replays the research loop over history, one session per epoch. Its row holds what it was
started with and, once finished, its report; each epoch's session is linked to it in the
transaction that creates the session (:meth:`Sessions.create <.sessions.Sessions.create>` with
``walk``), so a walk killed at any instant finds the session of every epoch it began and never
starts one twice. ``walk_returns`` holds the daily returns of an epoch's search trials over the
periods after it, which none of them saw: what the walk's rules trade and its preference pairs
are labelled by. A walk left ``running`` by a process that is gone reads as ``interrupted``.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, ClassVar

from alphaloop.exceptions import Conflict, NotFound
from alphaloop.journal.codec import columns, dumps, now
from alphaloop.journal.connection import JournalFile, pid_alive
from alphaloop.journal.models import _Record
from alphaloop.journal.walk_report import EpochResult, WalkReport
from alphaloop.walk_spec import WalkSpec

_NEWEST_FIRST = "ORDER BY created_at DESC, rowid DESC"


class WalkStatus(StrEnum):
    """Where a walk is. ``interrupted`` is how a ``running`` row reads once its process is
    gone; it is never written."""

    running = "running"
    finished = "finished"
    failed = "failed"
    interrupted = "interrupted"


class WalkRecord(_Record):
    """One walk: its goal, what it was started with (``spec``, typed: its resume needs nothing
    else), where it is and, once finished, its report."""

    json_fields: ClassVar[frozenset[str]] = frozenset({"spec", "report"})

    id: str
    goal: str
    spec: WalkSpec
    status: WalkStatus
    owner_pid: int | None = None
    created_at: str
    updated_at: str
    finished_at: str | None = None
    report: WalkReport | None = None
    error: str | None = None


class WalkEpoch(_Record):
    """An epoch of a walk: its session, the period it trades and, once traded, its result."""

    json_fields: ClassVar[frozenset[str]] = frozenset({"result"})

    walk_id: str
    epoch: int
    session_id: str
    first_day: str
    last_day: str
    result: EpochResult | None = None
    created_at: str


# Fields ``update`` may set.
WALK_UPDATABLE = frozenset({"status", "owner_pid", "finished_at", "report", "error"})


def new_walk_id() -> str:
    """A short, readable, sortable id: ``w-<yyyymmdd-hhmmss>-<4 hex>`` (UTC)."""
    return f"w-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def _walk(row: dict[str, Any]) -> WalkRecord:
    if row["status"] == WalkStatus.running and not pid_alive(row["owner_pid"]):
        gone = f"its process {row['owner_pid']} ended while it was running"
        row = {**row, "status": WalkStatus.interrupted.value, "error": row["error"] or gone}
    return WalkRecord.from_row(row)


def walk_not_found(journal: JournalFile, walk_id: str) -> NotFound:
    """The error for a walk id that names nothing, listing the most recent ids."""
    recent = [r["id"] for r in journal._rows(f"SELECT id FROM walks {_NEWEST_FIRST} LIMIT 5")]
    hint = f"recent walks: {', '.join(recent)}" if recent else "the journal has no walks yet"
    return NotFound(f"no walk {walk_id!r}; {hint}")


def link_epoch(conn: sqlite3.Connection, walk: tuple[str, int, str, str], session_id: str) -> None:
    """Links a new session to its walk's epoch ``(walk_id, epoch, first_day, last_day)``, in the
    transaction that creates the session.

    Raises:
        sqlite3.IntegrityError: the epoch has a session already.
    """
    walk_id, epoch, first_day, last_day = walk
    conn.execute(
        "INSERT INTO walk_epochs (walk_id, epoch, session_id, first_day, last_day, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (walk_id, epoch, session_id, first_day, last_day, now()),
    )


class Walks:
    """Reads and writes of the walk tables through the journal's connection."""

    def __init__(self, journal: JournalFile) -> None:
        self._journal = journal

    def create(self, *, goal: str, spec: WalkSpec, walk_id: str | None = None) -> str:
        """Journals a new walk, ``running`` and owned by this process; returns its id (drawn
        here, or ``walk_id`` when the caller drew it, as a server does to answer with it).

        Raises:
            Conflict: ``walk_id`` names a walk already journaled.
        """
        stamp = now()
        for _ in range(20):
            drawn = walk_id is None
            walk_id = new_walk_id() if drawn else walk_id
            try:
                with self._journal._write() as conn:
                    conn.execute(
                        "INSERT INTO walks (id, goal, spec, status, owner_pid, created_at, "
                        "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (
                            walk_id,
                            goal,
                            dumps(spec.model_dump(mode="json")),
                            "running",
                            os.getpid(),
                            stamp,
                            stamp,
                        ),
                    )
            except sqlite3.IntegrityError as err:
                if "walks.id" not in str(err):
                    raise
                if not drawn:
                    raise Conflict(f"walk {walk_id} exists already") from None
                walk_id = None  # two walks in one second drew the same suffix
                continue
            return walk_id
        raise RuntimeError("could not draw a unique walk id in 20 attempts")

    def get(self, walk_id: str) -> WalkRecord:
        """One walk.

        Raises:
            NotFound: no such id (the message lists the most recent ids).
        """
        rows = self._journal._rows("SELECT * FROM walks WHERE id = ?", (walk_id,))
        if not rows:
            raise walk_not_found(self._journal, walk_id)
        return _walk(rows[0])

    def list(self) -> list[WalkRecord]:
        """Every walk, newest first."""
        return [_walk(r) for r in self._journal._rows(f"SELECT * FROM walks {_NEWEST_FIRST}")]

    def update(self, walk_id: str, **fields: Any) -> WalkRecord:
        """Sets some of :data:`WALK_UPDATABLE` and returns the walk as now stored; ``finished``
        or ``failed`` also sets ``finished_at``.

        Raises:
            ValueError: an unknown field, or a value of the wrong type.
            NotFound: no such walk.
        """
        unknown = sorted(set(fields) - WALK_UPDATABLE)
        if unknown:
            raise ValueError(f"walks.update: unknown field(s) {', '.join(unknown)}")
        values = columns(WalkRecord, fields)
        if values.get("status") in (WalkStatus.finished, WalkStatus.failed):
            values.setdefault("finished_at", now())
        values["updated_at"] = now()
        assignments = ", ".join(f"{name} = ?" for name in values)
        with self._journal._write() as conn:
            cur = conn.execute(
                f"UPDATE walks SET {assignments} WHERE id = ?", (*values.values(), walk_id)
            )
            if cur.rowcount == 0:
                raise walk_not_found(self._journal, walk_id)
        return self.get(walk_id)

    def claim(self, walk_id: str) -> WalkRecord:
        """Makes this process the owner of a walk that no live process runs, ``running``.

        Raises:
            NotFound: no such walk.
            Conflict: a live process runs it (the message says which).
        """
        with self._journal._write() as conn:
            row = conn.execute(
                "SELECT status, owner_pid FROM walks WHERE id = ?", (walk_id,)
            ).fetchone()
            if row is None:
                raise walk_not_found(self._journal, walk_id)
            status, pid = row
            if status == WalkStatus.running and pid != os.getpid() and pid_alive(pid):
                raise Conflict(f"walk {walk_id} is being run by process {pid}; wait for it")
            conn.execute(
                "UPDATE walks SET status = 'running', owner_pid = ?, error = NULL, "
                "updated_at = ? WHERE id = ?",
                (os.getpid(), now(), walk_id),
            )
        return self.get(walk_id)

    def epochs(self, walk_id: str) -> list[WalkEpoch]:
        """The epochs begun so far, in order."""
        rows = self._journal._rows(
            "SELECT * FROM walk_epochs WHERE walk_id = ? ORDER BY epoch", (walk_id,)
        )
        return [WalkEpoch.from_row(r) for r in rows]

    def epoch_of(self, session_id: str) -> WalkEpoch | None:
        """The walk epoch a session researched, or None for a session of its own."""
        rows = self._journal._rows("SELECT * FROM walk_epochs WHERE session_id = ?", (session_id,))
        return WalkEpoch.from_row(rows[0]) if rows else None

    def set_result(self, walk_id: str, epoch: int, result: EpochResult) -> None:
        """Journals what an epoch traded (again: the same result, written by a resumed run)."""
        with self._journal._write() as conn:
            conn.execute(
                "UPDATE walk_epochs SET result = ? WHERE walk_id = ? AND epoch = ?",
                (dumps(result.model_dump(mode="json")), walk_id, epoch),
            )

    def add_returns(self, walk_id: str, epoch: int, returns: dict[int, list[float]]) -> None:
        """Journals search trials' daily returns over epoch ``epoch``'s period (trial id ->
        returns); a trial's returns over a period already journaled are kept as they were."""
        stamp = now()
        with self._journal._write() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO walk_returns (walk_id, trial_id, epoch, returns, "
                "created_at) VALUES (?, ?, ?, ?, ?)",
                [(walk_id, t, epoch, dumps(r), stamp) for t, r in returns.items()],
            )

    def returns(self, walk_id: str) -> dict[tuple[int, int], list[float]]:
        """Every journaled ``(trial id, epoch) -> daily returns over that epoch's period``."""
        rows = self._journal._rows(
            "SELECT trial_id, epoch, returns FROM walk_returns WHERE walk_id = ?", (walk_id,)
        )
        return {(r["trial_id"], r["epoch"]): json.loads(r["returns"]) for r in rows}
