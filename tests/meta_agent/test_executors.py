"""Worker processes: trials handed over before the workers are up run in the loop's process (or
go to the workers once they are up, if not started), with the numbers a worker gives; and a
loop waiting on a worker gets its turn to hand out more work."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future

import pytest

from alphaloop.knobs import TrialConfig
from alphaloop.market import MarketData, market_of
from alphaloop.placement import (
    OutcomeStatus,
    TrialJob,
    TrialOutcome,
    execute,
    finished,
    local,
    outcome_of,
)
from alphaloop.placement.local import ProcessTrials
from alphaloop.spec import DataSpec
from alphaloop.trials import TrialBudget, build_folds
from alphaloop.vocabulary import MODES


@pytest.fixture(scope="module")
def data() -> MarketData:
    return market_of(DataSpec(data="synthetic"))


def jobs(data: MarketData, n: int) -> list[TrialJob]:
    """``n`` cheap, distinct cufolio_only jobs on the oldest of 3 folds."""
    fold = build_folds(data, 3)[0]
    return [
        TrialJob(
            mode="cufolio_only",
            config=TrialConfig(n_scenarios=1000, cufolio_hold_days=20 + i),
            budget=TrialBudget(),
            seed=i,
            metric="sharpe",
            policy_dir=None,
            idx=i,
            kind="search",
            rows=fold,
        )
        for i in range(n)
    ]


class GatedTrials(ProcessTrials):
    """Worker processes whose start waits for the test to open ``gate``."""

    gate = threading.Event()

    def _start(self) -> None:
        self.gate.wait(timeout=60)
        super()._start()


@pytest.fixture
def gated(data: MarketData) -> Iterator[GatedTrials]:
    GatedTrials.gate = threading.Event()
    runner = GatedTrials(data, 2, "cufolio_only")
    yield runner
    GatedTrials.gate.set()
    runner.close()


def objective(outcome: TrialOutcome) -> float:
    assert outcome.status is OutcomeStatus.ok, outcome.error
    assert outcome.result is not None
    return outcome.result.objective


def test_before_the_workers_are_up_a_trial_runs_here_with_a_workers_numbers(
    data: MarketData, gated: GatedTrials
) -> None:
    here, handed, later = jobs(data, 3)
    expected = [objective(execute(job, data)) for job in (here, handed, later)]  # the oracle

    first, second = gated.submit(here), gated.submit(handed)
    assert not gated.up and gated.waiting == [first, second]
    assert objective(first.result()) == expected[0]
    assert first.future is None  # it ran in this process: the workers were not up
    assert gated.waiting == [second]

    GatedTrials.gate.set()
    gated._starter.join(timeout=120)
    assert gated.up
    # Not started by the time the workers are up: it goes to them as they come up, before the
    # loop asks for it (a loop busy with a trial of its own leaves no worker idle), and so
    # does a new trial.
    assert second.future is not None and gated.waiting == []
    assert objective(second.result()) == expected[1]
    third = gated.submit(later)
    assert isinstance(third, Future)
    assert objective(third.result()) == expected[2]


def test_a_trial_dropped_before_the_workers_are_up_never_runs(
    data: MarketData, gated: GatedTrials
) -> None:
    [job] = jobs(data, 1)
    local = gated.submit(job)
    assert local.cancel() and gated.waiting == []
    GatedTrials.gate.set()
    gated._starter.join(timeout=120)
    gated.hand_over_waiting()
    assert local.future is None


def test_a_trial_runs_single_threaded_here_as_in_a_worker(
    data: MarketData, gated: GatedTrials, monkeypatch: pytest.MonkeyPatch
) -> None:
    from threadpoolctl import threadpool_info

    seen: list[list[int]] = []

    def spy(job: TrialJob, data: MarketData) -> TrialOutcome:
        seen.append([lib["num_threads"] for lib in threadpool_info()])
        return TrialOutcome(status=OutcomeStatus.crash, error="spied")

    monkeypatch.setattr(local, "execute", spy)
    [job] = jobs(data, 1)
    gated.submit(job).result()
    assert seen and all(n == 1 for n in seen[0])


def test_a_loop_waiting_on_a_worker_is_called_back_until_the_outcome_is_in() -> None:
    future: Future[TrialOutcome] = Future()
    done = TrialOutcome(status=OutcomeStatus.crash, error="x")
    calls: list[int] = []

    def meanwhile() -> None:
        calls.append(1)
        if len(calls) == 3:
            future.set_result(done)

    assert not finished(future)
    assert outcome_of(future, meanwhile) == done
    assert len(calls) == 3 and finished(future)


def test_a_trial_that_runs_here_when_asked_is_not_waited_on() -> None:
    class RunsHere:
        def result(self) -> TrialOutcome:
            return TrialOutcome(status=OutcomeStatus.crash, error=str(os.getpid()))

    def meanwhile() -> None:
        raise AssertionError("nothing to wait for")

    assert finished(RunsHere())
    assert outcome_of(RunsHere(), meanwhile).error == str(os.getpid())


def test_a_worker_that_died_is_the_trials_crash_and_the_callback_is_not_blamed() -> None:
    future: Future[TrialOutcome] = Future()
    future.set_exception(RuntimeError("worker died"))
    outcome = outcome_of(future, lambda: None)
    assert outcome.status is OutcomeStatus.crash and "worker died" in (outcome.error or "")


def test_a_session_ending_before_its_workers_are_up_does_not_wait_for_them(
    data: MarketData, gated: GatedTrials
) -> None:
    [job] = jobs(data, 1)
    assert objective(gated.submit(job).result()) == objective(execute(job, data))
    began = time.monotonic()
    gated.close()
    # Waiting for the workers would never end (they wait for the gate, opened below); seconds
    # are allowed only because a busy machine's threads can be slow to stop.
    assert time.monotonic() - began < 10.0 and not gated.up
    GatedTrials.gate.set()  # the workers come up, and are stopped: they have nothing to run
    gated._starter.join(timeout=120)
    with pytest.raises(RuntimeError, match="after shutdown"):
        gated._pool.submit(local._ready)


SESSION = """
import time
from alphaloop.market import market_of
from alphaloop.spec import DataSpec
from alphaloop.placement.local import ProcessTrials

