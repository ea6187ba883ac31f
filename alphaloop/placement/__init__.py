"""Where a session's trials run: in the loop's own process, in worker processes on this machine,
or as Ray tasks on a cluster (reached within a bound, checked node by node first).

The session calls this package's functions and nothing inside it: :func:`placed` (a new
session's place: the address it names, else ``RAY_ADDRESS``), :func:`moved` (a resumed one's),
:func:`check` (a cluster reached and every node checked before anything is journaled),
:func:`warm_up` and :func:`place`, which returns the :class:`TrialRunner` its trials run on.
A trial is the frozen evaluator's ``run_trial`` on a :class:`TrialJob` wherever it runs, and
what comes back is a :class:`TrialOutcome`. Nothing here imports the session, the loop or the
journal: the loop alone writes the journal.

Modules: ``jobs`` (a trial to run, its outcome's wait), ``outcome``, ``local`` (this process
and worker processes), ``cluster`` (reaching a Ray cluster), ``preflight`` (its nodes checked),
``ray_trials`` (trials as Ray tasks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar

from alphaloop.market import MarketData
from alphaloop.placement.cluster import LOCAL, on_ray, resolve_address
from alphaloop.placement.jobs import (
    Pending,
    TrialJob,
    TrialRunner,
    execute,
    finished,
    outcome_of,
)
from alphaloop.placement.local import InlineTrials, ProcessTrials, in_processes
from alphaloop.placement.local import warm_up as _warm_up
from alphaloop.placement.outcome import TRACEBACK_TAIL, OutcomeStatus, TrialOutcome

if TYPE_CHECKING:  # a trial worker imports this package: the settings stay out of it
    from alphaloop.settings import Settings

__all__ = [
    "LOCAL",
    "TRACEBACK_TAIL",
    "OnLost",
    "OutcomeStatus",
    "Pending",
    "Placeable",
    "TrialJob",
    "TrialOutcome",
    "TrialRunner",
    "check",
    "execute",
    "finished",
    "moved",
    "on_ray",
    "outcome_of",
    "place",
    "placed",
    "warm_up",
]

# Told (job, losses so far, what Ray said) each time a trial's Ray task is lost and sent again.
OnLost = Callable[[TrialJob, int, str], None]


class Placeable(Protocol):
    """What placing a session reads of its spec (a frozen model: changed by copies)."""

    workers: int
    ray_address: str | None
    mode: str

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> Self: ...

    def model_dump(self) -> dict[str, Any]: ...


Spec = TypeVar("Spec", bound=Placeable)


def placed(spec: Spec, settings: Settings) -> Spec:
    """``spec`` with the place its trials run resolved: ``RAY_ADDRESS`` when it names none."""
    address = resolve_address(spec.ray_address, settings)
    return spec if address == spec.ray_address else spec.model_copy(update={"ray_address": address})


def moved(spec: Spec, workers: int | None, ray_address: str | None) -> Spec:
    """``spec`` run with ``workers`` at ``ray_address`` (each None: as before)."""
    if ray_address is not None and not on_ray(ray_address) and not on_ray(spec.ray_address):
        ray_address = spec.ray_address  # this machine either way (None or local)
    update = {"workers": workers, "ray_address": ray_address}
    update = {k: v for k, v in update.items() if v is not None}
    if not update:
        return spec
    return type(spec)(**{**spec.model_dump(), **update})  # validated


def check(spec: Placeable, data: MarketData, settings: Settings) -> None:
    """Reaches the cluster ``spec`` runs on, if any (within the settings' timeout), puts
    ``data`` there and checks every node can run its trials, before anything is journaled; the
    connection is kept for :func:`place`.

    Raises:
        Unavailable: the cluster does not answer, or a node cannot run the trials.
    """
    if on_ray(spec.ray_address):
        from alphaloop.placement.preflight import reach

        reach(spec.ray_address, data, spec.mode, settings.ray_connect_timeout_s)


def warm_up(spec: Placeable) -> None:
    """Starts this process's fork server for ``spec``'s trials now when :func:`place` will run
    them in worker processes (see :func:`alphaloop.placement.local.warm_up`)."""
    _warm_up(spec.workers, spec.ray_address, spec.mode)


def place(
    spec: Placeable,
    data: MarketData,
    settings: Settings | None = None,
    on_lost: OnLost | None = None,
) -> TrialRunner:
    """The runner ``spec`` asks for: Ray tasks when it gives a Ray address (reached within the
    settings' timeout, every node checked first; ``on_lost`` told of each task lost and sent
    again), worker processes for more than one worker (ready for its mode's trials), else this
    process.

    Raises:
        Unavailable: the cluster does not answer, or a node cannot run the trials.
    """
    if on_ray(spec.ray_address):
        from alphaloop.placement.ray_trials import RayTrials

        return RayTrials(
            data,
            spec.workers,
            spec.ray_address,
            spec.mode,
            timeout_s=settings.ray_connect_timeout_s if settings else 30.0,
            retries=settings.ray_task_retries if settings else 3,
            on_lost=on_lost,
        )
    if in_processes(spec.workers, spec.ray_address):
        return ProcessTrials(data, spec.workers, spec.mode)
    return InlineTrials(data)
