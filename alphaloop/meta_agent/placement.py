"""Where a session's trials run, and the journal's record of it: the place a new session names
(or ``RAY_ADDRESS``), a resumed session moved to another cluster or to this machine (a ``Moved``
event, and the session's stored spec, so later resumes run there too), and each trial's task a
Ray cluster lost and sent again (a ``TrialRetried`` event: a retry, never a crash row).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from alphaloop.journal import EventKind, Journal, SessionRecord
from alphaloop.meta_agent.cluster import on_ray, resolve_address
from alphaloop.meta_agent.executors import TrialJob
from alphaloop.meta_agent.state import SessionContext
from alphaloop.settings import Settings
from alphaloop.spec import SessionSpec

logger = logging.getLogger(__name__)
Spec = TypeVar("Spec", bound=SessionSpec)


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


def journal_move(journal: Journal, session: SessionRecord, before: Spec, after: Spec) -> None:
    """Journals where a session's trials run from now on (its stored spec too, so a later
    resume runs there)."""

    def place(spec: Spec) -> dict[str, Any]:
        return {"workers": spec.workers, "ray_address": spec.ray_address}

    logger.info("session %s: moved from %s to %s", session.id, place(before), place(after))
    journal.logs.add_event(session.id, EventKind.moved, {"from": place(before), "to": place(after)})
    journal.sessions.update(
        session.id, settings=session.settings.model_copy(update={"spec": after})
    )


def loss_journal(ctx: SessionContext) -> Callable[[TrialJob, int, str], None]:
    """Journals each trial's task a Ray cluster lost and the runner sent again (a retry, not a
    crash: no row, no budget)."""

    def journal_loss(job: TrialJob, losses: int, said: str) -> None:
        ctx.journal.logs.add_event(
            ctx.session_id,
            EventKind.trial_retried,
            {
                "idx": job.idx,
                "kind": job.kind,
                "rows": [job.rows.start, job.rows.stop] if job.rows else job.window,
                "loss": losses,
                "where": ctx.runner.where if ctx.runner else None,
                "error": said,
            },
        )

    return journal_loss
