"""A session as an Optuna study, on a journal written row by row: each status maps to its Optuna
state, a raced-out trial is PRUNED with the fold it ran, a trial exported while it ran is
completed in place, TEST results land on the trial they evaluated, and bad input writes
nothing. Read back with Optuna's own ``load_study``."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import optuna
import pytest

from alphaloop.exceptions import Conflict, InvalidRequest
from alphaloop.journal import Journal
from alphaloop.knobs import KNOBS, TrialConfig, config_hash
from alphaloop.ops import _optuna_storage as optuna_storage
from alphaloop.ops.export import export_optuna
from alphaloop.settings import Settings
from tests.server.helpers import new_session

N_FOLDS = 3
CVAR_KNOBS = ("cvar_alpha", "max_position_pct", "n_scenarios", "cufolio_hold_days")


def _session(j: Journal, mode: str = "cufolio_only") -> str:
    return new_session(j, mode=mode, budget=10)


def _start(j: Journal, sid: str, kind: str = "search", parent: int | None = None, **knobs: Any):
    config = TrialConfig(**knobs)
    return j.trials.start(
        sid,
        kind=kind,
        config=config.model_dump(),
        config_hash=config_hash(config),
        delta={"changes": knobs, "rationale": "r"},
        parent_id=parent,
        seed=1,
        rationale="r",
        proposer="tpe" if kind == "search" else kind,
    )


def _folds(j: Journal, trial_id: int, objectives: dict[int, float]) -> None:
    for fold, objective in objectives.items():
        j.folds.add(
            trial_id,
            fold=fold,
            n_folds=N_FOLDS,
            start_date="2020-01-01",
            end_date="2020-06-30",
            objective=objective,
            metrics={"sharpe": objective},
            result={},
            returns=[0.001, -0.002],
            elapsed_s=0.1,
        )


@pytest.fixture
def journal(settings: Settings) -> Journal:
    settings.home.mkdir(parents=True)
    with Journal(settings.journal_path) as j:
        yield j


@pytest.fixture
def rows(journal: Journal) -> dict[str, Any]:
    """A session with one row of every fate: a baseline, a kept trial, a raced-out one (its most
    recent fold only), a crash, an invalid proposal and a trial still running."""
    j = journal
    sid = _session(j)
    base = _start(j, sid, "baseline")
    _folds(j, base.id, {0: 0.4, 1: 0.5, 2: 0.6})
    j.trials.finish(base.id, status="keep", objective=0.5, metrics={"sharpe": 0.5})
    kept = _start(j, sid, cvar_alpha=0.9, n_scenarios=2000)
    _folds(j, kept.id, {0: 0.7, 1: 0.8, 2: 0.9})
    j.trials.finish(kept.id, status="keep", objective=0.8, reason="beats the incumbent")
    raced = _start(j, sid, cvar_alpha=0.86, max_position_pct=0.03)
    _folds(j, raced.id, {2: -0.4})
    j.trials.finish(raced.id, status="discard", objective=-0.4, reason="raced out on fold 3")
    crash = _start(j, sid, cufolio_hold_days=7)
    j.trials.finish(crash.id, status="crash", error="SolverError('no solution')")
    invalid = j.trials.record_invalid(sid, proposer="llm", delta_raw="{}", error="unknown knob")
    running = _start(j, sid, cvar_alpha=0.97)
    _folds(j, running.id, {2: 0.3})
    return {"sid": sid, "base": base, "kept": kept, "raced": raced, "crash": crash,
            "invalid": invalid, "running": running}  # fmt: skip


def _study(url: str, name: str) -> optuna.Study:
    return optuna.load_study(study_name=name, storage=url)


def _by_id(study: optuna.Study) -> dict[int, optuna.trial.FrozenTrial]:
    return {t.user_attrs["alphaloop_trial_id"]: t for t in study.trials}


def test_each_row_becomes_one_trial_in_its_state(
    settings: Settings, rows: dict[str, Any], tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'study.db'}"
    done = export_optuna(settings, rows["sid"], url)
    study = _study(url, rows["sid"])
    assert done.n_trials == len(study.trials) == 6 and done.added == 6
    assert study.direction == optuna.study.StudyDirection.MAXIMIZE
    got = _by_id(study)
    S = optuna.trial.TrialState
    assert {k: got[rows[k].id].state for k in rows if k != "sid"} == {
        "base": S.COMPLETE, "kept": S.COMPLETE, "raced": S.PRUNED, "crash": S.FAIL,
        "invalid": S.FAIL, "running": S.RUNNING,
    }  # fmt: skip
    # Numbered as the journal numbers them.
    assert [t.user_attrs["idx"] for t in study.trials] == [t.number for t in study.trials]
    kept, raced = got[rows["kept"].id], got[rows["raced"].id]
    assert kept.value == 0.8 and kept.intermediate_values == {0: 0.7, 1: 0.8, 2: 0.9}
    assert raced.intermediate_values == {2: -0.4} and raced.value == -0.4
    assert kept.params == {"cvar_alpha": 0.9, "max_position_pct": 0.25, "n_scenarios": 2000,
                           "cufolio_hold_days": 21}  # fmt: skip
    for name, dist in kept.distributions.items():
        assert name in CVAR_KNOBS  # the mode's knobs only
        assert (dist.low, dist.high) == (KNOBS[name].low, KNOBS[name].high)
    assert kept.user_attrs["kind"] == "search" and kept.user_attrs["proposer"] == "tpe"
    shown = {k: got[rows[k].id].user_attrs["status"] for k in rows if k != "sid"}
    assert shown == {"base": "ran", "kept": "keep", "raced": "raced out", "crash": "crash",
                     "invalid": "invalid", "running": "running"}  # fmt: skip
    assert kept.user_attrs["reason"] == "beats the incumbent"
    assert got[rows["crash"].id].user_attrs["error"] == "SolverError('no solution')"
    assert got[rows["invalid"].id].params == {}
    assert study.best_trial.number == kept.number
    assert study.user_attrs["alphaloop_session_id"] == rows["sid"]


def test_log_scales_are_log(settings: Settings, journal: Journal, tmp_path: Path) -> None:
    sid = _session(journal, mode="ppo_only")
    row = _start(journal, sid, learning_rate=1e-3, n_steps=512)
    journal.trials.finish(row.id, status="discard", objective=0.1)
    url = f"sqlite:///{tmp_path / 'ppo.db'}"
    export_optuna(settings, sid, url)
    [trial] = _study(url, sid).trials
    dists = trial.distributions
    assert dists["learning_rate"].log and dists["n_steps"].log and dists["batch_size"].log
    assert not dists["gamma"].log and not dists["n_epochs"].log
    assert isinstance(dists["n_steps"], optuna.distributions.IntDistribution)
    assert trial.params["learning_rate"] == 1e-3 and trial.params["n_steps"] == 512


def test_exporting_again_updates_in_place(
    settings: Settings, journal: Journal, rows: dict[str, Any], tmp_path: Path
) -> None:
    url, sid = f"sqlite:///{tmp_path / 'study.db'}", rows["sid"]
    export_optuna(settings, sid, url)
    again = export_optuna(settings, sid, url)
    assert (again.added, again.completed, again.unchanged, again.rewritten) == (0, 0, 6, False)
    assert len(_study(url, sid).trials) == 6
    # The running trial finishes and a new one starts: completed in place, one added.
    running = rows["running"]
    _folds(journal, running.id, {0: 0.2, 1: 0.25})
    journal.trials.finish(running.id, status="discard", objective=0.25)
    late = _start(journal, sid, cvar_alpha=0.95)
    journal.trials.finish(late.id, status="timeout")
    before = _by_id(_study(url, sid))[running.id]
    third = export_optuna(settings, sid, url)
    assert (third.added, third.completed, third.unchanged, third.rewritten) == (1, 1, 5, False)
    got = _by_id(_study(url, sid))
    assert len(got) == 7
    done = got[running.id]
    assert done.number == before.number and done.state == optuna.trial.TrialState.COMPLETE
    assert done.value == 0.25 and done.intermediate_values == {0: 0.2, 1: 0.25, 2: 0.3}
    assert got[late.id].state == optuna.trial.TrialState.FAIL


def test_test_results_land_on_the_trial_they_evaluated(
    settings: Settings, journal: Journal, rows: dict[str, Any], tmp_path: Path
) -> None:
    url, sid = f"sqlite:///{tmp_path / 'study.db'}", rows["sid"]
    export_optuna(settings, sid, url)
    kept = rows["kept"]
    test = _start(journal, sid, "test", parent=kept.id, cvar_alpha=0.9, n_scenarios=2000)
    journal.trials.finish(test.id, status="keep", objective=1.3, metrics={"sharpe": 1.3})
    # The kept trial was finished when first exported: Optuna never changes a finished trial,
    # so the study is written again, still one trial per row and no TEST trial among them.
    done = export_optuna(settings, sid, url)
    assert done.rewritten and done.test_rows == 1 and done.n_trials == 6
    study = _study(url, sid)
    assert len(study.trials) == 6 and len(optuna.get_all_study_names(url)) == 1
    attrs = _by_id(study)[kept.id].user_attrs
    assert attrs["test_objective"] == 1.3 and attrs["test"] == {"sharpe": 1.3}
    assert attrs["test_trial_id"] == test.id
    assert all(t.user_attrs["kind"] != "test" for t in study.trials)


def test_bad_input_writes_nothing(
    settings: Settings, journal: Journal, rows: dict[str, Any], tmp_path: Path
) -> None:
    target = tmp_path / "study.db"
    url = f"sqlite:///{target}"
    with pytest.raises(InvalidRequest, match="no session 's-nope'"):
        export_optuna(settings, "s-nope", url)
    assert not target.exists()
    for refused in ("not a url", "nosuchdb://x", f"sqlite:///{tmp_path}/missing/dir/s.db"):
        with pytest.raises(InvalidRequest):
            export_optuna(settings, rows["sid"], refused)
    with pytest.raises(InvalidRequest, match="own journal"):
        export_optuna(settings, rows["sid"], f"sqlite:///{settings.journal_path}")
    # A study of that name holding another session's export is left as it is.
    other = _session(journal)
    export_optuna(settings, other, url, study_name="shared")
    with pytest.raises(InvalidRequest, match="choose another --study-name"):
        export_optuna(settings, rows["sid"], url, study_name="shared")
    assert _study(url, "shared").trials == []
    assert _study(url, "shared").user_attrs["alphaloop_session_id"] == other


_READ_BACK = (
    "number", "state", "values", "params", "distributions", "user_attrs", "system_attrs",
    "intermediate_values", "datetime_start", "datetime_complete",
)  # fmt: skip


def _trial_rows(url: str, name: str) -> list[dict[str, Any]]:
    """Everything Optuna reads back of each trial but its storage id."""
    return [{f: getattr(t, f) for f in _READ_BACK} for t in _study(url, name).trials]


def _study_rows(url: str, name: str) -> tuple[Any, ...]:
    study = _study(url, name)
    attrs = {k: v for k, v in study.user_attrs.items() if k != "alphaloop_exported_at"}
    return study.directions, attrs, study._storage.get_study_system_attrs(study._study_id)


def test_the_bulk_write_reads_back_as_optunas_own_add_trials(
    settings: Settings,
    journal: Journal,
    rows: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reference: the same exports (first, again with new rows, again whole) written by
    Optuna's own ``Study.add_trials`` and ``delete_study``."""
    sid = rows["sid"]
    fast, slow = f"sqlite:///{tmp_path / 'fast.db'}", f"sqlite:///{tmp_path / 'slow.db'}"

    def both() -> None:
        export_optuna(settings, sid, fast)
        with monkeypatch.context() as m:
            m.setattr(optuna_storage, "KNOWN_SCHEMAS", frozenset())
            m.setattr(optuna_storage, "add_trials", _never)
            export_optuna(settings, sid, slow)
        got, want = _trial_rows(fast, sid), _trial_rows(slow, sid)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            if g["user_attrs"]["alphaloop_trial_id"] == rows["running"].id:
                # completed in place by Optuna's API in both: it says when it was completed
                g["datetime_complete"] = w["datetime_complete"]
            assert {f: g[f] for f in _READ_BACK if g[f] != w[f]} == {}, w
        assert _study_rows(fast, sid) == _study_rows(slow, sid)

    both()
    running = rows["running"]
    _folds(journal, running.id, {0: 0.2, 1: 0.25})
    journal.trials.finish(running.id, status="discard", objective=0.25)
    late = _start(journal, sid, cvar_alpha=0.95)
    _folds(journal, late.id, {0: 0.1})
    journal.trials.finish(late.id, status="discard", objective=0.1, reason="raced out")
    both()  # in place, one added after the study's trials
    assert len(_trial_rows(fast, sid)) == 7
    kept = rows["kept"]
    test = _start(journal, sid, "test", parent=kept.id, cvar_alpha=0.9, n_scenarios=2000)
    journal.trials.finish(test.id, status="keep", objective=1.3, metrics={"sharpe": 1.3})
    both()  # written again whole: a finished trial has its TEST results
    assert _by_id(_study(fast, sid))[kept.id].user_attrs["test_objective"] == 1.3


