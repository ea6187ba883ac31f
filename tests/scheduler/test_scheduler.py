"""The scheduler: cron settings, the journaled runs, run-now, the per-home lock."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.exceptions import InvalidRequest
from alphaloop.journal import Journal
from alphaloop.journal.schedule import ScheduleOutcome
from alphaloop.ops import schedule
from alphaloop.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def test_next_runs_follow_the_cron_settings(settings: Settings) -> None:
    # Monday 2026-11-23 20:00 UTC: the weekday extract fires at 22:00 today, the DPO check at
    # 22:30 today, the retrain on Saturday 2026-11-28 at 03:00.
    monday = datetime(2026, 11, 23, 20, 0, tzinfo=UTC)
    jobs = {j.name: j for j in schedule.list_jobs(settings, now=monday)}
    assert jobs["prefs_extract"].next_run == "2026-11-23T22:00:00+00:00"
    assert jobs["dpo_check"].next_run == "2026-11-23T22:30:00+00:00"
    assert jobs["retrain"].next_run == "2026-11-28T03:00:00+00:00"
    friday_late = datetime(2026, 11, 27, 23, 0, tzinfo=UTC)  # no extract on the weekend
    jobs = {j.name: j for j in schedule.list_jobs(settings, now=friday_late)}
    assert jobs["prefs_extract"].next_run == "2026-11-30T22:00:00+00:00"
    assert all(j.last_run is None for j in jobs.values())


def test_list_reads_each_cron_and_time_whole_at_80_columns(settings: Settings) -> None:
    settings.journal_path.parent.mkdir(parents=True, exist_ok=True)
    result = CliRunner().invoke(app, ["scheduler", "list"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    # every job on one line: its cron whole, its next run to the minute in UTC
    for job in schedule.list_jobs(settings):
        (line,) = [line for line in lines if f" {job.name} " in line]
        assert job.cron in line and job.next_run[:16].replace("T", " ") in line


def test_a_bad_cron_is_refused_naming_its_variable(
    settings: Settings, clean_env: pytest.MonkeyPatch
) -> None:
    with pytest.raises(InvalidRequest, match="ALPHALOOP_CRON_RETRAIN='0 25"):
        schedule.list_jobs(settings.model_copy(update={"cron_retrain": "0 25 * * *"}))
    clean_env.setenv("ALPHALOOP_CRON_DPO_CHECK", "every day")
    result = CliRunner().invoke(app, ["scheduler", "list", "--json"])
    assert result.exit_code == 2 and "ALPHALOOP_CRON_DPO_CHECK" in result.output


def test_run_now_journals_each_run_and_list_shows_the_last(settings: Settings) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["scheduler", "run-now", "retrain", "--json"])
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)
    assert run["job"] == "retrain" and run["trigger"] == "manual"
    assert run["outcome"] == "skipped" and "no finished research session" in run["detail"]
    dpo = json.loads(runner.invoke(app, ["scheduler", "run-now", "dpo_check", "--json"]).stdout)
    assert dpo["outcome"] == "skipped" and dpo["finished_at"] is not None
    # The check's own reason, not its whole result dumped.
    assert dpo["detail"].startswith("0 new labelled pair(s)") and dpo["summary"] == dpo["detail"]
    listed = json.loads(runner.invoke(app, ["scheduler", "list", "--json"]).stdout)
    last = {j["name"]: j["last_run"] for j in listed["jobs"]}
    assert last["retrain"]["id"] == run["id"] and last["dpo_check"]["id"] == dpo["id"]
    assert last["prefs_extract"] is None and listed["scheduler_pid"] is None
    with Journal(settings.journal_path) as j:
        rows = j.schedule.runs()
        assert [(r.job, r.outcome) for r in rows] == [
            ("retrain", ScheduleOutcome.skipped),
            ("dpo_check", ScheduleOutcome.skipped),
        ]
        assert j.schedule.runs(after=rows[0].id)[0].id == rows[1].id
    bad = runner.invoke(app, ["scheduler", "run-now", "nap"])
    assert bad.exit_code == 2 and "choose one of prefs_extract" in bad.output


def test_a_failing_job_is_journaled_failed_and_exits_1(settings: Settings) -> None:
    # A journal holding a session whose spec this alphaloop refuses: the retrain fails.
    with Journal(settings.journal_path) as j:
        from tests.journal.journal_helpers import store_settings
        from tests.server.helpers import new_session

        sid = new_session(j)
        store_settings(j, sid, {"spec": {"goal": "g", "budget": -3}})
        j.sessions.update(sid, status="finished")
    result = CliRunner().invoke(app, ["scheduler", "run-now", "retrain", "--json"])
    assert result.exit_code == 1
    run = json.loads(result.stdout)
    assert run["outcome"] == "failed" and "budget" in run["error"]


@pytest.mark.parametrize(("job", "module", "name"), [
    ("prefs_extract", "alphaloop.ops.prefs", "extract_preferences"),
    ("dpo_check", "alphaloop.ops.dpo", "dpo_check"),
])  # fmt: skip
def test_an_operation_a_job_cannot_import_fails_the_run_not_skips_it(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, job: str, module: str, name: str
) -> None:
    """A renamed or misspelt operation is a failed run with its ImportError, never a quiet
    "skipped" that reads like a night with nothing to do."""
    monkeypatch.delattr(importlib.import_module(module), name)
    with Journal(settings.journal_path):
        pass
    run = schedule.run_job(settings, job)
    assert run.outcome == ScheduleOutcome.failed
    assert "ImportError" in (run.error or "") and name in (run.error or "")


def test_the_store_refuses_to_finish_a_run_twice(settings: Settings) -> None:
    with Journal(settings.journal_path) as j:
        run = j.schedule.start_run("dpo_check", "schedule")
        assert run.outcome == "running" and run.finished_at is None
        done = j.schedule.finish_run(run.id, "ok", detail="trained")
        assert done.outcome == "ok" and done.detail == "trained"
        with pytest.raises(Exception, match="already finished"):
            j.schedule.finish_run(run.id, "failed")
        with pytest.raises(ValueError):
            j.schedule.finish_run(run.id, "running")


def test_a_jobs_result_reads_as_an_object_and_as_one_line(settings: Settings) -> None:
    settings.journal_path.parent.mkdir(parents=True, exist_ok=True)
    with Journal(settings.journal_path):
        pass  # an empty journal: the extract finds nothing, and says so in numbers
    result = CliRunner().invoke(app, ["scheduler", "run-now", "prefs_extract", "--json"])
    run = json.loads(result.stdout)
    assert run["outcome"] == "ok"
    assert run["detail"]["added"] == {"pm": 0, "research": 0} and run["detail"]["pending"] == []
    assert run["summary"] == (
        "added: pm 0, research 0; labelled: pm 0, research 0; pending: none; skipped: none"
    )
    human = CliRunner().invoke(app, ["scheduler", "run-now", "prefs_extract"], terminal_width=200)
    assert "prefs_extract: ok (added: pm 0, research 0;" in human.stdout and "{" not in human.stdout
    with Journal(settings.journal_path) as j:
        run_id = j.schedule.start_run("retrain", "manual").id
        # A message that starts with a brace but is no JSON stays the message.
        done = j.schedule.finish_run(run_id, "skipped", detail="{not json")
    assert done.detail == "{not json" and done.summary == "{not json"


def _cli(home: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "ALPHALOOP_HOME": str(home)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return subprocess.Popen(
        [sys.executable, "-m", "alphaloop", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_one_scheduler_per_home(settings: Settings) -> None:
    first = _cli(settings.home, "scheduler", "start", "--json")
    try:
        assert first.stdout is not None
        started = json.loads(first.stdout.readline())
        assert started["pid"] == first.pid and len(started["jobs"]) == len(schedule.JOBS)
        assert schedule.scheduler_holder(settings) == first.pid
        second = _cli(settings.home, "scheduler", "start")
        _, err = second.communicate(timeout=60)
        assert second.returncode == 2 and f"pid {first.pid}" in " ".join(err.split())
        # the job store beside the journal holds the three jobs with their next run times
        assert (settings.home / "scheduler.db").exists()
    finally:
        first.terminate()
        first.wait(30)
    deadline = time.monotonic() + 10
    while schedule.scheduler_holder(settings) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert schedule.scheduler_holder(settings) is None
