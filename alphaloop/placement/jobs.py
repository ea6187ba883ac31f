"""A trial to run and what comes back, wherever it runs: a :class:`TrialJob` (everything the
frozen evaluator's ``run_trial`` needs but the data), :func:`execute` (a failing trial is an
outcome, never an exception), and what a runner returns (:class:`Pending`) and is
(:class:`TrialRunner`). The journal is never touched here: the loop alone writes it.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from concurrent import futures
from concurrent.futures import Future
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import Unavailable
from alphaloop.knobs import TrialConfig
from alphaloop.market import MarketData, Window
from alphaloop.placement.cluster import THREAD_VARS
from alphaloop.placement.outcome import OutcomeStatus, TrialOutcome
from alphaloop.trials import Rows, TrialBudget, run_trial
from alphaloop.vocabulary import Mode

logger = logging.getLogger(__name__)

POLL_S = 0.02  # how often a loop waiting on a worker looks at the rest of its work


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
    for name in THREAD_VARS:
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


def run_on_ray(job: TrialJob, data: MarketData) -> TrialOutcome:
    """A trial as a Ray task, on one thread."""
    single_threaded()
    return execute(job, data)