def _never(*args: Any) -> None:
    raise AssertionError("the bulk write ran on a schema it does not know")


def test_the_bulk_write_knows_the_schema_of_the_optuna_installed(tmp_path: Path) -> None:
    """Fails on an Optuna whose tables differ from those the bulk write was compared on: check
    ``add_trials`` against its models, then add the revision to ``KNOWN_SCHEMAS``."""
    from optuna.storages import RDBStorage

    url = f"sqlite:///{tmp_path / 'study.db'}"
    revision = RDBStorage(url).get_current_version()
    assert revision in optuna_storage.KNOWN_SCHEMAS, (
        f"optuna {optuna.__version__} writes schema {revision!r}, "
        f"not one of {sorted(optuna_storage.KNOWN_SCHEMAS)}"
    )
    with optuna_storage.open_storage(url, url) as rdb:
        assert optuna_storage.bulk_writes(rdb)


def _pause_in_add_trials(monkeypatch: pytest.MonkeyPatch, meanwhile: Any) -> None:
    """Runs ``meanwhile()`` once, when the export starts adding its trials."""
    add_trials = optuna_storage.add_trials
    pending = [meanwhile]

    def paused(*args: Any) -> None:
        if pending:
            pending.pop()()
        add_trials(*args)

    monkeypatch.setattr(optuna_storage, "add_trials", paused)


