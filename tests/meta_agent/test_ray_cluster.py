"""Sessions on a real two-node Ray cluster in a network namespace with only loopback (see
``tests/loopback_cluster.py``), driven through the command line as a user would.

The drill kills a Ray worker, then a whole node, at seeded points of a ``--json`` session: the
lost tasks run again (one ``TrialRetried`` event per loss), no trial row is duplicated, lost or
counted as a crash, the budget is spent on trials only, and stdout is one JSON document. A
session moves from this machine to the cluster and back with ``research resume``, and the
journal says where each trial ran. A node that cannot import the evaluator fails the session
before anything is journaled, and is named. A walk's epochs, side by side, send their trials
to the cluster and make the record the same walk makes here.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.loopback_cluster import LoopbackCluster, available

pytestmark = [pytest.mark.slow, pytest.mark.heavy]  # a cluster of two nodes of a CPU each
SEED = 47
SESSION = ["--mode", "cufolio_only", "--data", "synthetic", "--noise-seeds", "2"]
SESSION += ["--proposer", "random", "--seed", "3"]
CLIENT = "ray://127.0.0.1:10001"


# A node's ``highspy`` (the evaluator's LP solver) as a package that fails to import while the
# file BROKEN exists, and hands over to the real one otherwise: a node that lacks a dependency,
# switched on and off without restarting it (a Ray worker serves one session's job only, and
# imports afresh for the next).
SHIM = """
import importlib, os, sys
if os.path.exists(os.path.join(os.path.dirname(__file__), "..", "BROKEN")):
    raise ImportError("no HiGHS on this node")
sys.path.remove(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
del sys.modules[__name__]
sys.modules[__name__] = importlib.import_module(__name__)
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[LoopbackCluster]:
    """A head and a node of one CPU each; the node's ``highspy`` can be broken (see SHIM)."""
    why = available()
    if why is not None:
        pytest.skip(why)
    c = LoopbackCluster()
    shim = c.root / "shim"
    (shim / "highspy").mkdir(parents=True)
    (shim / "highspy" / "__init__.py").write_text(SHIM)
    try:
        yield c.start((1, 1), node_env={"PYTHONPATH": f"{shim}{os.pathsep}{c.env['PYTHONPATH']}"})
    finally:
        c.close()


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "alphaloop", *args]


def rows(home: Path, sql: str, *params: Any) -> list[tuple]:
    """Reads the journal the session's process writes (read-only, so never in its way)."""
    path = home / "journal.db"
    if not path.exists():
        return []
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30) as conn:
        try:
            return conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError:  # tables not created yet
            return []


def finished(home: Path) -> int:
    found = rows(home, "SELECT COUNT(*) FROM trials WHERE status != 'running'")
    return found[0][0] if found else 0


def retried(home: Path) -> list[dict[str, Any]]:
    found = rows(home, "SELECT payload FROM events WHERE kind = 'TrialRetried' ORDER BY id")
    return [json.loads(p) for (p,) in found]


