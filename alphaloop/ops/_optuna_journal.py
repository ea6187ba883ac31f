"""An export into an Optuna journal file (``JournalStorage`` over ``JournalFileBackend``), whole
or not at all.

Optuna's journal storage appends one log entry per storage call, each under the file's lock
with its own ``fsync``. Here the calls run against the file as it was when the export read it,
their entries are kept in memory (:class:`_Staged`, a ``BaseJournalBackend``), and
:meth:`_Staged.commit` appends them in one ``append_logs`` under the journal's own lock
(``FILE.lock``, which every Optuna writer of the file takes), after checking that nobody
appended meanwhile. Bad input, a failure half-way or another writer appending at the same moment
leaves the file as it was; in the last case the export reads the file again and retries
(:data:`ATTEMPTS` times, then :class:`~alphaloop.exceptions.Conflict`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optuna.storages.journal import BaseJournalBackend, JournalFileBackend, JournalFileOpenLock

from alphaloop.exceptions import Conflict, InvalidRequest

if TYPE_CHECKING:
    from optuna.storages import BaseStorage

    from alphaloop.ops._optuna_study import Written

ATTEMPTS = 3  # reads of a file another writer keeps appending to, before giving up
_SQLITE_HEADER = b"SQLite format 3\x00"


def check_file(path: Path, shown: str, journal_path: Path) -> None:
    """Refuses what cannot become an Optuna journal file at ``path``: alphaloop's own journal, a
    directory, a missing directory, a SQLite file, a file whose last line is cut, or one whose
    lines Optuna cannot read."""
    if path.exists() and path.resolve() == journal_path.resolve():
        raise InvalidRequest(f"{shown!r} is alphaloop's own journal; name another file")
    if path.is_dir():
        raise InvalidRequest(f"{shown!r} is a directory; name a file in it, e.g. study.log")
    if not path.exists():
        if not path.parent.is_dir():
            raise InvalidRequest(f"no directory {str(path.parent)!r} for {shown!r}")
        return
    with path.open("rb") as f:
        head = f.read(len(_SQLITE_HEADER))
    if head == _SQLITE_HEADER:
        raise InvalidRequest(
            f"{shown!r} is a SQLite database, not an Optuna journal file: "
            f"give it as sqlite:///{shown}"
        )
    _check_whole(path, shown)


def _check_whole(path: Path, shown: str) -> None:
    """Refuses a file whose last line is cut: Optuna skips such a line, and anything appended
    after it would join it into one unreadable line."""
    size = path.stat().st_size
    if size:
        with path.open("rb") as f:
            f.seek(size - 1)
            whole = f.read(1) == b"\n"
        if not whole:
            raise InvalidRequest(f"{shown!r} is not an Optuna journal file (its last line is cut)")


def write(
    path: Path, shown: str, scratch: Path, writes: Callable[[BaseStorage], Written]
) -> Written:
    """Runs ``writes`` on the journal file at ``path`` and appends what it wrote, whole (see the
    module doc). ``scratch``: a folder of this process's own (see :meth:`_Staged.commit`).

    Raises:
        InvalidRequest: lines Optuna cannot read.
        Conflict: other writers kept appending to the file.
    """
    from optuna.storages import JournalStorage

    for _ in range(ATTEMPTS):
        staged = _Staged(path, shown)
        try:
            storage = JournalStorage(staged)
        except (ValueError, KeyError, TypeError) as err:  # what Optuna's replay raises
            why = f"{type(err).__name__}: {err}".splitlines()[0]
            raise InvalidRequest(f"{shown!r} is not an Optuna journal file ({why})") from None
        done = writes(storage)
        if staged.commit(scratch):
            return done
    raise Conflict(
        f"other writers kept appending to {shown!r} while this export ran: nothing was "
        "written; run the export again"
    )


class _Staged(BaseJournalBackend):
    """An Optuna journal file as it was when first read, and the log entries of this export,
    held in memory until :meth:`commit` appends them."""

    def __init__(self, path: Path, shown: str) -> None:
        self._path, self._shown = path, shown
        self._n_file: int | None = None  # the file's entries, once read
        self._size: int | None = None  # its size then (None: no file)
        self.staged: list[dict[str, Any]] = []

    def read_logs(self, log_number_from: int) -> Iterator[dict[str, Any]]:
        if self._n_file is None:  # the first read, from 0: the file as it is now
            self._n_file = 0
            self._size = _size(self._path)
            # Optuna's backend creates the file when it is made: only for one that exists.
            if self._size is not None:
                for log in JournalFileBackend(str(self._path)).read_logs(0):
                    self._n_file += 1
                    yield log
                # Optuna skips a last line it cannot parse (one being written, it assumes):
                # anything appended after it would make the file unreadable.
                with self._path.open("rb") as f:
                    lines = f.read(self._size).count(b"\n")
                if lines > self._n_file:
                    raise ValueError(f"line {self._n_file + 1} is not a journal entry")
        yield from self.staged[max(0, log_number_from - self._n_file) :]

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        self.staged.extend(logs)

    def commit(self, scratch: Path) -> bool:
        """Appends the staged entries to the file under its lock if the file still holds what
        was read and nothing more; False, having written nothing, if it does not. An append
        that fails is cut back off the file."""
        if not self.staged:
            return True
        lock = JournalFileOpenLock(str(self._path))
        lock.acquire()
        try:
            if self._moved():
                return False
            size = self._size
            if size:
                _check_whole(self._path, self._shown)
            # The file's lock is held here. The backend takes a lock of its own around its
            # append: one nobody else takes, a file in this process's scratch folder.
            scratch.mkdir(parents=True, exist_ok=True)
            own = JournalFileOpenLock(str(scratch / f"optuna-append-{uuid.uuid4().hex}"))
            try:
                JournalFileBackend(str(self._path), lock_obj=own).append_logs(self.staged)
            except BaseException:
                if size is None:
                    self._path.unlink(missing_ok=True)
                else:
                    os.truncate(self._path, size)
                raise
            return True
        finally:
            lock.release()

    def _moved(self) -> bool:
        """Whether the file changed since this export read it (Optuna only ever appends: a
        file of the same size holds the same entries)."""
        return _size(self._path) != self._size


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None