def _late_trial(settings: Settings, journal: Journal, sid: str, url: str) -> None:
    """``sid`` exported, then one more trial journaled: the next export adds one."""
    export_optuna(settings, sid, url)
    late = _start(journal, sid, cvar_alpha=0.95)
    journal.trials.finish(late.id, status="discard", objective=0.1)


@pytest.mark.parametrize("first", [True, False], ids=["new study", "update"])
def test_an_export_meeting_another_half_way_is_refused_whole(
    settings: Settings,
    journal: Journal,
    rows: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    first: bool,
) -> None:
    url, sid = f"sqlite:///{tmp_path / 'study.db'}", rows["sid"]
    if not first:
        _late_trial(settings, journal, sid, url)
    monkeypatch.setattr(optuna_storage, "LOCK_WAIT_S", 0.2)
    refused: list[Exception] = []

    def second() -> None:  # a second export, while the first holds the lock half-way through
        try:
            export_optuna(settings, sid, url)
        except Conflict as err:
            refused.append(err)

    _pause_in_add_trials(monkeypatch, second)
    done = export_optuna(settings, sid, url)
    assert len(refused) == 1 and "another export is writing the study" in str(refused[0])
    assert "nothing was written" in str(refused[0])
    study = _study(url, sid)
    assert len(study.trials) == done.n_trials == (6 if first else 7)
    assert len({t.user_attrs["alphaloop_trial_id"] for t in study.trials}) == done.n_trials


