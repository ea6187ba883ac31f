"""Where a session's trials run: in the loop's own process (one worker), in worker processes on
this machine, or as Ray tasks on a cluster. Either way a trial is the frozen evaluator's
``run_trial`` on a :class:`TrialJob`, and what comes back is a :class:`~.state.TrialOutcome` (a
failing trial is an outcome, never an exception). The journal is never touched here: the loop
alone writes it.

The market data goes to each worker once per session (a pool initializer's argument, or one
object in Ray's object store), not with every trial. Each worker runs single-threaded (BLAS,
OpenMP and torch), so N workers use N cores and no more.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import AlphaloopError
from alphaloop.knobs import Mode, TrialConfig
from alphaloop.market import MarketData, Window
from alphaloop.meta_agent.state import OutcomeStatus, TrialOutcome
from alphaloop.trials import Rows, TrialBudget
from alphaloop.trials import run_trial as evaluate

logger = logging.getLogger(__name__)

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
        result = evaluate(
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


def outcome_of(pending: Pending) -> TrialOutcome:
    """What a trial produced; a worker that died (or a Ray task lost) is a crash."""
    try:
        return pending.result()
    except Exception as err:  # journaled as the trial's crash, and the loop goes on
        logger.warning("a trial's worker failed: %r", err)
        return TrialOutcome.failed(err)


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
    """Runs trials somewhere else; :meth:`submit` returns at once."""

    workers: int

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

    def __init__(self, data: MarketData) -> None:
        self._data = data

    def submit(self, job: TrialJob) -> _Deferred:
        return _Deferred(job, self._data)

    def close(self, *, wait: bool = True) -> None:
        pass


# --- worker processes ----------------------------------------------------------------------


def _init_worker(data: MarketData) -> None:
    global _data
    single_threaded()
    _data = data


def _run_in_worker(job: TrialJob) -> TrialOutcome:
    if _data is None:
        raise RuntimeError("worker started without the session's data")
    if "torch" in sys.modules:  # loaded by a PPO trial after the initializer ran
        sys.modules["torch"].set_num_threads(1)
    return execute(job, _data)


def _mp_context() -> multiprocessing.context.BaseContext:
    """A fork server that has imported the evaluator once (torch included), so a worker starts
    in milliseconds; never a fork of the driver, whose SQLite connections must not be shared.
    Windows and macOS builds without a fork server spawn."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


class ProcessTrials:
    """Trials in ``workers`` processes on this machine."""

    def __init__(self, data: MarketData, workers: int) -> None:
        self.workers = workers
        self._pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=_mp_context(),
            initializer=_init_worker,
            initargs=(data,),
        )

    def submit(self, job: TrialJob) -> Future[TrialOutcome]:
        return self._pool.submit(_run_in_worker, job)

    def close(self, *, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=True)


# --- Ray -----------------------------------------------------------------------------------


def _run_on_ray(job: TrialJob, data: MarketData) -> TrialOutcome:
    single_threaded()
    return execute(job, data)


class _RayPending:
    def __init__(self, ref: Any, get: Callable[[Any], Any]) -> None:
        self._ref, self._get = ref, get

    def result(self) -> TrialOutcome:
        return self._get(self._ref)


class RayTrials:
    """Trials as Ray tasks (one CPU each) on the cluster at ``address`` (``auto``, or
    ``ray://HOST:PORT`` through Ray Client). A Ray runtime this process already started is
    used as it is, and left running."""

    def __init__(self, data: MarketData, workers: int, address: str) -> None:
        try:
            import ray
        except ImportError:
            raise AlphaloopError(
                "--ray-address needs Ray: pip install 'alphaloop[ray]' (or run without it)"
            ) from None
        self.workers = workers
        self._ray = ray
        self._owned = not ray.is_initialized()
        if self._owned:
            try:
                ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
            except (ConnectionError, RuntimeError, ValueError) as err:
                raise AlphaloopError(
                    f"cannot connect to the Ray cluster at {address!r} ({err}); start one with "
                    "`ray start --head` or check the address"
                ) from None
        self._data = ray.put(data)  # shipped to the object store once per session
        self._task = ray.remote(num_cpus=1, max_retries=0)(_run_on_ray)

    def submit(self, job: TrialJob) -> _RayPending:
        return _RayPending(self._task.remote(job, self._data), self._ray.get)

    def close(self, *, wait: bool = True) -> None:
        if self._owned:
            self._ray.shutdown()


def open_runner(data: MarketData, workers: int, ray_address: str | None) -> TrialRunner:
    """The runner a session asked for: Ray tasks when it gave a Ray address, worker processes
    for more than one worker, else this process."""
    if ray_address:
        return RayTrials(data, workers, ray_address)
    if workers > 1:
        return ProcessTrials(data, workers)
    return InlineTrials(data)
