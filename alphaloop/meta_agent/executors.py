"""Where a session's trials run: in the loop's own process (one worker), in worker processes on
this machine, or as Ray tasks on a cluster. Either way a trial is the frozen evaluator's
``run_trial`` on a :class:`TrialJob`, and what comes back is a :class:`~.outcome.TrialOutcome` (a
failing trial is an outcome, never an exception). The journal is never touched here: the loop
alone writes it.

The market data goes to each worker once per session (a pool initializer's argument, or one
object in Ray's object store), not with every trial. Each worker runs single-threaded (BLAS,
OpenMP and torch), so N workers use N cores and no more.

Worker processes take seconds to start (their fork server imports the evaluator, and torch
when the session's mode trains PPO), as long as several trials: so they start in the
background, and the trials handed over before they are up run in the loop's own process
meanwhile (see :class:`ProcessTrials`).
"""

from __future__ import annotations

import importlib
import logging
import multiprocessing
import os
import select
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent import futures
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import Unavailable
from alphaloop.knobs import TrialConfig
from alphaloop.market import MarketData, Window
from alphaloop.meta_agent.cluster import LOCAL, on_ray
from alphaloop.meta_agent.outcome import OutcomeStatus, TrialOutcome
from alphaloop.trials import Rows, TrialBudget, known_baselines, remember_baselines, run_trial
from alphaloop.vocabulary import Mode

if TYPE_CHECKING:
    from alphaloop.settings import Settings

logger = logging.getLogger(__name__)

POLL_S = 0.02  # how often a loop waiting on a worker looks at the rest of its work
_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
_data: MarketData | None = None  # a worker process's copy of the session's data


class TrialJob(BaseModel):
    """One trial to run: everything ``run_trial`` needs but the data (a pure function of it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Mode
    config: TrialConfig
    budget: TrialBudget
    seed: int
    metric: str
    policy_dir: str | None  # where a trained policy is saved (None: not kept)
    idx: int  # for logs only
    kind: str
    window: Window = "validation"
    rows: Rows | None = None  # explicit rows to score instead of ``window`` (a fold)
    policy_path: str | None = None  # evaluate this saved policy instead of training one


def execute(job: TrialJob, data: MarketData) -> TrialOutcome:
    """Runs ``job`` on ``data``; a failing trial is an outcome, never an exception."""
    try:
        result = run_trial(
            job.mode,
            job.config,
            data,
            job.budget,
            job.seed,
            window=job.rows or job.window,
            metric=job.metric,
            policy_dir=job.policy_dir,
            policy_path=job.policy_path,
        )
    except Exception as err:  # a failing trial is a journaled crash, and the loop goes on
        outcome = TrialOutcome.failed(err)
        logger.warning("trial %d (%s) ended %s: %s", job.idx, job.kind, outcome.status, err)
        return outcome
    return TrialOutcome(status=OutcomeStatus.ok, result=result)


def outcome_of(pending: Pending, meanwhile: Callable[[], None] | None = None) -> TrialOutcome:
    """What a trial produced; a worker that died (or a Ray task lost) is a crash.

    ``meanwhile`` is called every :data:`POLL_S` seconds while a worker process runs the trial
    (the loop's chance to hand its workers more work; see ``folding``)."""
    if meanwhile is not None:
        while not finished(pending, POLL_S):
            meanwhile()
    try:
        return pending.result()
    except Unavailable:
        raise  # the cluster failed, not the trial: the session stops, and resumes elsewhere
    except Exception as err:  # journaled as the trial's crash, and the loop goes on
        logger.warning("a trial's worker failed: %r", err)
        return TrialOutcome.failed(err)


def finished(pending: Pending, timeout: float = 0.0) -> bool:
    """Whether ``pending``'s outcome is in, waiting up to ``timeout`` seconds for it. A trial
    that runs in this process when asked for counts as finished: asking for it waits on no
    worker process here."""
    wait = getattr(pending, "wait", None)  # a Ray task's
    if wait is not None:
        return bool(wait(timeout))
    future = pending if isinstance(pending, Future) else getattr(pending, "future", None)
    if future is None:
        return True
    return bool(futures.wait([future], timeout).done)


def single_threaded() -> None:
    """Caps this process at one thread for BLAS, OpenMP and torch (a worker's share)."""
    for name in _THREAD_VARS:
        os.environ[name] = "1"  # read by libraries loaded after this (torch's OpenMP)
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)  # the ones already loaded (numpy's BLAS, unpickling the data)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


