"""Trials as Ray tasks on a local 2-CPU Ray instance this process starts: a short session's trials
run there with the journal kept on the driver; a task whose worker is killed runs again and is
reported once; one loss past the bound stops the session instead of counting a crash; a trial
that fails on its own is a crash once."""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.exceptions import Unavailable
from alphaloop.journal import Journal
from alphaloop.knobs import TrialConfig
from alphaloop.market import MarketData, market_of
from alphaloop.placement import OutcomeStatus, TrialJob, execute, outcome_of
from alphaloop.settings import Settings
from alphaloop.spec import DataSpec
from alphaloop.trials import Rows, TrialBudget

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'alphaloop[ray]')")
pytestmark = [pytest.mark.slow, pytest.mark.heavy]  # a Ray instance of two CPUs


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    """A local Ray instance with 2 CPUs whose files stay in a temporary directory (a short
    one: Ray's socket paths must fit in 107 characters)."""
    short = Path(tempfile.mkdtemp(prefix="ray-"))
    saved = dict(os.environ)  # ray.init leaves variables of its own (RAY_CLIENT_MODE...)
    os.environ["RAY_TMPDIR"] = str(short)
    os.environ["RAY_AUTH_MODE"] = "disabled"  # no token saved in ~/.ray for a throwaway instance
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=str(short), log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(short, ignore_errors=True)


@pytest.fixture(scope="module")
def data() -> MarketData:
    return market_of(DataSpec(data="sp500"))


def job(**fields: Any) -> TrialJob:
    values: dict[str, Any] = dict(
        mode="cufolio_only",
        config=TrialConfig(),
        budget=TrialBudget(),
        seed=0,
        metric="sharpe",
        policy_dir=None,
        idx=7,
        kind="search",
    )
    return TrialJob(**{**values, **fields})


def freeze_a_running_trial(timeout_s: float = 60.0) -> int:
    """Stops (SIGSTOP) this process's Ray worker while it runs a trial's task; returns its pid."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for pid in _descendants(os.getpid()):
            if _title(pid).startswith("ray::run_on_ray"):
                os.kill(pid, signal.SIGSTOP)
                if _title(pid).startswith("ray::run_on_ray"):
                    return pid
                os.kill(pid, signal.SIGCONT)
        time.sleep(0.01)
    raise AssertionError("no Ray worker ran the trial")


def _title(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return ""


def _descendants(root: int) -> list[int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found = []
    for pid in parents:
        up = parents.get(pid)
        while up is not None and up != root:
            up = parents.get(up)
        if up == root:
            found.append(pid)
    return found


def test_a_task_lost_with_its_worker_runs_again_and_is_reported_once(
    local_ray: Any, data: MarketData
) -> None:
    from alphaloop.placement.ray_trials import RayTrials

    lost: list[tuple[int, int, str]] = []
    trials = RayTrials(
        data, 2, "auto", "cufolio_only", on_lost=lambda j, n, s: lost.append((j.idx, n, s))
    )
    try:
        pending = trials.submit(job())
        os.kill(freeze_a_running_trial(), signal.SIGKILL)
        outcome = outcome_of(pending)
    finally:
        trials.close()
    assert [(idx, n) for idx, n, _ in lost] == [(7, 1)] and "worker died" in lost[0][2]
    assert outcome.status is OutcomeStatus.ok
    here = execute(job(), data)  # the rerun's numbers are the trial's, wherever it ran
    assert outcome.result.objective == here.result.objective
    assert local_ray.is_initialized()  # a runtime found running is left to its owner


def test_one_loss_past_the_bound_stops_the_session_instead_of_a_crash(
    local_ray: Any, data: MarketData
) -> None:
    from alphaloop.placement.ray_trials import RayTrials

    lost: list[int] = []
    trials = RayTrials(
        data, 2, "auto", "cufolio_only", retries=0, on_lost=lambda j, n, s: lost.append(n)
    )
    try:
        pending = trials.submit(job(idx=3, kind="baseline"))
        os.kill(freeze_a_running_trial(), signal.SIGKILL)
        with pytest.raises(Unavailable, match=r"trial 3 \(baseline\) lost its Ray task 1 times"):
            outcome_of(pending)  # not a crash outcome: the cluster failed, not the trial
    finally:
        trials.close()
    assert lost == []  # nothing rerun, nothing reported as a rerun


def test_a_trial_that_fails_on_its_own_is_a_crash_once(local_ray: Any, data: MarketData) -> None:
    from alphaloop.placement.ray_trials import RayTrials

    lost: list[int] = []
    trials = RayTrials(data, 2, "auto", "cufolio_only", on_lost=lambda j, n, s: lost.append(n))
    beyond = len(data.returns) + 10
    try:
        outcome = outcome_of(trials.submit(job(rows=Rows(start=beyond - 50, stop=beyond))))
    finally:
        trials.close()
    assert outcome.status is OutcomeStatus.crash and lost == []
    assert outcome.error == execute(job(rows=Rows(start=beyond - 50, stop=beyond)), data).error


def test_a_session_runs_its_trials_on_ray(settings: Settings, local_ray: Any) -> None:
    result = CliRunner().invoke(
        app,
        [
            "research",
            "maximise validation Sharpe",
            "--mode",
            "cufolio_only",
            "--budget",
            "3",
            "--data",
            "synthetic",
            "--noise-seeds",
            "2",
            "--proposer",
            "random",
            "--workers",
            "2",
            "--ray-address",
            "auto",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    review = json.loads(result.stdout)
    sid = review["session"]["id"]
    with Journal(settings.journal_path) as journal:
        rows = journal.trials.of_session(sid, series=False)
        session = journal.sessions.get(sid)
    assert session.spec.ray_address == "auto"
    assert [t.idx for t in rows] == list(range(len(rows)))
    assert session.status == "finished" and session.final.n_trials == 3
    search = [t for t in rows if t.kind == "search"]
    assert len(search) == 3 and all(t.status in ("keep", "discard") for t in search)
    assert all(t.objective is not None and t.elapsed_s > 0 for t in search)
    assert {t.ran_on for t in rows} == {f"ray:{local_ray.get_runtime_context().gcs_address}"}
    # A Ray runtime the session found running is left running for its owner.
    assert local_ray.is_initialized()
