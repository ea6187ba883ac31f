"""``alphaloop export optuna`` end to end: a real session exported into an Optuna journal file
(and a SQLite database), read back with Optuna's own ``load_study`` and journal storage reader
against what the journal holds, drawn by ``optuna.visualization`` and served by optuna-dashboard
as they are; exporting again adds nothing; bad input exits 2."""

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
from tests.ops.optuna_export import opened


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
    url = str(tmp_path / "study.log")
    done = _export(session, url)
    assert done["storage"] == url
    with Journal(settings.journal_path) as j:
        rows = j.trials.of_session(session, series=False)
        folds = j.folds.of_session(session)
    scored = [t for t in rows if t.kind != "test"]
    tests = [t for t in rows if t.kind == "test"]  # the default's, and the pick's if searched
    study = optuna.load_study(study_name=session, storage=opened(url))
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
    written = Path(url).read_bytes()
    again = _export(session, url)
    assert Path(url).read_bytes() == written  # nothing new: nothing written
    assert (again["added"], again["unchanged"], again["rewritten"]) == (0, len(scored), False)


@pytest.mark.parametrize("kind", ["journal", "sqlite"])
def test_the_study_opens_in_optuna_visualization_and_dashboard(
    session: str, tmp_path: Path, kind: str
) -> None:
    url = str(tmp_path / "study.log") if kind == "journal" else f"sqlite:///{tmp_path / 's.db'}"
    _export(session, url)
    study = optuna.load_study(study_name=session, storage=opened(url))
    history = optuna.visualization.plot_optimization_history(study)
    complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert list(history.data[0].y) == [t.value for t in complete]
    assert optuna.visualization.plot_intermediate_values(study).data
    assert optuna.visualization.plot_parallel_coordinate(study).data

    from optuna_dashboard import wsgi

    dashboard = wsgi(url)  # a path or a URL, as the optuna-dashboard command takes them
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
    target = tmp_path / "s.log"
    unknown = run_cli("export", "optuna", "s-nope", "--storage", str(target))
    assert unknown.exit_code == 2 and "no session 's-nope'" in unknown.stderr
    refused = run_cli("export", "optuna", session, "--storage", "nosuchdb://host/x")
    assert refused.exit_code == 2 and "Optuna refused the storage" in refused.stderr
    missing = run_cli("export", "optuna", session, "--storage", str(tmp_path / "no" / "s.log"))
    assert missing.exit_code == 2 and "no directory" in missing.stderr
    target.write_text("not a journal\n")
    other = run_cli("export", "optuna", session, "--storage", str(target), "--json")
    assert other.exit_code == 2 and "not an Optuna journal file" in other.stderr
    assert other.stdout == "" and target.read_text() == "not a journal\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.log"]