class Pending(Protocol):
    def result(self) -> TrialOutcome: ...


class TrialRunner(Protocol):
    """Runs trials somewhere else; :meth:`submit` returns at once. ``where`` is how the journal
    names the place (``local``, ``ray:HOST:PORT`` or ``ray://HOST:PORT``)."""

    workers: int
    where: str

    def submit(self, job: TrialJob) -> Pending: ...

    def close(self, *, wait: bool = True) -> None: ...


# --- in the loop's process ----------------------------------------------------------------


class _Deferred:
    """A trial that runs when its result is asked for (in the caller's thread)."""

    def __init__(self, job: TrialJob, data: MarketData) -> None:
        self._job, self._data = job, data
        self._outcome: TrialOutcome | None = None

    def result(self) -> TrialOutcome:
        if self._outcome is None:
            self._outcome = execute(self._job, self._data)
        return self._outcome


class InlineTrials:
    """One worker: each trial runs in this process when the loop waits for it, so a session
    with one worker pays no process start or data shipping, and keeps the threads BLAS and
    torch would use anyway."""

    workers = 1
    where = LOCAL

    def __init__(self, data: MarketData) -> None:
        self._data = data

    def submit(self, job: TrialJob) -> _Deferred:
        return _Deferred(job, self._data)

    def close(self, *, wait: bool = True) -> None:
        pass


# --- worker processes ----------------------------------------------------------------------


def _init_worker(
    data: MarketData, session_pid: int | None = None, preload: Sequence[str] = ()
) -> None:
    global _data
    _import_all(preload)
    single_threaded()
    _data = data
    if session_pid is not None:
        _exit_with(session_pid)


def _import_all(modules: Sequence[str]) -> None:
    """Imports what the fork server should have (see :func:`preload_for`), unless it has.

    It has, usually, and this costs nothing. It has not under spawn, or when this process
    started its fork server earlier for a session that trains no PPO: a PPO session's worker
    then imports torch here, while the loop runs its first trials, not in its first trial."""
    for name in modules:
        if name not in sys.modules:
            importlib.import_module(name)


def _exit_with(pid: int) -> None:
    """Ends this worker process as soon as process ``pid`` (the session's) is gone, however it
    ended. A worker is the fork server's child, not the session's, and holds its task queue's
    write end itself: after a SIGKILL of the session nothing else would ever wake it, and it
    would wait on that queue for good, holding its memory. It writes no journal, so ending it
    at any point loses nothing."""
    try:
        handle: int | None = os.pidfd_open(pid)  # Linux >= 5.3: readable once ``pid`` exits
    except (AttributeError, OSError):  # no pidfd here, or ``pid`` is already gone
        handle = None

    def watch() -> None:
        if handle is not None:
            select.select([handle], [], [])
        else:
            while _alive(pid):
                time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="session-watch", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process now holds the number: ours is gone
        return False
    return True


def _run_in_worker(job: TrialJob, baselines: dict | None = None) -> TrialOutcome:
    """Runs ``job`` in a worker process, first taking in the ``baselines`` the loop's process
    knows (see ``trials.known_baselines``)."""
    if _data is None:
        raise RuntimeError("worker started without the session's data")
    remember_baselines(baselines or {})
    if "torch" in sys.modules:  # loaded by a PPO trial after the initializer ran
        sys.modules["torch"].set_num_threads(1)
    return execute(job, _data)


def _ready() -> int:
    return os.getpid()


