"""Trials on this machine: in the loop's own process (one worker, :class:`InlineTrials`), or in
worker processes (:class:`ProcessTrials`).

The market data goes to each worker once per session (a pool initializer's argument), not with
every trial. Each worker runs single-threaded (BLAS, OpenMP and torch), so N workers use N
cores and no more.

Worker processes take seconds to start (their fork server imports the evaluator, and torch
when the session's mode trains PPO), as long as several trials: so they start in the
background, and the trials handed over before they are up run in the loop's own process
meanwhile (see :class:`ProcessTrials`).
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import select
import sys
import threading
import time
from collections.abc import Sequence
from concurrent import futures
from concurrent.futures import Future, ProcessPoolExecutor

from alphaloop.market import MarketData
from alphaloop.placement.cluster import LOCAL, on_ray
from alphaloop.placement.jobs import Pending, TrialJob, execute, single_threaded
from alphaloop.placement.outcome import TrialOutcome
from alphaloop.trials import known_baselines, remember_baselines

_data: MarketData | None = None  # a worker process's copy of the session's data


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


def in_processes(workers: int, ray_address: str | None) -> bool:
    """Whether :func:`alphaloop.placement.place` runs trials in worker processes on this machine."""
    return not on_ray(ray_address) and workers > 1


def warm_up(workers: int, ray_address: str | None, mode: str) -> None:
    """Starts this process's fork server for ``mode`` now when the runner
    :func:`alphaloop.placement.place` will open runs worker processes, so the seconds it takes
    to import the evaluator (and torch) pass while the session loads its data rather than
    after. Returns at once: the server imports in its own process, and the first worker forked
    waits for it."""
    if not in_processes(workers, ray_address):
        return
    context = _mp_context(preload_for(mode))
    if context.get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()
