"""Where ``alphaloop export optuna`` writes a study, through Optuna's public storage API only.

``--storage`` names a storage as optuna-dashboard reads it:

- a file path is an Optuna journal file (``JournalStorage``), the default form. An export into
  it is whole or absent (:mod:`alphaloop.ops._optuna_journal`).
- a URL is a database (``sqlite:///study.db``, ``postgresql://...``): Optuna's ``RDBStorage``,
  trials added by ``Study.add_trials``, which commits each on its own. An export stopped
  half-way leaves the trials it wrote, and running it again adds the rest (trials are matched
  by their journal id). Two exports of one study at once may both add a trial: each counts the
  study's trials after writing and is refused when the count is not its own, and the next
  export, finding a journal id twice, writes the study again whole.

What is written is the same in both (:mod:`alphaloop.ops._optuna_study`). ``Study.add_trials``
makes some 35 statements per trial on a database: 7 trials/s at 1,000 trials where a journal file
took 580 (``python -m benchmarks.bench_export``, docs/exports.md).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from alphaloop.exceptions import InvalidRequest
from alphaloop.ops._optuna_study import Wanted, Written, busy, sync
from alphaloop.settings import Settings

if TYPE_CHECKING:
    from optuna.storages import RDBStorage


class Target(NamedTuple):
    """Where a study goes: an Optuna journal file (``path``) or a database (``url``), and how
    messages name it (``shown``: the path as given, or the URL with its password hidden)."""

    shown: str
    path: Path | None = None
    url: str | None = None


def target_of(storage: str, settings: Settings) -> Target:
    """The storage ``storage`` names: a URL (``scheme://...``) is a database, anything else an
    Optuna journal file.

    Raises:
        InvalidRequest: a URL that is not one, or one naming alphaloop's own journal; a file
            that cannot be an Optuna journal (:func:`~alphaloop.ops._optuna_journal.check_file`).
    """
    if not storage.strip():
        raise InvalidRequest("--storage must not be blank: give a file such as study.log")
    if "://" not in storage:
        return journal_target(Path(storage).expanduser(), storage, settings)
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(storage)
    except ArgumentError as err:
        raise InvalidRequest(
            f"--storage {storage!r} is not a database URL Optuna can open ({err}); give a file "
            "such as study.log, or a URL such as sqlite:///study.db"
        ) from None
    shown = url.render_as_string(hide_password=True)
    # Optuna creates its tables in whatever database it opens: never in the journal's.
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        path = Path(url.database).expanduser()
        if path.exists() and path.resolve() == settings.journal_path.resolve():
            raise InvalidRequest(
                f"--storage {shown!r} is alphaloop's own journal; name another file, "
                "e.g. sqlite:///study.db"
            )
    return Target(shown, url=storage)


def journal_target(path: Path, shown: str, settings: Settings) -> Target:
    """An Optuna journal file at ``path``, named ``shown`` in messages; refused as
    :func:`target_of` says."""
    from alphaloop.ops import _optuna_journal

    _optuna_journal.check_file(path, shown, settings.journal_path)
    return Target(shown, path=path)


def write(target: Target, settings: Settings, want: Wanted) -> Written:
    """Brings study ``want.name`` at ``target`` in line with ``want`` (see the module doc).

    Raises:
        InvalidRequest: a storage Optuna refuses, or a study of that name holding something else
            than this session's export.
        Conflict: another export of the study, or another writer of the file, met this one; see
            the module doc for what is then written.
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # no "A new study created" on stderr
    if target.path is not None:
        from alphaloop.ops import _optuna_journal

        return _optuna_journal.write(
            target.path,
            target.shown,
            settings.scratch_dir,
            lambda storage: sync(storage, target.shown, want),
        )
    with _rdb(target) as storage, _refused_when_busy(target.shown, want.name):
        return sync(storage, target.shown, want)


@contextmanager
def _rdb(target: Target) -> Iterator[RDBStorage]:
    """Optuna's RDB storage at ``target``, its connections closed after the block."""
    from optuna.storages import RDBStorage

    for attempt in range(_OPEN_ATTEMPTS):
        try:
            rdb = RDBStorage(str(target.url))
            break
        except Exception as err:  # Optuna and SQLAlchemy refuse a URL in many ways; all say why
            if attempt + 1 < _OPEN_ATTEMPTS and _created_meanwhile(err):
                time.sleep(0.1)
                continue
            why = f"{type(err).__name__}: {err}".splitlines()[0]
            raise InvalidRequest(f"Optuna refused the storage {target.shown}: {why}") from err
    try:
        yield rdb
    finally:
        rdb.remove_session()
        rdb.engine.dispose()


_OPEN_ATTEMPTS = 3


def _created_meanwhile(err: Exception) -> bool:
    """Whether opening failed because another process created Optuna's tables in the same new
    database at the same moment (opening it again then finds them)."""
    from sqlalchemy.exc import IntegrityError

    return isinstance(err, IntegrityError) or "already exists" in str(err)


@contextmanager
def _refused_when_busy(shown: str, name: str) -> Iterator[None]:
    """A database lock another writer held too long, or the study created by another export
    while this one ran, as :class:`~alphaloop.exceptions.Conflict`."""
    from optuna.exceptions import DuplicatedStudyError, StorageInternalError
    from sqlalchemy.exc import OperationalError

    try:
        yield
    except (DuplicatedStudyError, StorageInternalError, OperationalError) as err:
        # Optuna says StorageInternalError for any database error: its cause says which
        if isinstance(err, DuplicatedStudyError) or "lock" in f"{err} {err.__cause__}".lower():
            raise busy(shown, name) from err
        raise
