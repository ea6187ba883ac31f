"""Optuna's side of ``alphaloop export optuna``: opening the storage, and writing a study in one
transaction.

Optuna's ``RDBStorage`` commits after every call, and ``Study.add_trials`` checks, writes and
reads back each param, value and attr of each trial on its own: about 35 statements per trial,
most of an export's time (the per-trial commits cost less). Here:

- every storage call of one export shares one session and one transaction
  (:func:`one_transaction`): the database commits once, and an export that fails or is refused
  leaves the storage as it was;
- the study, its user attrs, and the in-place updates of trials exported while running are
  written through Optuna's storage API;
- new trials are written by :func:`add_trials` in a few ``executemany`` statements through
  Optuna's own table models and encoders. That relies on Optuna's schema: it is used only on a
  storage of a revision in :data:`KNOWN_SCHEMAS` (Optuna refuses to open any other than its
  own), anything else goes through ``Study.add_trials``, and the tests read both back and
  compare them trial by trial.

Two exports of one study at once cannot both write it: the first write of an export (creating
the study, or stamping ``alphaloop_exported_at`` on it) takes the database's write lock (SQLite)
or the row's (PostgreSQL) until it commits, and the export reads which trials the study holds
only after it. A second export waits for the lock, up to :data:`LOCK_WAIT_S` on SQLite, then
reads what the first wrote (and adds nothing twice), or is refused with
:class:`~alphaloop.exceptions.Conflict` having written nothing. Tested on SQLite.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from alphaloop.exceptions import Conflict, InvalidRequest
from alphaloop.settings import Settings

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.storages import RDBStorage
    from optuna.study import Study
    from optuna.trial import FrozenTrial
    from sqlalchemy.orm import Session

# The user attrs naming what a trial and a study are in the journal, and when it was exported.
TRIAL_ID_ATTR = "alphaloop_trial_id"
SESSION_ID_ATTR = "alphaloop_session_id"
EXPORTED_AT_ATTR = "alphaloop_exported_at"
# The schemas (Optuna's alembic revisions) add_trials writes: the one Optuna 3.2 to 5.0 create,
# checked against Optuna 5.0's models by tests/ops/test_export.py. An Optuna with a newer schema
# goes through Study.add_trials, and that test fails until its rows are compared again.
KNOWN_SCHEMAS = frozenset({"v3.2.0.a"})
LOCK_WAIT_S = 10.0  # how long an export waits for another writer of a SQLite storage


def shown_url(storage: str) -> str:
    """``storage`` with its password hidden, or InvalidRequest when it is not a URL at all."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(storage).render_as_string(hide_password=True)
    except ArgumentError as err:
        raise InvalidRequest(
            f"--storage {storage!r} is not a database URL Optuna can open ({err}); "
            "give one like sqlite:///study.db or postgresql://user@host/db"
        ) from None


def refuse_journal_file(storage: str, settings: Settings) -> None:
    """Optuna creates its tables in whatever database it opens: never in the journal's."""
    from sqlalchemy.engine import make_url

    url = make_url(storage)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        target = Path(url.database).expanduser()
        if target.exists() and target.resolve() == settings.journal_path.resolve():
            raise InvalidRequest(
                f"--storage {storage!r} is alphaloop's own journal; name another file, "
                "e.g. sqlite:///study.db"
            )


@contextmanager
def open_storage(storage: str, shown: str) -> Iterator[RDBStorage]:
    """Optuna's RDB storage at ``storage``, its connections closed after the block."""
    import optuna
    from optuna.storages import RDBStorage
    from sqlalchemy.engine import make_url

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    engine_kwargs: dict[str, Any] = {}
    if make_url(storage).get_backend_name() == "sqlite":
        engine_kwargs["connect_args"] = {"timeout": LOCK_WAIT_S}
    try:
        with _one_creator(storage):
            rdb = RDBStorage(storage, engine_kwargs=engine_kwargs)
    except Exception as err:  # Optuna and SQLAlchemy refuse a URL in many ways; all say why
        raise InvalidRequest(
            f"Optuna refused the storage {shown}: {type(err).__name__}: {err}".splitlines()[0]
        ) from err
    try:
        yield rdb
    finally:
        with suppress(Exception):
            rdb.remove_session()
        rdb.engine.dispose()