# What a fork server imports once for every worker it forks. Every mode runs the evaluator
# (this module imports it, and the trial's outcome type from ``outcome``: none of torch, cvxpy,
# scipy, gymnasium, the journal or the proposers) and its LP solver, HiGHS. A mode that trains
# PPO also needs the trainer (torch and stable-baselines3, over a second); a Mean-CVaR
# session's workers never touch torch, and its fork server starts that much sooner without
# them. (The trainer never needs torch's compiler, ``torch._dynamo``: see
# ``rl_engine.numpy_adam``.)
_EVALUATOR = (__name__, "highspy")
_PPO = ("alphaloop.rl_engine.ppo",)


def preload_for(mode: str) -> list[str]:
    """The modules the fork server imports for the workers of a ``mode`` session."""
    return list(_EVALUATOR) if mode == "cufolio_only" else [*_EVALUATOR, *_PPO]


def _mp_context(preload: list[str]) -> multiprocessing.context.BaseContext:
    """A fork server that has imported ``preload`` once, so a worker starts in milliseconds;
    never a fork of the driver, whose SQLite connections must not be shared. Windows and macOS
    builds without a fork server spawn.

    A process has one fork server, started with the first worker it forks and kept until the
    process ends: what it imports is the preload of the first session to start workers here.
    A later session of another mode shares it. One that trains PPO after a Mean-CVaR session
    gets workers without torch, which import it when they start (:func:`_import_all`): the
    same trials and numbers, seconds later. The command line and the server's jobs run one
    session per process; only a process that runs several in turn (the tests) meets this."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(preload)
    return context


class _Local:
    """A trial handed to :class:`ProcessTrials` before its workers were up: it runs in the
    loop's process when its outcome is asked for, unless the workers are up by then and it has
    not started, in which case it goes to them (with every other such trial, in order)."""

    def __init__(self, job: TrialJob, runner: ProcessTrials) -> None:
        self.job, self._runner = job, runner
        self.future: Future[TrialOutcome] | None = None
        self._outcome: TrialOutcome | None = None

    def cancel(self) -> bool:
        """Drops the trial unless it already runs (as a worker's future would)."""
        future = self._runner.claim(self)
        return True if future is None else future.cancel()

    def result(self) -> TrialOutcome:
        if self._outcome is not None:
            return self._outcome
        self._runner.hand_over_waiting()
        future = self._runner.claim(self)
        if future is not None:
            return future.result()
        self._outcome = self._runner.run_here(self.job)
        return self._outcome


class ProcessTrials:
    """Trials in ``workers`` processes on this machine.

    The processes start in a background thread. Until they are up, a trial handed over waits
    in this process and runs here (single-threaded, as in a worker) when its outcome is asked
    for: the loop computes on one core while the workers start on the other, instead of
    waiting seconds for them. A trial is a pure function of its job, so where it ran changes
    no number. The baselines' metrics of the windows those trials scored go to the workers
    with every trial, so no worker computes them again.
    """

    where = LOCAL

    def __init__(self, data: MarketData, workers: int, mode: str) -> None:
        self.workers = workers
        self._data = data
        preload = preload_for(mode)
        self._pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=_mp_context(preload),
            initializer=_init_worker,
            initargs=(data, os.getpid(), preload),
        )
        self.waiting: list[_Local] = []  # trials handed over before the workers were up
        self._up = threading.Event()
        # Between ``close``, the workers coming up and the trials waiting for them.
        self._lock = threading.Lock()
        self._closed = False
        self._starter = threading.Thread(target=self._start, name="trial-workers", daemon=True)
        self._starter.start()

    def _start(self) -> None:
        """Starts every worker (a pool starts one per trial submitted while none is idle) and
        returns when one has run a trial, so all of them have forked."""
        try:
            started = [self._pool.submit(_ready) for _ in range(self.workers)]
            futures.wait(started, return_when=futures.FIRST_COMPLETED)
        except RuntimeError:  # closed before its workers were up
            pass
        finally:
            with self._lock:
                self._up.set()
                closed = self._closed
            if closed:
                self._pool.shutdown(wait=False, cancel_futures=True)
            else:
                # The loop may be busy running a trial here: the others waiting go now.
                self.hand_over_waiting()

    @property
    def up(self) -> bool:
        """Whether the worker processes are up (trials handed over from now on go to them)."""
        return self._up.is_set()

    def submit(self, job: TrialJob) -> Pending:
        with self._lock:
            if not self._up.is_set():
                local = _Local(job, self)
                self.waiting.append(local)
                return local
        self.hand_over_waiting()
        return self._to_worker(job)

    def hand_over_waiting(self) -> None:
        """Once the workers are up, sends them the trials waiting here, oldest first. Called by
        the loop, and by the thread that started the workers as soon as they are up."""
        with self._lock:
            if not self._up.is_set() or self._closed:
                return
            for local in self.waiting:
                local.future = self._to_worker(local.job)
            self.waiting.clear()

    def claim(self, local: _Local) -> Future[TrialOutcome] | None:
        """The worker's future of ``local`` if it went to one; else None, and ``local`` is
        taken out of the trials waiting here (the caller runs or drops it)."""
        with self._lock:
            if local.future is None and local in self.waiting:
                self.waiting.remove(local)
            return local.future

    def _to_worker(self, job: TrialJob) -> Future[TrialOutcome]:
        # The baselines the trials run here computed go along: a worker need not compute them.
        return self._pool.submit(_run_in_worker, job, known_baselines())

    def run_here(self, job: TrialJob) -> TrialOutcome:
        """Runs ``job`` in this process on one thread, as a worker would (the other cores are
        the workers')."""
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):
            return execute(job, self._data)

    def close(self, *, wait: bool = True) -> None:
        """Stops the workers. Workers still starting ran nothing: the session does not wait
        for them to come up only to stop them (the starting thread stops them once up)."""
        with self._lock:
            self._closed = True
            up = self._up.is_set()
        if up:
            self._pool.shutdown(wait=wait, cancel_futures=True)


