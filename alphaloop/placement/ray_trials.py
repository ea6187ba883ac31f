"""Trials as Ray tasks, and the tasks a dead worker or node took run again.

A trial's task is a pure function of its job and the data, so a task lost with its Ray worker
or node (the worker crashed or was killed, its node died, its result died with the node, Ray's
memory monitor killed it) is no failure of the trial: it runs again, once per loss, up to
``ALPHALOOP_RAY_TASK_RETRIES`` times, and the loop journals each loss as a ``TrialRetried``
event, never as a crash row, so a loss costs no budget. A trial that fails on its own (a bad
config, a NaN) returns a crash outcome from inside its task, as it would on this machine, and
is a crash once. One loss past the bound, or an error of Ray's own that no rerun can mend (a
runtime environment that cannot be set up), stops the session with
:class:`~alphaloop.exceptions.Unavailable`; it resumes on another cluster or here.

Ray itself retries nothing (``max_retries=0``): each loss must reach the loop to be journaled.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

from alphaloop.exceptions import Unavailable
from alphaloop.market import MarketData
from alphaloop.placement.jobs import TrialJob, run_on_ray
from alphaloop.placement.outcome import TrialOutcome
from alphaloop.placement.preflight import reach

if TYPE_CHECKING:
    from ray import ObjectRef

logger = logging.getLogger(__name__)

# Told (job, losses so far, what Ray said) each time a trial's task is lost and sent again.
OnLost = Callable[[TrialJob, int, str], None]


def _losses(ray: ModuleType) -> tuple[type[BaseException], ...]:
    """Ray's errors for a task lost with its worker or node (not raised by the task itself)."""
    e = ray.exceptions
    return (
        e.WorkerCrashedError,
        e.NodeDiedError,
        e.ObjectLostError,  # its result, on a node that died (owner or reconstruction lost too)
        e.OutOfMemoryError,
        e.LocalRayletDiedError,
    )


class RayTrials:
    """Trials as Ray tasks (one CPU each) on the cluster at ``address`` (``auto``,
    ``HOST:PORT`` or ``ray://HOST:PORT``), reached within ``timeout_s`` and checked node by
    node first (see :mod:`.cluster`). The data goes to the object store once per session.

    ``on_lost`` is told of each lost task as it is sent again (the session journals it)."""

    def __init__(
        self,
        data: MarketData,
        workers: int,
        address: str,
        mode: str,
        *,
        timeout_s: float = 30.0,
        retries: int = 3,
        on_lost: OnLost | None = None,
    ) -> None:
        self.workers = workers
        self.retries = retries
        self.on_lost = on_lost
        self._address = address
        # The data goes to the object store once per session.
        self._cluster, self._data = reach(address, data, mode, timeout_s)
        self.where = self._cluster.where
        import ray

        self.ray = ray
        self._losses = _losses(ray)
        self._task = ray.remote(num_cpus=1, max_retries=0)(run_on_ray)

    def send(self, job: TrialJob) -> ObjectRef[TrialOutcome]:
        """Starts ``job``'s task; returns its object ref."""
        return self._task.remote(job, self._data)

    def submit(self, job: TrialJob) -> RayPending:
        return RayPending(self, job)

    def lost(self, job: TrialJob, losses: int, err: BaseException) -> ObjectRef[TrialOutcome]:
        """Sends ``job`` again after its ``losses``-th lost task; returns the new task's ref.

        Raises:
            Unavailable: more losses than the bound allows.
        """
        said = str(err).strip().splitlines()[0][:300] if str(err).strip() else repr(err)
        if losses > self.retries:
            raise Unavailable(
                f"trial {job.idx} ({job.kind}) lost its Ray task {losses} times on the cluster "
                f"at {self._address} (last: {said}): it loses workers or nodes faster than it "
                "runs a trial. The session stopped; resume it here with `alphaloop research "
                "resume SESSION --ray-address local` or on another cluster (or allow more "
                f"reruns: ALPHALOOP_RAY_TASK_RETRIES, now {self.retries})"
            )
        logger.warning(
            "trial %d (%s): its Ray task was lost (%s); running it again", job.idx, job.kind, said
        )
        if self.on_lost is not None:
            self.on_lost(job, losses, said)
        return self.send(job)

    def is_loss(self, err: BaseException) -> bool:
        return isinstance(err, self._losses)

    def close(self, *, wait: bool = True) -> None:
        self._cluster.close()


class RayPending:
    """A trial's task on Ray: its outcome once in, its task sent again whenever it is lost."""

    def __init__(self, trials: RayTrials, job: TrialJob) -> None:
        self._trials, self.job = trials, job
        self._ref = trials.send(job)
        self._outcome: TrialOutcome | None = None
        self.losses = 0

    def wait(self, timeout: float) -> bool:
        """Whether the outcome is in, waiting up to ``timeout`` seconds (a lost task is sent
        again, and is not in)."""
        if self._outcome is None:
            ready, _ = self._trials.ray.wait([self._ref], timeout=timeout)
            if ready:
                self._take()
        return self._outcome is not None

    def result(self) -> TrialOutcome:
        while self._outcome is None:
            self._take()
        return self._outcome

    def cancel(self) -> bool:
        """Stops the task (its outcome will never be read)."""
        self._trials.ray.cancel(self._ref)
        return True

    def _take(self) -> None:
        ray = self._trials.ray
        try:
            self._outcome = ray.get(self._ref)
        except ray.exceptions.RayTaskError:
            raise  # the trial's own failure (caught where outcomes are read: a crash)
        except ray.exceptions.RayError as err:
            if not self._trials.is_loss(err):
                raise Unavailable(
                    f"Ray could not run trial {self.job.idx} ({self.job.kind}) on the cluster at "
                    f"{self._trials.where.removeprefix('ray:')}: {str(err).splitlines()[0]}"
                ) from err
            self.losses += 1
            self._ref = self._trials.lost(self.job, self.losses, err)