@contextmanager
def _one_creator(storage: str) -> Iterator[None]:
    """Holds an exclusive ``flock`` on the directory of a SQLite study file while Optuna opens
    it: Optuna creates its tables and stamps their revision when it opens a new file, and two
    exports doing so at once fail ("table studies already exists"). The file itself is not
    locked: closing any descriptor of it would drop SQLite's own locks in this process."""
    from sqlalchemy.engine import make_url

    url = make_url(storage)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        yield
        return
    try:
        fd = os.open(Path(url.database).expanduser().parent, os.O_RDONLY)
    except OSError:  # a missing directory: Optuna says so
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


@cache
def _shared_session() -> type[Session]:
    """The class of the one session every storage call of an export runs in (built on first
    use: SQLAlchemy is imported by what exports, not by what imports this module)."""
    from sqlalchemy.orm import Session

    class Shared(Session):
        """Optuna commits and closes a session after each call; here a commit only flushes the
        call's rows and a close keeps the session open, so the calls share a transaction that
        :func:`one_transaction` ends. Optuna rolls back on an error, and on a duplicate row it
        may go on: the rollback is remembered, so such an export is refused whole instead of
        committing what followed it."""

        rolled_back = False

        def commit(self) -> None:
            self.flush()

        def close(self) -> None:
            pass

        def rollback(self) -> None:
            self.rolled_back = True
            super().rollback()

    return Shared


@contextmanager
def one_transaction(rdb: RDBStorage, shown: str, name: str) -> Iterator[None]:
    """Every call to ``rdb`` in the block runs in one transaction, committed when the block
    ends and rolled back whole when it raises.

    Raises:
        Conflict: Optuna rolled back a call and went on (a row another process wrote
            meanwhile): nothing was written.
    """
    from sqlalchemy import orm
    from sqlalchemy.orm import Session

    own = rdb.scoped_session
    # Without autoflush a call's rows are written together when it ends, not one by one
    # before each read Optuna makes while adding them (it flushes itself where it needs ids).
    rdb.scoped_session = orm.scoped_session(
        orm.sessionmaker(bind=rdb.engine, class_=_shared_session(), autoflush=False)
    )
    session = rdb.scoped_session()
    try:
        yield
        if session.rolled_back:  # type: ignore[attr-defined]
            raise _busy(shown, name)
        Session.commit(session)
    except BaseException:
        Session.rollback(session)
        raise
    finally:
        Session.close(session)
        rdb.scoped_session = own


def _busy(shown: str, name: str) -> Conflict:
    return Conflict(
        f"another export is writing the study {name!r} in {shown}: nothing was written; "
        "run this export again once it is done"
    )


@contextmanager
def _refused_when_busy(shown: str, name: str) -> Iterator[None]:
    """A lock another writer held too long, or the study created by another export while this
    one ran, as :class:`Conflict`."""
    from optuna.exceptions import DuplicatedStudyError, StorageInternalError
    from sqlalchemy.exc import OperationalError

    try:
        yield
    except (DuplicatedStudyError, StorageInternalError, OperationalError) as err:
        # Optuna says StorageInternalError for any database error: its cause says which
        if isinstance(err, DuplicatedStudyError) or "lock" in f"{err} {err.__cause__}".lower():
            raise _busy(shown, name) from err
        raise


def write(
    rdb: RDBStorage,
    shown: str,
    name: str,
    session_id: str,
    study_attrs: dict[str, Any],
    wanted: list[FrozenTrial],
) -> tuple[int, int, int, bool]:
    """Brings study ``name`` in line with ``wanted``, in one transaction: (added, completed,
    unchanged, rewritten), as :class:`~alphaloop.ops.export.OptunaExport` counts them.

    Raises:
        InvalidRequest: a study of that name holds something else than this session's export.
        Conflict: another export of the study is writing it (see the module doc).
    """
    from optuna.exceptions import DuplicatedStudyError

    with _refused_when_busy(shown, name):
        try:
            return _write_once(rdb, shown, name, session_id, study_attrs, wanted)
        except DuplicatedStudyError:
            # Another export created the study after this one looked for it, and committed
            # it while this one waited for the lock: this export is now an update of it.
            return _write_once(rdb, shown, name, session_id, study_attrs, wanted)