@pytest.mark.parametrize("first", [True, False], ids=["new study", "update"])
def test_two_exports_at_once_add_each_trial_once(
    settings: Settings,
    journal: Journal,
    rows: dict[str, Any],
    tmp_path: Path,
    first: bool,
) -> None:
    """Two threads export one session into one file at the same moment: one writes, the other
    waits for its lock and then finds every trial there."""
    url, sid = f"sqlite:///{tmp_path / 'study.db'}", rows["sid"]
    if not first:
        _late_trial(settings, journal, sid, url)
    start = threading.Barrier(2)
    done: list[Any] = []

    def export() -> None:
        start.wait()
        done.append(export_optuna(settings, sid, url))

    threads = [threading.Thread(target=export) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(d.added for d in done) == [0, 6 if first else 1]
    study = _study(url, sid)
    assert len(study.trials) == (6 if first else 7)
    assert len({t.user_attrs["alphaloop_trial_id"] for t in study.trials}) == len(study.trials)
    assert sorted(t.number for t in study.trials) == list(range(len(study.trials)))


def test_an_export_failing_half_way_writes_nothing(
    settings: Settings,
    journal: Journal,
    rows: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, sid = f"sqlite:///{tmp_path / 'study.db'}", rows["sid"]
    add_trials = optuna_storage.add_trials

    def failing(*args: Any) -> None:
        add_trials(*args)  # the trials are in the transaction, uncommitted
        raise OSError("disk full")

    monkeypatch.setattr(optuna_storage, "add_trials", failing)
    with pytest.raises(OSError, match="disk full"):
        export_optuna(settings, sid, url)
    assert optuna.get_all_study_names(url) == []
    monkeypatch.undo()
    export_optuna(settings, sid, url)
    assert len(_study(url, sid).trials) == 6


def test_a_call_optuna_rolled_back_refuses_the_whole_export(tmp_path: Path) -> None:
    """Optuna rolls back a duplicate row and goes on; what came before it is gone, so what
    follows must not be committed alone."""
    url = f"sqlite:///{tmp_path / 'study.db'}"
    with optuna_storage.open_storage(url, url) as rdb:
        with pytest.raises(Conflict, match="nothing was written"):
            with optuna_storage.one_transaction(rdb, url, "s"):
                optuna.create_study(storage=rdb, study_name="s")
                rdb.scoped_session().rollback()  # as Optuna does on an ignored IntegrityError
                optuna.create_study(storage=rdb, study_name="t")
        assert optuna.get_all_study_names(rdb) == []
