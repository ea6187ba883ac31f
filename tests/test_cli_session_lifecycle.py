"""A session's life seen from the CLI: stopped then resumed to its budget, its owner killed
(shown interrupted, with how to resume it), asked to resume while another process runs it, and
the answers of ``sessions``/``status`` before any session exists. Also the flags refused before a
session is created, and error lines that stay whole off a terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.journal import Journal
from alphaloop.meta_agent import session as session_mod
from alphaloop.meta_agent.session import SessionSpec, create_session, request_stop, run_session
from alphaloop.settings import Settings
from tests.journal.journal_helpers import store_settings

GOAL = "maximise validation Sharpe"


def run_cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def one_line(text: str) -> str:
    return " ".join(text.split())


def spec(budget: int = 3) -> SessionSpec:
    return SessionSpec(goal=GOAL, data="synthetic", budget=budget, noise_seeds=2, proposer="tpe")


@pytest.fixture
def dead_pid() -> int:
    """The id of a process that has ended (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# -- stop, then resume -----------------------------------------------------------------------


def test_a_stopped_session_resumes_to_its_budget_and_is_finalized_again(
    settings: Settings,
) -> None:
    sid = create_session(spec(budget=4), settings)

    def stop_after_first_search(event: Any) -> None:
        if event.name == "trial_finished" and event.trial.kind == "search":
            request_stop(sid, settings)

    first = run_session(sid, settings, stop_after_first_search)
    assert (first.stop_reason, first.n_trials) == ("stop requested", 1)
    # Finished (finalized at the stop), and resumable: the reads say so and how.
    resume = f"alphaloop research resume {sid}"
    assert json.loads(run_cli("status", sid, "--json").stdout)["resume"] == resume
    said = f"{sid} was stopped with 3 trial(s) of its budget left; resume it with `{resume}`"
    assert said in one_line(run_cli("status", sid).stdout)
    assert said in one_line(run_cli("sessions").stdout)

    result = run_cli("research", "resume", sid, "--json")
    assert result.exit_code == 0, result.output
    review = json.loads(result.stdout)
    with Journal(settings.journal_path) as journal:
        s = journal.sessions.get(sid)
        rows = journal.trials.of_session(sid)
        counted = journal.trials.counted(sid)
        [reopened] = journal.logs.events(sid, kind=session_mod.RESUMED_AFTER_STOP)
    assert counted == 4 == s.final.n_trials
    assert s.status == "finished" and s.final.stop_reason == "trial budget of 4 reached"
    assert reopened.payload["previous_final"] == first.journaled()
    assert [t.idx for t in rows] == list(range(len(rows)))
    assert all(t.status != "running" for t in rows)
    assert len([t for t in rows if t.kind == "search"]) == 4
    # One test row per config evaluated on TEST: the baseline's is reused, and the final best
    # (found before or after the stop) has its own, which the final record reports.
    tests = [t for t in rows if t.kind == "test"]
    parents = [t.parent_id for t in tests]
    assert len(parents) == len(set(parents))
    base = next(t for t in rows if t.kind == "baseline")
    assert parents[0] == base.id == s.final.baseline_trial_id
    kept = [t for t in rows if t.kind == "search" and t.status == "keep"]
    if kept:
        best = max(kept, key=lambda t: (t.objective, -t.idx))
        best_test = next(t for t in tests if t.parent_id == best.id)
        assert s.final.best_trial_id == best.id == s.best_trial_id
        assert s.final.best_test_objective == best_test.objective
    assert review["final"] == s.final.journaled() and review["counted_trials"] == 4

    # Its budget is used up now: resuming again is refused (exit 2, as `stop` is) and runs
    # nothing.
    again = run_cli("research", "resume", sid, "--json")
    assert again.exit_code == 2 and again.stdout == ""
    assert "already finished (trial budget of 4 reached); nothing to resume" in one_line(
        again.stderr
    )
    with Journal(settings.journal_path) as journal:
        assert len(journal.trials.of_session(sid)) == len(rows)


# -- a dead owner ----------------------------------------------------------------------------


def test_a_session_whose_process_died_shows_interrupted_with_how_to_resume(
    settings: Settings, dead_pid: int
) -> None:
    sid = create_session(spec(budget=1), settings)
    with Journal(settings.journal_path) as journal:
        journal.sessions.update(sid, owner_pid=dead_pid)
    resume = f"alphaloop research resume {sid}"

    status = run_cli("status", sid, "--json")
    assert status.exit_code == 0, status.output
    shown = json.loads(status.stdout)
    assert shown["session"]["status"] == "interrupted" and shown["resume"] == resume
    text = one_line(run_cli("status").stdout)
    assert "interrupted" in text and f"resume it with `{resume}`" in text
    listed = run_cli("sessions", "--json")
    assert [(s["status"], s["resume"]) for s in json.loads(listed.stdout)] == [
        ("interrupted", resume)
    ]
    assert f"resume it with `{resume}`" in one_line(run_cli("sessions").stdout)

    stop = run_cli("research", "stop", sid)
    assert stop.exit_code == 2, stop.output
    assert stop.stdout == ""
    assert (
        f"session {sid} is not running (interrupted, 0/1 trials); resume it with `{resume}`"
        in one_line(stop.stderr)
    )
    with Journal(settings.journal_path) as journal:
        raw = journal.db.execute("SELECT status FROM sessions WHERE id = ?", (sid,)).fetchone()
        assert raw[0] == "running"  # the stop changed nothing
        assert not journal.logs.events(sid, kind="StopRequested")

    resumed = run_cli("research", "resume", sid, "--json")
    assert resumed.exit_code == 0, resumed.output
    with Journal(settings.journal_path) as journal:
        s = journal.sessions.get(sid)
    assert s.status == "finished" and s.owner_pid == os.getpid() and s.final.n_trials == 1


def test_stop_of_a_finished_session_says_there_is_nothing_to_stop(settings: Settings) -> None:
    sid = create_session(spec(budget=1), settings)
    run_session(sid, settings)
    stop = run_cli("research", "stop", sid, "--json")
    assert stop.exit_code == 2 and stop.stdout == ""
    assert f"session {sid} is not running (finished, 1/1 trials); nothing to stop" in one_line(
        stop.stderr
    )


def test_stop_json_says_which_session_and_its_status(settings: Settings) -> None:
    sid = create_session(spec(), settings)  # owned by this (live) process: running
    stop = run_cli("research", "stop", sid, "--json")
    assert stop.exit_code == 0, stop.output
    assert json.loads(stop.stdout) == {"session": sid, "status": "stopping"}


def test_resume_while_another_process_runs_it_is_bad_usage(settings: Settings) -> None:
    sid = create_session(spec(), settings)
    with Journal(settings.journal_path) as journal:
        journal.sessions.update(sid, owner_pid=os.getppid())  # alive, and not us
    result = run_cli("research", "resume", sid)
    assert result.exit_code == 2 and result.stdout == ""
    assert (
        f"session {sid} is running in process {os.getppid()}; stop it with "
        f"`alphaloop research stop {sid}` or wait for it to end"
    ) in one_line(result.stderr)
    with Journal(settings.journal_path) as journal:
        assert journal.trials.of_session(sid) == []


def test_a_session_started_with_a_seed_now_refused_cannot_be_resumed(
    settings: Settings, dead_pid: int
) -> None:
    sid = create_session(spec(), settings)
    with Journal(settings.journal_path) as journal:
        stored = journal.sessions.get(sid).settings.model_dump(mode="json")
        store_settings(journal, sid, {**stored, "spec": {**stored["spec"], "seed": -1}})
        journal.sessions.update(sid, owner_pid=dead_pid)
    result = run_cli("research", "resume", sid)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "seed: Input should be greater than or equal to 0, got -1); start a new session" in (
        one_line(result.stderr)
    )


# -- before any session ------------------------------------------------------------------------


def test_sessions_and_status_on_an_empty_home_answer_no_sessions(settings: Settings) -> None:
    listed = run_cli("sessions", "--json")
    assert listed.exit_code == 0 and json.loads(listed.stdout) == []
    text = run_cli("sessions")
    assert text.exit_code == 0 and "no sessions yet" in text.stdout
    status = run_cli("status", "--json")
    assert status.exit_code == 0
    assert json.loads(status.stdout)["session"] is None
    assert "no sessions yet" in run_cli("status").stdout
    assert not settings.home.exists()  # reading created nothing


def test_knobs_help_has_an_example() -> None:
    result = run_cli("knobs", "--help")
    assert result.exit_code == 0 and "Example: alphaloop knobs" in result.stdout


# -- flags refused before anything runs ------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["trial", "--seed", "-1"], "--seed must be in 0..4294967295, got -1"),
        (["trial", "--seed", "4294967296"], "--seed must be in 0..4294967295, got 4294967296"),
        (["train", "--seed", "-1"], "--seed: Input should be greater than or equal to 0, got -1"),
        (["trial", "--symbols", ","], "no symbols in --symbols ','"),
        (["train", "--symbols", ""], "no symbols in --symbols ''"),
    ],
)
def test_trial_and_train_flags_are_checked_first(
    settings: Settings, args: list[str], message: str
) -> None:
    result = run_cli(*args, "--data", "synthetic")
    assert result.exit_code == 2, result.output
    assert message in one_line(result.stderr) and "Traceback" not in result.output
    assert not settings.home.exists()


def test_an_error_off_a_terminal_stays_on_one_line(settings: Settings, tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*(f"folder-{i:02d}" for i in range(12)), "prices.csv")
    result = run_cli("research", GOAL, "--data", str(deep))
    assert result.exit_code == 2
    [line] = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert line.startswith(f"error: price file not found: {deep}; check the path")