def _write_once(
    rdb: RDBStorage,
    shown: str,
    name: str,
    session_id: str,
    study_attrs: dict[str, Any],
    wanted: list[FrozenTrial],
) -> tuple[int, int, int, bool]:
    # Ownership is read before the transaction: on MySQL a transaction reads the snapshot of
    # its first read, and the study's trials must be read after the lock, not before.
    study = _own_study(rdb, name, session_id)
    with one_transaction(rdb, shown, name):
        stamp = {EXPORTED_AT_ATTR: datetime.now(UTC).isoformat()}
        if study is None:
            return _create(rdb, name, study_attrs | stamp, wanted), 0, 0, False
        study.set_user_attr(EXPORTED_AT_ATTR, stamp[EXPORTED_AT_ATTR])  # the lock, first
        return _update(rdb, study, name, study_attrs | stamp, wanted)


def _update(
    rdb: RDBStorage, study: Study, name: str, study_attrs: dict[str, Any], wanted: list[FrozenTrial]
) -> tuple[int, int, int, bool]:
    study_id = rdb.get_study_id_from_name(name)
    have: dict[Any, Any]
    if bulk_writes(rdb):
        have = _stored_trials(rdb, study_id)
    else:
        have = {t.user_attrs.get(TRIAL_ID_ATTR): t for t in study.get_trials(deepcopy=False)}
    ids = {t.user_attrs[TRIAL_ID_ATTR] for t in wanted}
    stale = bool(set(have) - ids) or any(
        have[i].state.is_finished() and _differs(have[i], t)
        for t in wanted
        if (i := t.user_attrs[TRIAL_ID_ATTR]) in have
    )
    if stale and bulk_writes(rdb):
        _clear(rdb, study_id)  # the same study, its trials written again from number 0
        _fill(rdb, study, study_attrs, wanted)
        return len(wanted), 0, 0, True
    if stale:
        import optuna

        optuna.delete_study(study_name=name, storage=rdb)
        return _create(rdb, name, study_attrs, wanted), 0, 0, True
    completed = unchanged = 0
    for t in wanted:
        old = have.get(t.user_attrs[TRIAL_ID_ATTR])
        if old is None:
            continue
        if _differs(old, t):
            tid = rdb.get_trial_id_from_study_id_trial_number(study_id, old.number)
            _complete(rdb, tid, old, t)
            completed += 1
        else:
            unchanged += 1
    new = [t for t in wanted if t.user_attrs[TRIAL_ID_ATTR] not in have]
    _fill(rdb, study, study_attrs, new)
    return len(new), completed, unchanged, False


class _Stored(NamedTuple):
    """What an update compares of a trial the study holds (a ``FrozenTrial``'s fields)."""

    number: int
    trial_id: int
    state: Any
    values: list[float] | None
    params: dict[str, Any]
    user_attrs: dict[str, Any]
    intermediate_values: dict[int, float]


