"""Opening the journal file safely, its lifecycle and its transactions.

Concurrency model: one SQLite file in WAL mode. Readers (the CLI, the web page, another
process) never wait for the writer and always see the last committed state. Every write is
one ``BEGIN IMMEDIATE`` transaction: it takes the write lock before reading anything, so two
writers queue on the busy timeout instead of failing. (A deferred transaction that reads and
then writes can get ``SQLITE_BUSY`` at once in WAL mode, which no busy timeout can cure.)
"""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from alphaloop._lazy import without_modules
from alphaloop.exceptions import AlphaloopError, Unavailable
from alphaloop.journal import migrations, schema

if TYPE_CHECKING:  # imported on first use of ``db`` (see there)
    from sqlite_utils import Database


DEFAULT_BUSY_TIMEOUT_S = 30.0

# Journal files this process has open, by resolved path, with how many connections each. POSIX
# drops every fcntl lock a process holds on a file as soon as it closes *any* descriptor of that
# file, so reading a journal's header with a plain ``open()`` while a connection to it is open
# here would release that connection's locks, and another process closing its last connection
# would then take the WAL away from under it (https://www.sqlite.org/howtocorrupt.html, 2.2).
# A file already open in this process was checked when it was first opened.
_open_here: dict[Path, int] = {}
_open_here_lock = threading.Lock()


def _forget_parents_journals() -> None:
    # A forked child holds none of its parent's locks (fcntl locks are per process), and the
    # lock guarding the registry may have been held by another of the parent's threads.
    global _open_here_lock
    _open_here.clear()
    _open_here_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_parents_journals)


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


class JournalFile:
    """An open journal file: opening it safely, its lifecycle and its transactions.

    Args:
        path: the journal file. A missing (or empty) file becomes a new journal, parent
            directories included, unless ``create`` is False.
        create: refuse to create a new journal (a reader that only looks).
        busy_timeout_s: how long a write waits for another writer before giving up.

    Raises:
        AlphaloopError: the file is not an alphaloop journal (it is left untouched), it was written
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
        self._key = self.path.resolve()
        with _open_here_lock:  # checked and counted as one step: no connection opens between
            fresh = self._is_fresh()
            if fresh and not create:
                raise AlphaloopError(f"no journal at {self.path}")
            if fresh:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            elif not _open_here.get(self._key):
                self._sniff()
            _open_here[self._key] = _open_here.get(self._key, 0) + 1
        try:
            conn = sqlite3.connect(self.path, timeout=busy_timeout_s, check_same_thread=False)
            try:
                self._prepare(conn, fresh)
            except BaseException:
                conn.close()
                raise
        except BaseException:
            self._forget()
            raise
        self._sqlite = conn

    # --- opening -----------------------------------------------------------------------------

    def _sniff(self) -> None:
        """Refuses a file that is not a journal from its first bytes (only while no connection
        to it is open in this process: see ``_open_here``)."""
        try:
            why = schema.sniff(self.path)
        except OSError as err:
            raise AlphaloopError(f"cannot read the journal at {self.path}: {err}") from None
        if why:
            raise self._not_a_journal(why)

    def _forget(self) -> None:
        with _open_here_lock:
            left = _open_here.get(self._key, 0) - 1
            if left > 0:
                _open_here[self._key] = left
            else:
                _open_here.pop(self._key, None)

    def _is_fresh(self) -> bool:
        wal = self.path.with_name(self.path.name + "-wal")
        if not self.path.exists():
            return True
        return self.path.is_file() and self.path.stat().st_size == 0 and not wal.exists()

    def _not_a_journal(self, why: str) -> AlphaloopError:
        return AlphaloopError(f"{self.path} is not an alphaloop journal: {why}")

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
                raise AlphaloopError(
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
                    migrations.migrate(conn, found)
        except sqlite3.DatabaseError as err:
            if _is_locked(err):
                raise
            raise AlphaloopError(
                f"could not upgrade the journal at {self.path} from schema {found} to "
                f"{schema.SCHEMA_VERSION}: {err}"
            ) from err

    def _locked(self) -> Unavailable:
        return Unavailable(
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
                self._sqlite.close()
                self._forget()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"

    def _ensure_open(self) -> None:
        if self._closed:
            raise AlphaloopError(f"the journal at {self.path} is closed")

    @property
    def _conn(self) -> sqlite3.Connection:
        self._ensure_open()
        return self._sqlite

    @functools.cached_property
    def db(self) -> Database:
        """The connection as a sqlite-utils ``Database``, for writes of whole rows.

        Made on first use: reads go through plain ``sqlite3``, so a command that only reads
        (``alphaloop sessions``) does not import sqlite-utils (~40 ms of a 0.5 s start). And
        sqlite-utils imports pandas and numpy whenever they are installed, only to map their
        scalar types when it creates a table from rows; the journal's tables come from its own
        SQL and it writes Python values, so they are kept out (seconds and ~100 MB), unless
        the process has loaded them already (a trial).
        """
        with without_modules("pandas", "numpy"):
            from sqlite_utils import Database

        return Database(self._sqlite, recursive_triggers=False, execute_plugins=False)

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

    def _rows_in(self, sql: str, ids: Sequence[int]) -> list[dict]:
        """The rows of ``sql`` whose ``{ids}`` is each chunk of ``ids`` in turn, one query a
        chunk of 500 (SQLite's limit on bound parameters), in chunk order."""
        ids, out = list(ids), []
        for lo in range(0, len(ids), 500):
            chunk = tuple(ids[lo : lo + 500])
            out += self._rows(sql.format(ids=", ".join("?" for _ in chunk)), chunk)
        return out

    def _rows(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> list[dict]:
        with self._lock, self._errors():
            self._ensure_open()
            cursor = self._sqlite.execute(sql, params)
            names = [d[0] for d in cursor.description or ()]
            return [self._located(dict(zip(names, row, strict=True))) for row in cursor]

    @property
    def home(self) -> Path:
        """The alphaloop home this journal lives in (its directory)."""
        return self.path.parent.absolute()

    def stored_path(self, path: str | Path | None) -> str | None:
        """How a file's path is journaled: relative to the home when the file is in it, so a
        copied or moved home still finds its files; absolute otherwise."""
        if path is None:
            return None
        full = Path(path).absolute()
        try:
            return str(full.resolve().relative_to(self.home.resolve()))
        except ValueError:
            return str(full)

    def _located(self, row: dict) -> dict:
        """A row with its home-relative paths (:data:`HOME_PATHS`) made absolute for this home.
        A relative path not in the home is one journaled before paths were home-relative: it is
        left as it was (relative to where that alphaloop ran)."""
        for key in HOME_PATHS:
            value = row.get(key)
            if isinstance(value, str) and value and not Path(value).is_absolute():
                candidate = self.home / value
                if candidate.exists() or not Path(value).exists():
                    row[key] = str(candidate)
        return row


# Columns holding a file's path, journaled relative to the home (:meth:`JournalFile.stored_path`).
HOME_PATHS = ("policy_path", "path", "model_dir", "out_dir")


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