if __name__ == "__main__":
    trials = ProcessTrials(market_of(DataSpec(data="synthetic")), 2, "cufolio_only")
    while not trials.up:
        time.sleep(0.05)
    print(" ".join(str(pid) for pid in trials._pool._processes), flush=True)
    time.sleep(600)
"""


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.slow
@pytest.mark.heavy  # two worker processes
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc")
def test_workers_end_when_their_session_is_killed(tmp_path) -> None:
    """A SIGKILLed session leaves no worker behind: each ends within seconds."""
    script = tmp_path / "session.py"
    script.write_text(SESSION)
    session = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        workers = [int(pid) for pid in session.stdout.readline().split()]
        assert len(workers) == 2 and all(_running(pid) for pid in workers)
    finally:
        session.kill()
        session.wait()
    deadline = time.monotonic() + 20
    while any(_running(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in workers if _running(pid)]
    for pid in left:  # do not leave them to the rest of the suite
        os.kill(pid, signal.SIGKILL)
    assert not left, f"workers {left} outlived their killed session"


RL_STACK = ("torch", "stable_baselines3")
# Seconds of imports a Mean-CVaR trial does without: HiGHS takes the LP directly, and only the
# loop's statistics need scipy.stats.
MODELLING_STACK = ("cvxpy", "scipy.stats")
# What only the loop's own process needs (the journal, the proposers and their optuna, the
# graph, the settings), and what only a PPO trial or a large solve does (gymnasium; scipy's
# Cholesky for the interior point): tenths of a second each in every fork server's start.
LOOP_STACK = (
    "alphaloop.journal",
    "alphaloop.settings",
    "gymnasium",
    "langgraph",
    "optuna",
    "scipy",
    "sqlite3",
)


def _loaded_after(code: str, modules: tuple[str, ...] = RL_STACK) -> list[str]:
    """The ``modules`` a fresh interpreter holds after running ``code``."""
    report = f"import sys\n{code}\nprint(' '.join(m for m in {modules!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", report], capture_output=True, text=True, check=True, timeout=300
    )
    return done.stdout.split()


def test_the_evaluator_and_its_executors_load_without_the_rl_stack() -> None:
    assert _loaded_after("import alphaloop.placement, alphaloop.trials") == []


def test_a_mean_cvar_sessions_fork_server_loads_no_torch_and_no_cvxpy() -> None:
    code = (
        "import importlib; from alphaloop.placement.local import preload_for; "
        "[importlib.import_module(m) for m in preload_for('cufolio_only')]"
    )
    assert _loaded_after(code, RL_STACK + MODELLING_STACK + LOOP_STACK) == []


MEAN_CVAR_TRIAL = """
from alphaloop.knobs import TrialConfig
from alphaloop.market import market_of
from alphaloop.spec import DataSpec
from alphaloop.placement import TrialJob, execute
from alphaloop.trials import TrialBudget, build_folds