def wait_for(
    what: str, check: Callable[[], Any], proc: subprocess.Popen, timeout_s: float = 120.0
) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (found := check()):
        if proc.poll() is not None:
            raise AssertionError(f"the session ended (exit {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
    return found


def freeze_running_worker(
    cluster: LoopbackCluster,
    pids: Callable[[], list[int]],
    rng: random.Random,
    proc: subprocess.Popen,
) -> int:
    """Stops (SIGSTOP) one Ray worker of ``pids()`` in the middle of a trial's task: a worker
    found running one is frozen, and let go again if it finished meanwhile, so a kill that
    follows cannot fall between two tasks."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        running = sorted(pids())
        if not running:
            time.sleep(0.02)
            continue
        pid = rng.choice(running)
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            continue
        if pid in cluster.workers_running():
            return pid
        os.kill(pid, signal.SIGCONT)
    raise AssertionError(f"no Ray worker ran a trial's task (session exit {proc.poll()})")


def test_a_node_that_cannot_import_the_evaluator_fails_the_session_up_front(
    cluster: LoopbackCluster, tmp_path: Path
) -> None:
    node, home = cluster.nodes[1], tmp_path / "home"
    broken = cluster.root / "shim" / "BROKEN"
    broken.touch()
    try:
        started = time.monotonic()
        done = cluster.exec(
            # Through Ray Client (the head serves it on 10001): its probe, its upload of the
            # package and the check all run as through the GCS address.
            cli("research", "g", *SESSION, "--budget", "2", "--ray-address", CLIENT),
            {"ALPHALOOP_HOME": str(home)},
            capture_output=True,
            timeout=300,
        )
        took = time.monotonic() - started
    finally:
        broken.unlink()
    err = done.stderr.decode()
    assert done.returncode == 1, err[-3000:]
    assert "cannot import highspy" in err and "no HiGHS on this node" in err, err[-3000:]
    assert err.count("(id ") == 1  # that node alone, named
    named = err.split("(id ")[1][:12]
    logs = b"".join(p.read_bytes() for p in node.files.glob("session_*/logs/raylet.out"))
    assert f"node_id={named}".encode() in logs or named.encode() in logs
    assert rows(home, "SELECT COUNT(*) FROM sessions") in ([], [(0,)])  # nothing journaled
    assert took < 120


def test_the_drill_kills_a_worker_then_a_node_and_nothing_is_lost(
    cluster: LoopbackCluster, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    # enough trials that node 1 still runs tasks after the second kill's rows: at 12, and once
    # in five runs at 20, a session finished before a task landed there again
    home, budget = tmp_path / "home", 32
    worker_at = rng.randint(3, 5)  # finished rows before each kill
    node_at = worker_at + rng.randint(2, 4)
    args = cli("research", "max Sharpe", *SESSION, "--budget", str(budget), "--workers", "2")
    # Files, not pipes: a pipe nobody reads while the test waits would stall the session.
    stdout, stderr = tmp_path / "stdout", tmp_path / "stderr"
    with stdout.open("wb") as out, stderr.open("wb") as err:
        proc = cluster.popen(
            [*args, "--ray-address", cluster.address, "--json"],
            {"ALPHALOOP_HOME": str(home)},
            stdout=out,
            stderr=err,
        )
    try:
        wait_for(f"{worker_at} finished rows", lambda: finished(home) >= worker_at, proc)
        os.kill(freeze_running_worker(cluster, cluster.workers_running, rng, proc), signal.SIGKILL)
        wait_for("the lost task's rerun", lambda: retried(home), proc)
        assert len(retried(home)) == 1  # one loss, one rerun
        wait_for(f"{node_at} finished rows", lambda: finished(home) >= node_at, proc)
        node = cluster.nodes[1]

        def on_node() -> list[int]:
            return sorted(set(cluster.workers_running()) & set(cluster.processes_of(node)))

        freeze_running_worker(cluster, on_node, rng, proc)
        cluster.kill_node(node)  # the frozen worker with it: its task is lost with the node
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out, err = stdout.read_bytes(), stderr.read_bytes()
    assert proc.returncode == 0, err.decode()[-3000:]
    review = json.loads(out)  # stdout is one JSON document, Ray's lines notwithstanding
    assert b"(raylet)" not in out and b"(raylet)" in err  # Ray's word on the losses: stderr
    sid = review["session"]["id"]
    trials = rows(
        home, "SELECT id, idx, kind, status, counted, error, ran_on FROM trials "
        "WHERE session_id = ? ORDER BY idx", sid,
    )  # fmt: skip
    assert [t[1] for t in trials] == list(range(len(trials)))  # no row lost or duplicated
    assert all(t[3] in ("keep", "discard") for t in trials), trials  # no crash, none interrupted
    assert sum(t[4] for t in trials) == budget == sum(t[2] == "search" for t in trials)
    assert {t[6] for t in trials} == {f"ray:{cluster.address}"}
    folds = rows(home, "SELECT trial_id, fold FROM trial_folds")
    assert len(folds) == len(set(folds))  # each fold journaled once
    scored = {t[0] for t in trials if t[2] != "test"}  # a test row scores TEST, not the folds
    assert scored == {trial for trial, _ in folds}  # every trial has its folds
    events = retried(home)
    assert len(events) >= 2
    by_task: dict[tuple, list[int]] = {}
    for e in events:  # a task lost again in its rerun counts on: 1, 2, ... (never restarts)
        by_task.setdefault((e["idx"], tuple(e["rows"])), []).append(e["loss"])
    assert all(losses == list(range(1, len(losses) + 1)) for losses in by_task.values())
    assert "worker died" in events[0]["error"]
    assert b"has been marked dead" in err  # Ray saw the node go (and said so on stderr)
    assert cluster.processes_of(node) == []
    assert {e["idx"] for e in events} <= {t[1] for t in trials}


def test_a_session_moves_from_here_to_the_cluster_and_back(
    cluster: LoopbackCluster, tmp_path: Path
) -> None:
    home, budget = tmp_path / "home", 6
    env = {"ALPHALOOP_HOME": str(home)}

    def killed_after(args: list[str], n: int) -> None:
        proc = cluster.popen(args, env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(f"{n} finished rows", lambda: finished(home) >= n, proc)
        finally:
            proc.kill()
            proc.wait()

    killed_after(cli("research", "max Sharpe", *SESSION, "--budget", str(budget)), 3)
    (sid,) = rows(home, "SELECT id FROM sessions")[0]
    moved = ["--ray-address", cluster.address, "--workers", "2"]
    killed_after(cli("research", "resume", sid, *moved), finished(home) + 3)
    back = cluster.exec(
        cli("research", "resume", sid, "--ray-address", "local", "--json"),
        env,
        capture_output=True,
        timeout=300,
    )
    assert back.returncode == 0, back.stderr.decode()[-3000:]
    assert json.loads(back.stdout)["session"]["status"] == "finished"
    trials = rows(home, "SELECT idx, status, error, ran_on FROM trials ORDER BY idx")
    places = [t[3] for t in trials]
    ray = f"ray:{cluster.address}"
    # Where each trial ran, in order: here, then the cluster, then here again.
    assert places[0] == "local" and ray in places and places[-1] == "local"
    first_ray, last_ray = places.index(ray), len(places) - 1 - places[::-1].index(ray)
    assert set(places[:first_ray]) == {"local"} and set(places[first_ray : last_ray + 1]) == {ray}
    assert set(places[last_ray + 1 :]) == {"local"}
    moves = [
        json.loads(p) for (p,) in rows(home, "SELECT payload FROM events WHERE kind = 'Moved'")
    ]
    here, there, back_here = (
        {"workers": 1, "ray_address": None},
        {"workers": 2, "ray_address": cluster.address},
        {"workers": 2, "ray_address": "local"},
    )
    assert moves == [{"from": here, "to": there}, {"from": there, "to": back_here}]
    counted = rows(home, "SELECT COUNT(*) FROM trials WHERE counted = 1")[0][0]
    assert counted == budget
    crashes = [t for t in trials if t[1] == "crash" and t[2] != "interrupted"]
    assert crashes == []  # the kills interrupted trials; none crashed


def test_a_walks_epochs_run_their_trials_on_the_cluster(
    cluster: LoopbackCluster, tmp_path: Path
) -> None:
    """Two epochs side by side, each an own process whose session sends its trials to the
    cluster: every trial ran there, and the record is the one the same walk makes here."""
    walk = ["walk", "max Sharpe", *SESSION, "--budget", "2", "--folds", "1"]
    walk += ["--start", "2014-01-01", "--workers", "2", "--json"]
    records = {}
    for where in ("local", cluster.address):
        home = tmp_path / where.replace(":", "_")
        done = cluster.exec(
            cli(*walk, "--ray-address", where),
            {"ALPHALOOP_HOME": str(home)},
            capture_output=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr.decode()[-3000:]
        shown = json.loads(done.stdout)["walk"]
        assert shown["status"] == "finished"
        places = {p for (p,) in rows(home, "SELECT ran_on FROM trials")}
        assert places == {"local" if where == "local" else f"ray:{cluster.address}"}
        results = rows(home, "SELECT result FROM walk_epochs ORDER BY epoch")
        records[where] = [same_anywhere(json.loads(r)) for (r,) in results]
    assert len(records["local"]) == 2
    assert records["local"] == records[cluster.address]


def same_anywhere(result: dict[str, Any]) -> dict[str, Any]:
    """An epoch's result without the ids its journal drew (sessions, trial rows): what was
    traded, by config, on which days, with which returns."""
    picks = {r: (p["config_hash"], p["returns"]) for r, p in result["picks"].items()}
    kept = {k: result[k] for k in ("epoch", "start", "end", "dates", "default", "equal_weight")}
    return {**kept, "picks": picks, "scores": [s for _, s in result["candidates"]]}
