"""One study brought in line with a session's trials, through Optuna's public API, in any Optuna
storage (:mod:`alphaloop.ops._optuna_storage` says which, and how it is written).

A new study is created and its trials added by ``Study.add_trials``. In a study already
exported, new trials are added after its own, a trial exported while it ran is completed in
place, and the study is written again whole when a finished trial no longer matches the journal
(Optuna never changes a finished trial) or one is there twice. Nothing is written when nothing
changed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from alphaloop.exceptions import Conflict, InvalidRequest

if TYPE_CHECKING:
    from optuna.storages import BaseStorage
    from optuna.study import Study
    from optuna.trial import FrozenTrial

# The user attrs naming what a trial and a study are in the journal, and when it was exported.
TRIAL_ID_ATTR = "alphaloop_trial_id"
SESSION_ID_ATTR = "alphaloop_session_id"
EXPORTED_AT_ATTR = "alphaloop_exported_at"


class Wanted(NamedTuple):
    """The study an export wants: its name, the session it holds, its user attrs and trials."""

    name: str
    session_id: str
    study_attrs: dict[str, Any]
    trials: list[FrozenTrial]


class Written(NamedTuple):
    """What an export did to the study, as :class:`~alphaloop.ops.export.OptunaExport` counts
    it."""

    added: int
    completed: int
    unchanged: int
    rewritten: bool


def busy(shown: str, name: str) -> Conflict:
    """The error of an export that met another one writing the same study."""
    return Conflict(
        f"another export wrote the study {name!r} in {shown} at the same time; run this export "
        "again once it is done (it repairs the study)"
    )


def sync(storage: BaseStorage, shown: str, want: Wanted) -> Written:
    """Brings study ``want.name`` in ``storage`` (``shown`` in messages) in line with ``want``
    (see the module doc).

    Raises:
        InvalidRequest: a study of that name holding something else than this session's export.
        Conflict: the study holds more trials than this export left in it: another export
            added them meanwhile.
    """
    import optuna

    name, wanted = want.name, want.trials
    study = _own_study(storage, name, want.session_id)
    if study is None:
        return _create(storage, shown, want, rewritten=False)
    trials = study.get_trials(deepcopy=False)
    have = {t.user_attrs.get(TRIAL_ID_ATTR): t for t in trials}
    ids = {t.user_attrs[TRIAL_ID_ATTR] for t in wanted}
    if (
        len(have) != len(trials)
        or bool(set(have) - ids)
        or any(
            have[i].state.is_finished() and _differs(have[i], t)
            for t in wanted
            if (i := t.user_attrs[TRIAL_ID_ATTR]) in have
        )
    ):
        optuna.delete_study(study_name=name, storage=storage)
        return _create(storage, shown, want, rewritten=True)
    study_id = storage.get_study_id_from_name(name)
    completed = unchanged = 0
    for t in wanted:
        old = have.get(t.user_attrs[TRIAL_ID_ATTR])
        if old is None:
            continue
        if _differs(old, t):
            tid = storage.get_trial_id_from_study_id_trial_number(study_id, old.number)
            _complete(storage, tid, old, t)
            completed += 1
        else:
            unchanged += 1
    new = [t for t in wanted if t.user_attrs[TRIAL_ID_ATTR] not in have]
    attrs = {k: v for k, v in want.study_attrs.items() if study.user_attrs.get(k) != v}
    if new or completed or attrs:
        _fill(study, attrs | _stamp(), new)
        _check_count(storage, shown, name, study_id, len(trials) + len(new))
    return Written(len(new), completed, unchanged, False)


def _own_study(storage: BaseStorage, name: str, session_id: str) -> Study | None:
    """Study ``name`` when it holds this session's export, None when there is none; refuses a
    study of that name holding anything else."""
    import optuna

    try:
        study = optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        return None
    owner = study.user_attrs.get(SESSION_ID_ATTR)
    if owner != session_id:
        what = f"session {owner}'s export" if owner else "a study alphaloop did not write"
        raise InvalidRequest(
            f"the study {name!r} already exists there and holds {what}; choose another --study-name"
        )
    return study


def _create(storage: BaseStorage, shown: str, want: Wanted, rewritten: bool) -> Written:
    import optuna

    study = optuna.create_study(storage=storage, study_name=want.name, direction="maximize")
    # The owner first: a database export stopped after it is still this session's to finish.
    _fill(study, {SESSION_ID_ATTR: want.session_id} | want.study_attrs | _stamp(), want.trials)
    study_id = storage.get_study_id_from_name(want.name)
    _check_count(storage, shown, want.name, study_id, len(want.trials))
    return Written(len(want.trials), 0, 0, rewritten)


def _stamp() -> dict[str, str]:
    return {EXPORTED_AT_ATTR: datetime.now(UTC).isoformat()}


def _fill(study: Study, study_attrs: dict[str, Any], trials: list[FrozenTrial]) -> None:
    for key, value in study_attrs.items():
        study.set_user_attr(key, value)
    study.add_trials(trials)


def _check_count(storage: BaseStorage, shown: str, name: str, study_id: int, n: int) -> None:
    if storage.get_n_trials(study_id) != n:
        raise busy(shown, name)


def _differs(old: FrozenTrial, new: FrozenTrial) -> bool:
    return (old.state, old.values, old.params, old.user_attrs, old.intermediate_values) != (
        new.state,
        new.values,
        new.params,
        new.user_attrs,
        new.intermediate_values,
    )


def _complete(storage: BaseStorage, tid: int, old: FrozenTrial, new: FrozenTrial) -> None:
    """Brings trial ``tid``, exported while it ran, up to date in place (Optuna lets a running
    trial change): its new folds, attrs and, once it finished, its state and value."""
    for step, value in new.intermediate_values.items():
        if old.intermediate_values.get(step) != value:
            storage.set_trial_intermediate_value(tid, step, value)
    for key, value in new.user_attrs.items():
        if old.user_attrs.get(key) != value:
            storage.set_trial_user_attr(tid, key, value)
    if new.state.is_finished():
        storage.set_trial_state_values(tid, new.state, new.values)