# --- Ray (the runner: :mod:`.ray_trials`) --------------------------------------------------


def run_on_ray(job: TrialJob, data: MarketData) -> TrialOutcome:
    """A trial as a Ray task, on one thread."""
    single_threaded()
    return execute(job, data)


def _in_processes(workers: int, ray_address: str | None) -> bool:
    """Whether :func:`open_runner` runs trials in worker processes on this machine."""
    return not on_ray(ray_address) and workers > 1


def warm_up(workers: int, ray_address: str | None, mode: str) -> None:
    """Starts this process's fork server for ``mode`` now when the runner :func:`open_runner`
    will open runs worker processes, so the seconds it takes to import the evaluator (and
    torch) pass while the session loads its data rather than after. Returns at once: the server
    imports in its own process, and the first worker forked waits for it."""
    if not _in_processes(workers, ray_address):
        return
    context = _mp_context(preload_for(mode))
    if context.get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


def open_runner(
    data: MarketData,
    workers: int,
    ray_address: str | None,
    mode: str,
    settings: Settings | None = None,
    on_lost: Callable[[TrialJob, int, str], None] | None = None,
) -> TrialRunner:
    """The runner a session asked for: Ray tasks when it gave a Ray address (reached within
    the settings' timeout, every node checked first; ``on_lost`` told of each task lost and
    sent again), worker processes for more than one worker (ready for ``mode``'s trials), else
    this process.

    Raises:
        Unavailable: the cluster does not answer, or a node cannot run the trials.
    """
    if on_ray(ray_address):
        from alphaloop.meta_agent.ray_trials import RayTrials

        return RayTrials(
            data,
            workers,
            ray_address,
            mode,
            timeout_s=settings.ray_connect_timeout_s if settings else 30.0,
            retries=settings.ray_task_retries if settings else 3,
            on_lost=on_lost,
        )
    if _in_processes(workers, ray_address):
        return ProcessTrials(data, workers, mode)
    return InlineTrials(data)
