"""``alphaloop walk`` end to end on synthetic data: each epoch a journaled session linked to
its walk, publishing nothing; the record read back from the journal; a walk killed mid-epoch
resumed to the same record as an uninterrupted one; bad input refused with exit 2."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.journal import Journal
from alphaloop.settings import Settings
from alphaloop.validation import sharpe_difference
from tests.cli_processes import spawn, wait_for

WALK = [
    "walk",
    "maximise Sharpe",
    "--data",
    "synthetic",
    "--mode",
    "cufolio_only",
    "--budget",
    "2",
    "--noise-seeds",
    "2",
    "--folds",
    "1",
    "--proposer",
    "tpe",
    "--start",
    "2014-01-01",
]


def run_cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def records(settings: Settings, walk_id: str) -> list[Any]:
    with Journal(settings.journal_path) as journal:
        return journal.walks.epochs(walk_id)


@pytest.mark.slow
def test_a_walk_journals_a_session_per_epoch_and_tests_their_periods(settings: Settings) -> None:
    result = run_cli(*WALK, "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    walk = shown["walk"]
    assert walk["status"] == "finished"
    with Journal(settings.journal_path) as journal:
        epochs = journal.walks.epochs(walk["id"])
        report = journal.walks.get(walk["id"]).report
        sessions = [journal.sessions.get(e.session_id) for e in epochs]
        policies = journal.policies.list()
    assert [e.epoch for e in epochs] == [0, 1] and report is not None
    assert [e.first_day for e in epochs] == ["2014-01-01", "2015-01-01"]
    for epoch, session in zip(epochs, sessions, strict=True):
        # A normal session, finished, on the data cut at its epoch, its TEST the period.
        assert session.status == "finished" and session.final.pick in ("search", "default")
        assert epoch.result.dates[0] == epoch.first_day and epoch.result.dates[-1] == (
            epoch.last_day
        )
        assert session.final.policy_note.startswith("not published")
    assert policies == []  # a walk's epochs never reach the policy library
    # The verdict's tests are the paired tests over the periods end to end.
    rule = report.rule
    pick = np.concatenate([e.result.picks[rule].returns for e in epochs])
    default = np.concatenate([e.result.default for e in epochs])
    equal = np.concatenate([e.result.equal_weight for e in epochs])
    assert report.n_days == pick.size == sum(len(e.result.dates) for e in epochs)
    own = report.record()
    assert own.excess["equal_weight"].test.p_value == sharpe_difference(pick, equal).p_value
    if not np.array_equal(pick, default):
        assert own.excess["default"].test.p_value == sharpe_difference(pick, default).p_value
    # The default's period returns are its session's own TEST row.
    with Journal(settings.journal_path) as journal:
        tests = journal.trials.of_session(epochs[0].session_id, kind="test")
        base = sessions[0].final.baseline_trial_id
    [row] = [t for t in tests if t.parent_id == base]
    assert tuple(row.val_returns) == epochs[0].result.default

    show = run_cli("walk", "show", walk["id"])
    shown_text = " ".join(show.output.replace("│", " ").split())
    assert show.exit_code == 0 and report.verdict.split(";")[0] in shown_text
    listed = json.loads(run_cli("walk", "list", "--json").stdout)
    assert [w["id"] for w in listed] == [walk["id"]]


def _second_epoch_running(journal: Journal) -> Any:
    walks = journal.walks.list()
    if not walks:
        return None
    epochs = journal.walks.epochs(walks[0].id)
    if len(epochs) < 2:
        return None
    running = journal.trials.of_session(epochs[1].session_id, kind="search")
    return (walks[0].id, epochs) if any(t.status == "running" for t in running) else None


@pytest.mark.slow
@pytest.mark.heavy  # the walk's session with two worker processes
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_walk_killed_mid_epoch_resumes_to_the_record_of_an_uninterrupted_one(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: str
) -> None:
    proc = spawn([*WALK, "--workers", workers, "--json"], settings, tmp_path / "walk.out")
    try:
        walk_id, begun = wait_for(settings, _second_epoch_running, proc, timeout=120)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    # An epoch's process ends with its walk's (at once on Linux, else within a second).
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with Journal(settings.journal_path) as journal:
            assert journal.walks.get(walk_id).status == "interrupted"
            interrupted = journal.sessions.get(begun[1].session_id)
        if interrupted.status == "interrupted":
            break
        time.sleep(0.1)
    assert interrupted.status == "interrupted"

    resumed = run_cli("walk", "resume", walk_id, "--json")
    assert resumed.exit_code == 0, resumed.output
    after = records(settings, walk_id)
    # Every epoch ran once: the same sessions, none created again.
    assert [e.session_id for e in after] == [e.session_id for e in begun]
    with Journal(settings.journal_path) as journal:
        assert len(journal.sessions.list()) == 2
        report = journal.walks.get(walk_id).report
        cut = journal.trials.of_session(begun[1].session_id)
    assert sum(t.error == "interrupted" for t in cut) <= 1

    # The same walk, never interrupted, in another home: the same record.
    monkeypatch.setenv("ALPHALOOP_HOME", str(tmp_path / "clean"))
    clean = run_cli(*WALK, "--json")
    assert clean.exit_code == 0, clean.output
    clean_id = json.loads(clean.stdout)["walk"]["id"]
    with Journal(tmp_path / "clean" / "journal.db") as journal:
        expected = journal.walks.get(clean_id).report
        clean_epochs = journal.walks.epochs(clean_id)
    for a, b in zip(after, clean_epochs, strict=True):
        # Trial ids differ (the resumed session journaled the cut trial's row too), not what
        # traded: the same config, the same days.
        for rule, traded in a.result.picks.items():
            other = b.result.picks[rule]
            assert (traded.config_hash, traded.returns) == (other.config_hash, other.returns)
        assert a.result.default == b.result.default
    assert report.records == expected.records and report.verdict == expected.verdict


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--start", "2010-06-01"], "the earliest yearly start is 2012-01-02"),
        (["--start", "2015-06-01"], "fewer than two yearly epochs"),
        (["--cadence", "weekly"], "cadence"),
        (["--rule", "lucky"], "rule"),
    ],
)
def test_bad_walks_exit_2_naming_what_fits(settings: Settings, args, message) -> None:
    base = [a for a in WALK if a not in ("--start", "2014-01-01")]
    result = run_cli(*base, *args)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert not settings.journal_path.exists() or not records_any(settings)


def records_any(settings: Settings) -> bool:
    with Journal(settings.journal_path) as journal:
        return bool(journal.walks.list())


def test_resuming_a_finished_or_unknown_walk_exits_2(settings: Settings) -> None:
    unknown = run_cli("walk", "resume", "w-20260101-000000-abcd")
    assert unknown.exit_code == 2
