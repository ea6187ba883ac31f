"""Opening the journal file safely, transactions, and every read query.

Concurrency model: one SQLite file in WAL mode. Readers (the CLI, the web page, another
process) never wait for the writer and always see the last committed state. Every write is
one ``BEGIN IMMEDIATE`` transaction: it takes the write lock before reading anything, so two
writers queue on the busy timeout instead of failing. (A deferred transaction that reads and
then writes can get ``SQLITE_BUSY`` at once in WAL mode, which no busy timeout can cure.)
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

from sqlite_utils import Database

from alphaloop.exceptions import JournalError, SessionNotFound, TrialNotFound
from alphaloop.journal import schema
from alphaloop.journal.models import (
    ChartReadRecord,
    ClipRecord,
    EventRecord,
    LLMUsageRecord,
    SessionRecord,
    TrialKind,
    TrialRecord,
)

DEFAULT_BUSY_TIMEOUT_S = 30.0
_SERIES = ("val_returns", "final_weights", "curve")
_WITHOUT_SERIES = ", ".join(
    f"NULL AS {name}" if name in _SERIES else name for name in TrialRecord.model_fields
)
_NEWEST_FIRST = "ORDER BY created_at DESC, rowid DESC"


def pid_alive(pid: int | None) -> bool:
    """Whether a process with this id exists (on this machine)."""
    if not pid or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    except OSError:
        return False
    return True


def _session(row: dict[str, Any]) -> SessionRecord:
    """A session as it is: one left ``running`` or ``stopping`` by a process that is gone (a
    kill -9, a power cut) reads as ``interrupted``, since nothing will ever move it on. The row
    itself keeps what its owner last wrote (a resumed session honours a pending stop)."""
    if row["status"] in ("running", "stopping") and not pid_alive(row["owner_pid"]):
        gone = f"its process {row['owner_pid']} ended while it was {row['status']}"
        row = {**row, "status": "interrupted", "error": row["error"] or gone}
    return SessionRecord.from_row(row)


class JournalReader:
    """An open journal file and the read half of :class:`~alphaloop.journal.Journal`.

    Args:
        path: the journal file. A missing (or empty) file becomes a new journal, parent
            directories included, unless ``create`` is False.
        create: refuse to create a new journal (a reader that only looks).
        busy_timeout_s: how long a write waits for another writer before giving up.

    Raises:
        JournalError: the file is not an alphaloop journal (it is left untouched), it was written
            by a newer alphaloop, or it does not exist and ``create`` is False.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        create: bool = True,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
    ) -> None:
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s
        # One connection may be shared by threads (LangGraph, a web server); transactions must
        # not interleave, so every use of it holds this lock.
        self._lock = threading.RLock()
        self._closed = False
        fresh = self._is_fresh()
        if fresh and not create:
            raise JournalError(f"no journal at {self.path}")
        if fresh:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        else:
            try:
                why = schema.sniff(self.path)
            except OSError as err:
                raise JournalError(f"cannot read the journal at {self.path}: {err}") from None
            if why:
                raise self._not_a_journal(why)
        conn = sqlite3.connect(self.path, timeout=busy_timeout_s, check_same_thread=False)
        try:
            self._prepare(conn, fresh)
        except BaseException:
            conn.close()
            raise
        self.db = Database(conn, recursive_triggers=False, execute_plugins=False)

    # --- opening -----------------------------------------------------------------------------

    def _is_fresh(self) -> bool:
        wal = self.path.with_name(self.path.name + "-wal")
        if not self.path.exists():
            return True
        return self.path.is_file() and self.path.stat().st_size == 0 and not wal.exists()

    def _not_a_journal(self, why: str) -> JournalError:
        return JournalError(f"{self.path} is not an alphaloop journal: {why}")

    def _prepare(self, conn: sqlite3.Connection, fresh: bool) -> None:
        """Checks (or creates) the schema, then switches to WAL. Writes nothing to a file that
        turns out not to be a journal: every check before ``journal_mode`` only reads."""
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
        with self._errors():
            if fresh:
                with _immediate(conn):
                    # Another process may have created it between our check and our lock.
                    if schema.version(conn) == 0 and not _has_tables(conn):
                        schema.create(conn)
            try:
                why, found = schema.problem(conn), schema.version(conn)
            except sqlite3.DatabaseError as err:
                if _is_locked(err):
                    raise
                raise self._not_a_journal(str(err)) from None
            if why:
                raise self._not_a_journal(why)
            if found > schema.SCHEMA_VERSION:
                raise JournalError(
                    f"the journal at {self.path} was written by a newer alphaloop "
                    f"(schema {found} > {schema.SCHEMA_VERSION}); upgrade alphaloop"
                )
            if found < schema.SCHEMA_VERSION:
                self._migrate(conn, found)
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA foreign_keys = ON")

    def _migrate(self, conn: sqlite3.Connection, found: int) -> None:
        try:
            with _immediate(conn):
                found = schema.version(conn)  # another process may have upgraded it meanwhile
                if found < schema.SCHEMA_VERSION:
                    schema.migrate(conn, found)
        except sqlite3.DatabaseError as err:
            if _is_locked(err):
                raise
            raise JournalError(
                f"could not upgrade the journal at {self.path} from schema {found} to "
                f"{schema.SCHEMA_VERSION}: {err}"
            ) from err

    def _locked(self) -> JournalError:
        return JournalError(
            f"the journal at {self.path} stayed locked by another writer for more than "
            f"{self.busy_timeout_s:g} s; is another alphaloop process stuck?"
        )

    # --- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Closes the connection (idempotent). The last connection to close folds the WAL back
        into the main file."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self.db.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"

    def _ensure_open(self) -> None:
        if self._closed:
            raise JournalError(f"the journal at {self.path} is closed")

    @property
    def _conn(self) -> sqlite3.Connection:
        self._ensure_open()
        return self.db.conn

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.OperationalError as err:
            if _is_locked(err):
                raise self._locked() from err
            raise

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: all of it is committed, or (on any error, even a kill) none."""
        with self._lock, self._errors(), _immediate(self._conn) as conn:
            yield conn

    def _rows(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> list[dict]:
        with self._lock, self._errors():
            self._ensure_open()
            return list(self.db.query(sql, params))

    # --- reads -------------------------------------------------------------------------------

    def list_sessions(self) -> list[SessionRecord]:
        """Every session, newest first."""
        rows = self._rows(f"SELECT * FROM sessions {_NEWEST_FIRST}")
        return [_session(r) for r in rows]

    def get_session(self, session_id: str) -> SessionRecord:
        """One session.

        Raises:
            SessionNotFound: no such id (the message lists the most recent ids).
        """
        rows = self._rows("SELECT * FROM sessions WHERE id = ?", (session_id,))
        if not rows:
            raise self._session_not_found(session_id)
        return _session(rows[0])

    def _session_not_found(self, session_id: str) -> SessionNotFound:
        recent = [r["id"] for r in self._rows(f"SELECT id FROM sessions {_NEWEST_FIRST} LIMIT 5")]
        hint = f"recent sessions: {', '.join(recent)}" if recent else "it has no sessions yet"
        return SessionNotFound(f"no session {session_id!r} in {self.path}; {hint}")

    def trials(
        self, session_id: str, kind: TrialKind | str | None = None, *, series: bool = True
    ) -> list[TrialRecord]:
        """The trials of a session in index order, optionally of one kind only.

        Args:
            session_id: the session.
            kind: only trials of this kind.
            series: False leaves the per-day series out (``val_returns``, ``final_weights`` and
                ``curve`` come back None). Parsing them is most of a read's cost (~0.4 ms a
                trial), and a reader of verdicts, configs and metrics needs none of them.
        """
        columns = "*" if series else _WITHOUT_SERIES
        sql = f"SELECT {columns} FROM trials WHERE session_id = ?"
        params: tuple[Any, ...] = (session_id,)
        if kind is not None:
            sql, params = sql + " AND kind = ?", (*params, TrialKind(kind).value)
        return [TrialRecord.from_row(r) for r in self._rows(sql + " ORDER BY idx", params)]

    def get_trial(self, trial_id: int) -> TrialRecord:
        """One trial by its journal id.

        Raises:
            TrialNotFound: no such id.
        """
        rows = self._rows("SELECT * FROM trials WHERE id = ?", (trial_id,))
        if not rows:
            raise TrialNotFound(f"no trial with id {trial_id!r} in {self.path}")
        return TrialRecord.from_row(rows[0])

    def trial_at(self, session_id: str, idx: int) -> TrialRecord:
        """One trial by its index within a session (the ``#`` a review lists).

        Raises:
            SessionNotFound: no such session.
            TrialNotFound: the session has no trial with that index (the message gives the range).
        """
        rows = self._rows(
            "SELECT * FROM trials WHERE session_id = ? AND idx = ?", (session_id, idx)
        )
        if rows:
            return TrialRecord.from_row(rows[0])
        self.get_session(session_id)
        span = self._rows(
            "SELECT MIN(idx) AS lo, MAX(idx) AS hi FROM trials WHERE session_id = ?", (session_id,)
        )[0]
        has = (
            f"its trials are #{span['lo']}..#{span['hi']}"
            if span["lo"] is not None
            else "it has no trials"
        )
        raise TrialNotFound(f"session {session_id} has no trial #{idx}; {has}")

    def completed_trials(
        self, kinds: tuple[TrialKind | str, ...] = (TrialKind.search, TrialKind.baseline)
    ) -> list[TrialRecord]:
        """Every trial of every session that finished with metrics (``keep`` or ``discard``), of
        the given kinds, in the order they finished. The default leaves out test-window rows, so
        every number compared is a validation number."""
        wanted = [TrialKind(k).value for k in kinds]
        if not wanted:
            return []
        marks = ", ".join("?" for _ in wanted)
        rows = self._rows(
            f"SELECT * FROM trials WHERE kind IN ({marks}) AND status IN ('keep', 'discard') "
            "AND metrics IS NOT NULL ORDER BY finished_at, id",
            tuple(wanted),
        )
        return [TrialRecord.from_row(r) for r in rows]

    def leaderboard(self, session_id: str, k: int = 10) -> list[TrialRecord]:
        """The ``k`` best finished search and baseline trials (validation window), best first:
        trials within the session's limits before those that break one (a discarded trial with
        a higher objective is no better than one that respects the limits), then by objective,
        ties broken by the earlier index. Test-window rows never appear."""
        if k < 1:
            raise ValueError(f"leaderboard needs k >= 1, got {k}")
        rows = self._rows(
            "SELECT * FROM trials WHERE session_id = ? AND kind IN ('search', 'baseline') "
            "AND status != 'running' AND objective IS NOT NULL "
            "ORDER BY violation IS NOT NULL, objective DESC, idx ASC LIMIT ?",
            (session_id, k),
        )
        return [TrialRecord.from_row(r) for r in rows]

    def best_trial(self, session_id: str) -> TrialRecord | None:
        """The best kept search trial; else the best baseline (one within the limits first);
        else None."""
        for where in (
            "kind = 'search' AND status = 'keep'",
            "kind = 'baseline' AND status IN ('keep', 'discard')",
        ):
            rows = self._rows(
                f"SELECT * FROM trials WHERE session_id = ? AND {where} "
                "AND objective IS NOT NULL "
                "ORDER BY violation IS NOT NULL, objective DESC, idx ASC LIMIT 1",
                (session_id,),
            )
            if rows:
                return TrialRecord.from_row(rows[0])
        return None

    def trial_seconds(self, session_id: str) -> float:
        """Seconds the session's finished trials took, all kinds together."""
        rows = self._rows(
            "SELECT COALESCE(SUM(elapsed_s), 0) AS s FROM trials WHERE session_id = ?",
            (session_id,),
        )
        return float(rows[0]["s"])

    def counted_trials(self, session_id: str) -> int:
        """Search trials that used up the budget (see :data:`~.models.COUNTED_STATUSES`)."""
        rows = self._rows(
            "SELECT COUNT(*) AS n FROM trials WHERE session_id = ? AND counted = 1", (session_id,)
        )
        return int(rows[0]["n"])

    def stop_requested(self, session_id: str) -> bool:
        """Whether a stop was requested and the session has not finished yet."""
        rows = self._rows("SELECT status FROM sessions WHERE id = ?", (session_id,))
        if not rows:
            raise self._session_not_found(session_id)
        return rows[0]["status"] == "stopping"

    def clips(self, trial_id: int) -> list[ClipRecord]:
        """The bounds clips of one trial, in the order they were made."""
        rows = self._rows("SELECT * FROM bounds_clips WHERE trial_id = ? ORDER BY id", (trial_id,))
        return [ClipRecord.from_row(r) for r in rows]

    def session_clips(self, session_id: str) -> list[ClipRecord]:
        """Every bounds clip of a session, by trial index."""
        rows = self._rows(
            "SELECT c.* FROM bounds_clips c JOIN trials t ON t.id = c.trial_id "
            "WHERE t.session_id = ? ORDER BY t.idx, c.id",
            (session_id,),
        )
        return [ClipRecord.from_row(r) for r in rows]

    def events(self, session_id: str | None, kind: str | None = None) -> list[EventRecord]:
        """A session's events (``None``: events of no session), oldest first, of one kind if
        given."""
        sql = "SELECT * FROM events WHERE session_id IS ?"
        params: tuple[Any, ...] = (session_id,)
        if kind is not None:
            sql, params = sql + " AND kind = ?", (*params, kind)
        return [EventRecord.from_row(r) for r in self._rows(sql + " ORDER BY id", params)]

    def llm_calls(self, session_id: str | None = None) -> list[LLMUsageRecord]:
        """Journaled LLM call attempts, oldest first: of one session, or all of them."""
        if session_id is None:
            rows = self._rows("SELECT * FROM llm_calls ORDER BY id")
        else:
            rows = self._rows(
                "SELECT * FROM llm_calls WHERE session_id = ? ORDER BY id", (session_id,)
            )
        return [LLMUsageRecord.from_row(r) for r in rows]

    def chart_reads(self, session_id: str | None = None) -> list[ChartReadRecord]:
        """Journaled chart readings, oldest first: of one session, or all of them."""
        if session_id is None:
            rows = self._rows("SELECT * FROM chart_reads ORDER BY id")
        else:
            rows = self._rows(
                "SELECT * FROM chart_reads WHERE session_id = ? ORDER BY id", (session_id,)
            )
        return [ChartReadRecord.from_row(r) for r in rows]


@contextmanager
def _immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            conn.rollback()
        raise
    conn.commit()


def _has_tables(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] > 0


def _is_locked(err: sqlite3.Error) -> bool:
    text = str(err).lower()
    return "locked" in text or "busy" in text