def _stored_trials(rdb: RDBStorage, study_id: int) -> dict[Any, _Stored]:
    """The study's trials by their journal id, read a table at a time and decoded by Optuna's
    own functions (``Study.get_trials`` builds each trial's objects one by one: a re-export of
    an unchanged study took twice a first export)."""
    from optuna.distributions import json_to_distribution
    from optuna.storages._rdb import models
    from sqlalchemy import select

    session = rdb.scoped_session()
    t = models.TrialModel.__table__
    mine = select(t.c.trial_id).where(t.c.study_id == study_id)
    trials = {
        r.trial_id: _Stored(r.number, r.trial_id, r.state, None, {}, {}, {})
        for r in session.execute(
            select(t.c.trial_id, t.c.number, t.c.state).where(t.c.study_id == study_id)
        )
    }

    def rows(model: Any, *cols: str) -> Any:
        table = model.__table__
        chosen = select(table.c.trial_id, *(table.c[c] for c in cols))
        return session.execute(chosen.where(table.c.trial_id.in_(mine)))

    dists: dict[str, Any] = {}
    for tid, name, value, text in rows(
        models.TrialParamModel, "param_name", "param_value", "distribution_json"
    ):
        dist = dists.get(text) or dists.setdefault(text, json_to_distribution(text))
        trials[tid].params[name] = dist.to_external_repr(value)
    values = models.TrialValueModel
    by_objective: dict[int, dict[int, float]] = {}
    for tid, objective, value, kind in rows(values, "objective", "value", "value_type"):
        by_objective.setdefault(tid, {})[objective] = values.stored_repr_to_value(value, kind)
    steps = models.TrialIntermediateValueModel
    for tid, step, value, kind in rows(
        steps, "step", "intermediate_value", "intermediate_value_type"
    ):
        trials[tid].intermediate_values[step] = steps.stored_repr_to_intermediate_value(value, kind)
    for tid, key, text in rows(models.TrialUserAttributeModel, "key", "value_json"):
        trials[tid].user_attrs[key] = json.loads(text)
    out: dict[Any, _Stored] = {}
    for tid, trial in trials.items():
        objectives = by_objective.get(tid)
        if objectives:
            trial = trial._replace(values=[objectives[k] for k in sorted(objectives)])
        out[trial.user_attrs.get(TRIAL_ID_ATTR)] = trial
    return out


def _own_study(rdb: RDBStorage, name: str, session_id: str) -> Study | None:
    """Study ``name`` when it holds this session's export, None when there is none; refuses a
    study of that name holding anything else."""
    import optuna

    try:
        study = optuna.load_study(study_name=name, storage=rdb)
    except KeyError:
        return None
    owner = study.user_attrs.get(SESSION_ID_ATTR)
    if owner != session_id:
        what = f"session {owner}'s export" if owner else "a study alphaloop did not write"
        raise InvalidRequest(
            f"the study {name!r} already exists there and holds {what}; choose another --study-name"
        )
    return study


def _create(
    rdb: RDBStorage, name: str, study_attrs: dict[str, Any], trials: list[FrozenTrial]
) -> int:
    import optuna

    study = optuna.create_study(storage=rdb, study_name=name, direction="maximize")
    _fill(rdb, study, study_attrs, trials)
    return len(trials)


def _fill(
    rdb: RDBStorage, study: Study, study_attrs: dict[str, Any], trials: list[FrozenTrial]
) -> None:
    for key, value in study_attrs.items():
        study.set_user_attr(key, value)
    if trials and bulk_writes(rdb):
        add_trials(rdb, rdb.get_study_id_from_name(study.study_name), trials)
    else:
        study.add_trials(trials)


def bulk_writes(rdb: RDBStorage) -> bool:
    """Whether ``rdb`` holds Optuna's tables as :func:`add_trials` was written against."""
    return rdb.get_current_version() in KNOWN_SCHEMAS


