"""``alphaloop export optuna`` end to end: a real session exported, read back with Optuna's own
``load_study`` against what the journal holds, drawn by ``optuna.visualization`` and served by
optuna-dashboard as they are; exporting again adds nothing; bad input exits 2."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any
from wsgiref.util import setup_testing_defaults

import optuna
import pytest
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.journal import Journal
from alphaloop.knobs import KNOBS
from alphaloop.settings import Settings, get_settings


def run_cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def session(in_finished_session: str) -> str:
    return in_finished_session


@pytest.fixture
def settings(session: str) -> Settings:
    return get_settings()


def _export(session: str, url: str, *more: str) -> dict[str, Any]:
    result = run_cli("export", "optuna", session, "--storage", url, "--json", *more)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_finished_session_reads_back_as_the_journal_has_it(
    settings: Settings, session: str, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'study.db'}"
    done = _export(session, url)
    with Journal(settings.journal_path) as j:
        rows = j.trials.of_session(session, series=False)
        folds = j.folds.of_session(session)
    scored = [t for t in rows if t.kind != "test"]
    tests = [t for t in rows if t.kind == "test"]  # the default's, and the pick's if searched
    study = optuna.load_study(study_name=session, storage=url)
    assert done["study_name"] == session and done["n_trials"] == len(study.trials) == len(scored)
    assert done["test_rows"] == len(tests) >= 1
    for row, trial in zip(scored, study.trials, strict=True):
        assert trial.user_attrs["alphaloop_trial_id"] == row.id
        assert trial.value == row.objective  # equal, not close: the journal's number
        raced = row.status == "discard" and len(folds[row.id]) < folds[row.id][0].n_folds
        assert trial.user_attrs["status"] == (
            "ran"
            if row.kind != "search" and row.status == "keep"
            else "raced out"
            if raced
            else row.status.value
        )
        if raced:  # PRUNED, with the folds it ran as intermediate values
            assert trial.state == optuna.trial.TrialState.PRUNED
            assert trial.intermediate_values == {f.fold: f.objective for f in folds[row.id]}
        for name, value in trial.params.items():
            assert KNOBS[name].low <= value <= KNOBS[name].high
            assert value == row.config[name]
    by_id = {t.user_attrs["alphaloop_trial_id"]: t for t in study.trials}
    for test in tests:
        assert by_id[test.parent_id].user_attrs["test_objective"] == test.objective
    again = _export(session, url)
    assert len(optuna.load_study(study_name=session, storage=url).trials) == len(scored)
    assert (again["added"], again["unchanged"], again["rewritten"]) == (0, len(scored), False)


def test_the_study_opens_in_optuna_visualization_and_dashboard(
    session: str, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'study.db'}"
    _export(session, url)
    study = optuna.load_study(study_name=session, storage=url)
    history = optuna.visualization.plot_optimization_history(study)
    complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert list(history.data[0].y) == [t.value for t in complete]
    assert optuna.visualization.plot_intermediate_values(study).data
    assert optuna.visualization.plot_parallel_coordinate(study).data

    from optuna_dashboard import wsgi

    dashboard = wsgi(url)
    [listed] = _get(dashboard, "/api/studies")["study_summaries"]
    assert listed["study_name"] == session
    detail = _get(dashboard, f"/api/studies/{listed['study_id']}")
    assert len(detail["trials"]) == len(study.trials)
    assert detail["best_trials"][0]["number"] == study.best_trial.number
    assert {p["name"] for p in detail["union_search_space"]} == set(study.best_trial.params)


def _get(wsgi_app: Any, path: str) -> Any:
    """One GET answered by a WSGI application, as JSON."""
    environ: dict[str, Any] = {"PATH_INFO": path, "REQUEST_METHOD": "GET"}
    setup_testing_defaults(environ)
    environ["wsgi.input"] = io.BytesIO()
    status: list[str] = []
    body = b"".join(wsgi_app(environ, lambda s, headers, exc=None: status.append(s)))
    assert status[0].startswith("200"), (status, body[:300])
    return json.loads(body)


def test_bad_input_exits_2_and_writes_nothing(session: str, tmp_path: Path) -> None:
    target = tmp_path / "s.db"
    unknown = run_cli("export", "optuna", "s-nope", "--storage", f"sqlite:///{target}")
    assert unknown.exit_code == 2 and "no session 's-nope'" in unknown.stderr
    assert not target.exists()
    refused = run_cli("export", "optuna", session, "--storage", "nosuchdb://host/x")
    assert refused.exit_code == 2 and "Optuna refused the storage" in refused.stderr