data = market_of(DataSpec(data="synthetic"))
job = TrialJob(
    mode="cufolio_only", config=TrialConfig(n_scenarios=1000), budget=TrialBudget(), seed=0,
    metric="sharpe", policy_dir=None, idx=0, kind="search", rows=build_folds(data, 3)[0],
)
assert execute(job, data).status == "ok"
"""


def test_a_mean_cvar_trial_and_its_baselines_run_without_the_rl_stack_or_cvxpy() -> None:
    assert _loaded_after(MEAN_CVAR_TRIAL, RL_STACK + MODELLING_STACK + LOOP_STACK) == []


@pytest.mark.parametrize("mode", [m for m in MODES if m != "cufolio_only"])
def test_a_ppo_sessions_fork_server_loads_the_trainer_not_torchs_compiler(mode: str) -> None:
    preload = local.preload_for(mode)
    assert preload[0] == local.__name__  # the evaluator, as for every mode
    assert "alphaloop.rl_engine.ppo" in preload
    assert not any(name.startswith("torch._dynamo") for name in preload)


SHARED_SERVER = """
import sys, time
from alphaloop.market import market_of
from alphaloop.spec import DataSpec
from alphaloop.placement.local import ProcessTrials


def loaded() -> list[bool]:
    return [name in sys.modules for name in ("torch", "torch._dynamo")]


if __name__ == "__main__":
    data = market_of(DataSpec(data="synthetic"))
    for mode in ("cufolio_only", "ppo_only"):
        trials = ProcessTrials(data, 2, mode)
        while not trials.up:
            time.sleep(0.05)
        print(mode, *trials._pool.submit(loaded).result(), flush=True)
        trials.close()
"""


WARM_UP = """
import os
from multiprocessing import forkserver
from alphaloop.market import market_of
from alphaloop.spec import DataSpec
from alphaloop.placement.local import ProcessTrials, preload_for, warm_up

if __name__ == "__main__":
    server = forkserver._forkserver
    warm_up(1, None, "cufolio_only")  # one worker: trials run in this process
    warm_up(2, "ray://head:10001", "cufolio_only")  # Ray: no local workers
    print(server._forkserver_pid is None)
    warm_up(2, None, "cufolio_only")
    pid = server._forkserver_pid
    print(pid is not None, server._preload_modules == preload_for("cufolio_only"))
    trials = ProcessTrials(market_of(DataSpec(data="synthetic")), 2, "cufolio_only")
    print(trials._pool.submit(os.getppid).result() == pid)  # forked by the warmed server
    trials.close()
"""


def _script_lines(tmp_path, code: str, *args: str) -> list[str]:
    """What ``code``, run as a script (its own ``__main__``, as workers need) in a fresh
    interpreter with ``args``, prints, line by line."""
    script = tmp_path / "script.py"
    script.write_text(code)
    done = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return done.stdout.split("\n")


def test_warm_up_starts_the_fork_server_the_workers_then_fork_from(tmp_path) -> None:
    assert _script_lines(tmp_path, WARM_UP)[:3] == ["True", "True True", "True"]


START = """
import sys
from multiprocessing import forkserver
from alphaloop import ops
from alphaloop.placement.local import preload_for
from alphaloop.meta_agent.session import SessionSpec
from alphaloop.settings import Settings

if __name__ == "__main__":
    settings = Settings(ALPHALOOP_HOME=sys.argv[1])
    server = forkserver._forkserver
    for workers in (1, 2):
        spec = SessionSpec(goal="g", mode="ppo_only", data="synthetic", workers=workers)
        ops.research.start_session(spec, settings)
        started = server._forkserver_pid is not None
        print(workers, started, server._preload_modules == preload_for("ppo_only"))
"""


def test_starting_a_session_of_several_workers_starts_their_fork_server(tmp_path) -> None:
    """The session runs in the process that starts it: its workers' imports begin before the
    loop's own and the data's load, not after them."""
    lines = _script_lines(tmp_path, START, str(tmp_path / "home"))
    assert lines[:2] == ["1 False False", "2 True True"]


@pytest.mark.slow
def test_a_ppo_session_after_a_mean_cvar_one_gets_workers_with_torch(tmp_path) -> None:
    """The process's fork server started without torch for the first session; the second
    session's workers load torch as they start, not in their first trial (and never torch's
    compiler)."""
    lines = _script_lines(tmp_path, SHARED_SERVER)
    assert lines[:2] == ["cufolio_only False False", "ppo_only True False"]
