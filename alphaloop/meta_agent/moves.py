"""The journal's record of where a session's trials run (:mod:`alphaloop.placement` decides
it): a resumed session moved to another cluster or to this machine (a ``Moved`` event, and the
session's stored spec, so later resumes run there too), and each trial's task a Ray cluster
lost and sent again (a ``TrialRetried`` event: a retry, never a crash row).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from alphaloop.journal import EventKind, Journal, SessionRecord
from alphaloop.meta_agent.state import SessionContext
from alphaloop.placement import TrialJob
from alphaloop.spec import SessionSpec

logger = logging.getLogger(__name__)
Spec = TypeVar("Spec", bound=SessionSpec)


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
