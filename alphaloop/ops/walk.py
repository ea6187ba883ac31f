"""Walks: start, run, resume and read one (the research loop replayed over history; see
:mod:`alphaloop.walk`).

The loop is imported on first use, as for sessions, so reading the journal stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import Conflict
from alphaloop.journal import WalkEpoch, WalkRecord, WalkStatus
from alphaloop.ops._journal import open_journal
from alphaloop.settings import Settings

if TYPE_CHECKING:
    from alphaloop.journal import WalkReport
    from alphaloop.ops.requests import WalkRequest
    from alphaloop.walk import OnWalkEvent, WalkEvent, WalkSpec

__all__ = [
    "WalkDetail",
    "WalkEvent",
    "check_resume",
    "get_walk",
    "list_walks",
    "run_walk",
    "start_walk",
    "walk_spec",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")
_WALK_FIELDS = frozenset({"cadence", "start", "end", "rule", "workers", "fold_days", "carry"})


def walk_spec(request: WalkRequest) -> WalkSpec:
    """The walk a request asks for: the research session it replays, and how.

    Raises:
        ValidationError: a rule across fields of the session (as for ``research``).
    """
    from alphaloop.ops.requests import ResearchRequest
    from alphaloop.ops.research import session_spec
    from alphaloop.walk import WalkSpec

    session = ResearchRequest.model_construct(**request.model_dump(exclude=_WALK_FIELDS))
    return WalkSpec(
        session=session_spec(session),
        cadence=request.cadence,
        start=request.start,
        end=request.end,
        rule=request.rule,
        workers=request.workers,
        fold_days=request.fold_days,
        carry=request.carry,
    )


def start_walk(spec: WalkSpec, settings: Settings) -> str:
    """Checks the walk's epochs fit its data, journals it and returns its id (nothing runs).

    Raises:
        InvalidRequest: data that cannot be loaded, a cadence or start it cannot hold, or data
            too short for two epochs (the message names what fits, or the shortest span).
    """
    from alphaloop.walk import create_walk

    return create_walk(spec, settings)


def run_walk(walk_id: str, settings: Settings, on_event: OnWalkEvent | None = None) -> WalkReport:
    """Runs (or resumes) a walk to its report; a finished walk's is read back.

    Raises:
        NotFound: no such walk. Conflict: a live process runs it.
        AlphaloopError: an epoch stopped with an error (resume the walk).
    """
    from alphaloop.walk import run_walk as run
    from alphaloop.walk.events import ignore

    return run(walk_id, settings, on_event or ignore)


def check_resume(walk_id: str, settings: Settings) -> None:
    """Checks a walk can be resumed: it has epochs left and no live process runs it.

    Raises:
        NoJournal, NotFound: nothing to resume. Conflict: it is running, or finished.
    """
    with open_journal(settings) as j:
        walk = j.walks.get(walk_id)
    if walk.status == WalkStatus.running:
        raise Conflict(f"walk {walk_id} is running in process {walk.owner_pid}; wait for it")
    if walk.status == WalkStatus.finished:
        raise Conflict(
            f"walk {walk_id} already finished; `alphaloop walk show {walk_id}` shows its report"
        )


class WalkDetail(BaseModel):
    """A walk and its epochs begun so far (each with its session and, once traded, result)."""

    model_config = _FROZEN

    walk: WalkRecord
    epochs: tuple[WalkEpoch, ...]

    @property
    def resume_command(self) -> str | None:
        """The command that continues it, when it was interrupted or failed."""
        if self.walk.status in (WalkStatus.interrupted, WalkStatus.failed):
            return f"alphaloop walk resume {self.walk.id}"
        return None


def get_walk(walk_id: str, settings: Settings) -> WalkDetail:
    """One walk as it reads now.

    Raises:
        NoJournal, NotFound: no such walk.
    """
    with open_journal(settings) as j:
        return WalkDetail(walk=j.walks.get(walk_id), epochs=tuple(j.walks.epochs(walk_id)))


def list_walks(settings: Settings) -> list[WalkRecord]:
    """Every walk, newest first (none before the journal exists)."""
    if not settings.journal_path.exists():
        return []
    with open_journal(settings) as j:
        return j.walks.list()
