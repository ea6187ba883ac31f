"""A session as an Optuna study, on a journal written row by row: each status maps to its Optuna
state, a raced-out trial is PRUNED with the fold it ran, a trial exported while it ran is
completed in place, TEST results land on the trial they evaluated, and an export that finds
nothing new writes nothing. In an Optuna journal file (the default) and in a SQLite database,
each read back with Optuna's own ``load_study`` and journal storage reader (refusals and
failures: ``test_export_refusals.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna

from alphaloop.journal import Journal
from alphaloop.knobs import KNOBS
from alphaloop.ops.export import export_optuna
from alphaloop.settings import Settings
from tests.ops.optuna_export import folds as _folds
from tests.ops.optuna_export import opened, session, start
from tests.ops.optuna_export import study as _study

CVAR_KNOBS = ("cvar_alpha", "max_position_pct", "n_scenarios", "cufolio_hold_days")


def _by_id(study: optuna.Study) -> dict[int, optuna.trial.FrozenTrial]:
    return {t.user_attrs["alphaloop_trial_id"]: t for t in study.trials}


def test_each_row_becomes_one_trial_in_its_state(
    settings: Settings, fates: dict[str, Any], store: str
) -> None:
    done = export_optuna(settings, fates["sid"], store)
    study = _study(store, fates["sid"])
    assert done.n_trials == len(study.trials) == 6 and done.added == 6
    assert study.direction == optuna.study.StudyDirection.MAXIMIZE
    got = _by_id(study)
    S = optuna.trial.TrialState
    assert {k: got[fates[k].id].state for k in fates if k != "sid"} == {
        "base": S.COMPLETE, "kept": S.COMPLETE, "raced": S.PRUNED, "crash": S.FAIL,
        "invalid": S.FAIL, "running": S.RUNNING,
    }  # fmt: skip
    # Numbered as the journal numbers them.
    assert [t.user_attrs["idx"] for t in study.trials] == [t.number for t in study.trials]
    kept, raced = got[fates["kept"].id], got[fates["raced"].id]
    assert kept.value == 0.8 and kept.intermediate_values == {0: 0.7, 1: 0.8, 2: 0.9}
    assert raced.intermediate_values == {2: -0.4} and raced.value == -0.4
    assert kept.params == {"cvar_alpha": 0.9, "max_position_pct": 0.25, "n_scenarios": 2000,
                           "cufolio_hold_days": 21}  # fmt: skip
    for name, dist in kept.distributions.items():
        assert name in CVAR_KNOBS  # the mode's knobs only
        assert (dist.low, dist.high) == (KNOBS[name].low, KNOBS[name].high)
    assert kept.user_attrs["kind"] == "search" and kept.user_attrs["proposer"] == "tpe"
    shown = {k: got[fates[k].id].user_attrs["status"] for k in fates if k != "sid"}
    assert shown == {"base": "ran", "kept": "keep", "raced": "raced out", "crash": "crash",
                     "invalid": "invalid", "running": "running"}  # fmt: skip
    assert kept.user_attrs["reason"] == "beats the incumbent"
    assert got[fates["crash"].id].user_attrs["error"] == "SolverError('no solution')"
    assert got[fates["invalid"].id].params == {}
    assert study.best_trial.number == kept.number
    assert study.user_attrs["alphaloop_session_id"] == fates["sid"]


def test_log_scales_are_log(settings: Settings, journal: Journal, tmp_path: Path) -> None:
    sid = session(journal, mode="ppo_only")
    row = start(journal, sid, learning_rate=1e-3, n_steps=512)
    journal.trials.finish(row.id, status="discard", objective=0.1)
    path = str(tmp_path / "ppo.log")
    export_optuna(settings, sid, path)
    [trial] = _study(path, sid).trials
    dists = trial.distributions
    assert dists["learning_rate"].log and dists["n_steps"].log and dists["batch_size"].log
    assert not dists["gamma"].log and not dists["n_epochs"].log
    assert isinstance(dists["n_steps"], optuna.distributions.IntDistribution)
    assert trial.params["learning_rate"] == 1e-3 and trial.params["n_steps"] == 512


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def test_exporting_again_updates_in_place(
    settings: Settings, journal: Journal, fates: dict[str, Any], store: str, tmp_path: Path
) -> None:
    sid = fates["sid"]
    export_optuna(settings, sid, store)
    written = _files(tmp_path)
    again = export_optuna(settings, sid, store)
    assert (again.added, again.completed, again.unchanged, again.rewritten) == (0, 0, 6, False)
    assert _files(tmp_path) == written  # nothing changed: nothing written, nothing beside it
    assert len(_study(store, sid).trials) == 6
    # The running trial finishes and a new one starts: completed in place, one added.
    running = fates["running"]
    _folds(journal, running.id, {0: 0.2, 1: 0.25})
    journal.trials.finish(running.id, status="discard", objective=0.25)
    late = start(journal, sid, cvar_alpha=0.95)
    journal.trials.finish(late.id, status="timeout")
    before = _by_id(_study(store, sid))[running.id]
    third = export_optuna(settings, sid, store)
    assert (third.added, third.completed, third.unchanged, third.rewritten) == (1, 1, 5, False)
    got = _by_id(_study(store, sid))
    assert len(got) == 7
    done = got[running.id]
    assert done.number == before.number and done.state == optuna.trial.TrialState.COMPLETE
    assert done.value == 0.25 and done.intermediate_values == {0: 0.2, 1: 0.25, 2: 0.3}
    assert got[late.id].state == optuna.trial.TrialState.FAIL
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "home") == [
        Path(store.removeprefix("sqlite:///")).name
    ]


def test_test_results_land_on_the_trial_they_evaluated(
    settings: Settings, journal: Journal, fates: dict[str, Any], store: str
) -> None:
    sid = fates["sid"]
    export_optuna(settings, sid, store)
    kept = fates["kept"]
    test = start(journal, sid, "test", parent=kept.id, cvar_alpha=0.9, n_scenarios=2000)
    journal.trials.finish(test.id, status="keep", objective=1.3, metrics={"sharpe": 1.3})
    # The kept trial was finished when first exported: Optuna never changes a finished trial,
    # so the study is written again, still one trial per row and no TEST trial among them.
    done = export_optuna(settings, sid, store)
    assert done.rewritten and done.test_rows == 1 and done.n_trials == 6
    study = _study(store, sid)
    assert len(study.trials) == 6 and len(optuna.get_all_study_names(opened(store))) == 1
    attrs = _by_id(study)[kept.id].user_attrs
    assert attrs["test_objective"] == 1.3 and attrs["test"] == {"sharpe": 1.3}
    assert attrs["test_trial_id"] == test.id
    assert all(t.user_attrs["kind"] != "test" for t in study.trials)


_READ_BACK = (
    "number", "state", "values", "params", "distributions", "user_attrs", "system_attrs",
    "intermediate_values", "datetime_start", "datetime_complete",
)  # fmt: skip


def _trial_rows(storage: str, name: str) -> list[dict[str, Any]]:
    """Everything Optuna reads back of each trial but its storage id."""
    return [{f: getattr(t, f) for f in _READ_BACK} for t in _study(storage, name).trials]


def _study_rows(storage: str, name: str) -> tuple[Any, ...]:
    study = _study(storage, name)
    attrs = {k: v for k, v in study.user_attrs.items() if k != "alphaloop_exported_at"}
    return study.directions, attrs


def test_the_journal_file_and_the_database_hold_the_same_study(
    settings: Settings, journal: Journal, fates: dict[str, Any], tmp_path: Path
) -> None:
    """The same exports (first, again with new rows, again whole) into both storages read back
    alike, trial by trial."""
    sid = fates["sid"]
    log, db = str(tmp_path / "study.log"), f"sqlite:///{tmp_path / 'study.db'}"

    def both() -> None:
        export_optuna(settings, sid, log)
        export_optuna(settings, sid, db)
        got, want = _trial_rows(log, sid), _trial_rows(db, sid)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            if g["user_attrs"]["alphaloop_trial_id"] == fates["running"].id:
                # completed in place by Optuna's API in both: it says when it was completed
                g["datetime_complete"] = w["datetime_complete"]
            assert {f: g[f] for f in _READ_BACK if g[f] != w[f]} == {}, w
        assert _study_rows(log, sid) == _study_rows(db, sid)

    both()
    running = fates["running"]
    _folds(journal, running.id, {0: 0.2, 1: 0.25})
    journal.trials.finish(running.id, status="discard", objective=0.25)
    late = start(journal, sid, cvar_alpha=0.95)
    _folds(journal, late.id, {0: 0.1})
    journal.trials.finish(late.id, status="discard", objective=0.1, reason="raced out")
    both()  # in place, one added after the study's trials
    assert len(_trial_rows(log, sid)) == 7
    kept = fates["kept"]
    test = start(journal, sid, "test", parent=kept.id, cvar_alpha=0.9, n_scenarios=2000)
    journal.trials.finish(test.id, status="keep", objective=1.3, metrics={"sharpe": 1.3})
    both()  # written again whole: a finished trial has its TEST results
    assert _by_id(_study(log, sid))[kept.id].user_attrs["test_objective"] == 1.3


def test_a_journal_file_holds_other_studies_untouched(
    settings: Settings, journal: Journal, fates: dict[str, Any], tmp_path: Path
) -> None:
    """A file Optuna itself wrote (another study, its trials): the export appends its study
    after them, and the other study reads back as it was."""
    path = str(tmp_path / "shared.log")
    theirs = optuna.create_study(storage=opened(path), study_name="theirs")
    theirs.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=3)
    before = _trial_rows(path, "theirs")
    export_optuna(settings, fates["sid"], path)
    assert _trial_rows(path, "theirs") == before
    assert len(_study(path, fates["sid"]).trials) == 6
    assert sorted(optuna.get_all_study_names(opened(path))) == sorted(["theirs", fates["sid"]])