def add_trials(rdb: RDBStorage, study_id: int, trials: list[FrozenTrial]) -> None:
    """Adds ``trials`` to study ``study_id`` after its last, as ``Study.add_trials`` would, in
    a few statements: the trials through Optuna's own ``TrialModel`` (its numbering and its
    clock), then their params, values, intermediate values and user attrs, one ``executemany``
    per table, each row encoded by Optuna's own functions. Runs in the export's transaction,
    after its lock: no other writer can number a trial meanwhile.

    ``Study.add_trials`` makes about 35 statements per trial (each attribute checked, written
    and read back one by one) and that, not the disk, is most of an export's time.
    """
    from optuna.distributions import check_distribution_compatibility, distribution_to_json
    from optuna.storages._rdb import models
    from sqlalchemy import func, insert, select

    session = rdb.scoped_session()
    first = session.scalar(
        select(func.count(models.TrialModel.trial_id)).where(models.TrialModel.study_id == study_id)
    )
    known = _distributions(session, study_id)
    made = []
    for number, t in enumerate(trials, start=first):
        for name, dist in t.distributions.items():
            if name in known:
                check_distribution_compatibility(known[name], dist)
            known.setdefault(name, dist)
        made.append(
            models.TrialModel(
                study_id=study_id,
                number=number,
                state=t.state,
                datetime_start=t.datetime_start,
                datetime_complete=t.datetime_complete,
            )
        )
    session.add_all(made)
    session.flush()  # the trials' ids, which their rows below name
    values = models.TrialValueModel
    steps = models.TrialIntermediateValueModel
    rows: dict[Any, list[dict[str, Any]]] = {
        models.TrialParamModel: [],
        values: [],
        steps: [],
        models.TrialUserAttributeModel: [],
        models.TrialSystemAttributeModel: [],
    }
    for m, t in zip(made, trials, strict=True):
        tid = m.trial_id
        rows[models.TrialParamModel] += [
            {"trial_id": tid, "param_name": name,
             "param_value": t.distributions[name].to_internal_repr(value),
             "distribution_json": distribution_to_json(t.distributions[name])}
            for name, value in t.params.items()
        ]  # fmt: skip
        for objective, value in enumerate(t.values or ()):
            stored, kind = values.value_to_stored_repr(value)
            rows[values].append(
                {"trial_id": tid, "objective": objective, "value": stored, "value_type": kind}
            )
        for step, value in t.intermediate_values.items():
            stored, kind = steps.intermediate_value_to_stored_repr(value)
            rows[steps].append({"trial_id": tid, "step": step, "intermediate_value": stored,
                                "intermediate_value_type": kind})  # fmt: skip
        for model, attrs in (
            (models.TrialUserAttributeModel, t.user_attrs),
            (models.TrialSystemAttributeModel, t.system_attrs),
        ):
            rows[model] += [
                {"trial_id": tid, "key": key, "value_json": json.dumps(value)}
                for key, value in attrs.items()
            ]
    for model, batch in rows.items():
        if batch:
            session.execute(insert(model.__table__), batch)


def _clear(rdb: RDBStorage, study_id: int) -> None:
    """Deletes every trial of study ``study_id``, with the rows of each table naming its trials,
    in one statement a table (``optuna.delete_study`` loads and deletes them one by one)."""
    from optuna.storages._rdb import models
    from sqlalchemy import delete, select

    trials = models.TrialModel.__table__
    theirs = select(trials.c.trial_id).where(trials.c.study_id == study_id)
    session = rdb.scoped_session()
    for table in reversed(models.BaseModel.metadata.sorted_tables):
        if table is not trials and "trial_id" in table.c:
            session.execute(delete(table).where(table.c.trial_id.in_(theirs)))
    session.execute(delete(trials).where(trials.c.study_id == study_id))


def _distributions(session: Session, study_id: int) -> dict[str, BaseDistribution]:
    """The distribution of each param the study's trials have, as Optuna checks a new trial's
    against (one row per param name)."""
    from optuna.distributions import json_to_distribution
    from optuna.storages._rdb import models
    from sqlalchemy import func, select

    p, t = models.TrialParamModel, models.TrialModel
    found = session.execute(
        select(p.param_name, func.min(p.distribution_json))
        .join(t, t.trial_id == p.trial_id)
        .where(t.study_id == study_id)
        .group_by(p.param_name)
    )
    return {name: json_to_distribution(text) for name, text in found}


def _differs(old: FrozenTrial | _Stored, new: FrozenTrial) -> bool:
    return (old.state, old.values, old.params, old.user_attrs, old.intermediate_values) != (
        new.state,
        new.values,
        new.params,
        new.user_attrs,
        new.intermediate_values,
    )


def _complete(rdb: RDBStorage, tid: int, old: FrozenTrial | _Stored, new: FrozenTrial) -> None:
    """Brings trial ``tid``, exported while it ran, up to date in place (Optuna lets a running
    trial change): its new folds, attrs and, once it finished, its state and value."""
    for step, value in new.intermediate_values.items():
        if old.intermediate_values.get(step) != value:
            rdb.set_trial_intermediate_value(tid, step, value)
    for key, value in new.user_attrs.items():
        if old.user_attrs.get(key) != value:
            rdb.set_trial_user_attr(tid, key, value)
    if new.state.is_finished():
        rdb.set_trial_state_values(tid, new.state, new.values)
