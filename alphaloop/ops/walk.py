"""Walks: start, run, resume and read one (the research loop replayed over history; see
:mod:`alphaloop.walk`).

The loop is imported on first use, as for sessions, so reading the journal stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import Conflict, NotFound
from alphaloop.journal import RuleName, WalkEpoch, WalkRecord, WalkStatus
from alphaloop.ops._journal import open_journal
from alphaloop.settings import Settings

if TYPE_CHECKING:
    from alphaloop.journal import WalkReport
    from alphaloop.ops.walk_jobs import WalkJob
    from alphaloop.walk import OnWalkEvent, WalkEvent, WalkSpec

__all__ = [
    "EpochView",
    "WalkDetail",
    "WalkEvent",
    "WalkRow",
    "WalkView",
    "check_resume",
    "check_walk",
    "get_walk",
    "list_walks",
    "run_walk",
    "start_walk",
    "walk_job",
    "walk_owner",
    "walk_rows",
    "walk_spec",
    "walk_view",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")
_WALK_FIELDS = frozenset({"cadence", "start", "end", "rule", "workers", "fold_days", "carry"})


def walk_spec(request: BaseModel) -> WalkSpec:
    """The walk a request asks for: the research session it replays (built and checked as
    :func:`~alphaloop.ops.research.session_spec` builds a session's), and how.

    ``request`` is a :class:`~alphaloop.ops.requests.WalkRequest`, or a model derived from it
    (an API body, a chat tool's arguments).

    Raises:
        InvalidRequest: a rule across fields of the session (as for ``research``).
    """
    from alphaloop.ops.requests import FILES, ResearchRequest, WalkRequest
    from alphaloop.ops.research import session_spec
    from alphaloop.walk_spec import WalkSpec

    # The fields a derived model lacks (the command line's own) at their defaults; its data was
    # checked by its own validator, under its caller's context.
    request = WalkRequest.model_validate(request.model_dump(), context={FILES: True})
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


def check_walk(request: BaseModel) -> WalkSpec:
    """The walk a request asks for, checked whole: its session's rules, then its epochs on
    the data (nothing is journaled). What every front end asks before it starts or queues
    anything.

    Raises:
        InvalidRequest: a rule across the session's fields, data that cannot be loaded, a
            cadence, start or end the data cannot hold, or data too short for two epochs
            (the message names what fits, or the shortest span that works).
    """
    from alphaloop.market import market_of
    from alphaloop.walk import plan

    spec = walk_spec(request)
    plan(spec, market_of(spec.session))
    return spec


def start_walk(spec: WalkSpec, settings: Settings, walk_id: str | None = None) -> str:
    """Checks the walk's epochs fit its data, journals it and returns its id (nothing runs);
    ``walk_id``: the id to journal it under (a server draws it to answer with it at once).

    Raises:
        InvalidRequest: data that cannot be loaded, a cadence or start it cannot hold, or data
            too short for two epochs (the message names what fits, or the shortest span).
        Conflict: ``walk_id`` names a walk already journaled.
    """
    from alphaloop.walk import create_walk

    return create_walk(spec, settings, walk_id)


def walk_job(request: BaseModel) -> WalkJob:
    """The job that starts the walk ``request`` asks for (a :class:`WalkRequest`, or the API's
    body: its fields less the local ones), under a walk id drawn now: a server answers with
    that id as soon as the worker journals the walk."""
    from alphaloop.journal.walks import new_walk_id
    from alphaloop.ops.walk_jobs import WalkJob

    return WalkJob(**request.model_dump(), walk_id=new_walk_id())


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
        return resume_command(self.walk)


def resume_command(walk: WalkRecord) -> str | None:
    """The command that continues ``walk``, when it was interrupted or failed."""
    if walk.status in (WalkStatus.interrupted, WalkStatus.failed):
        return f"alphaloop walk resume {walk.id}"
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


def walk_owner(walk_id: str, settings: Settings) -> int | None:
    """The process a walk is journaled as run by, or None while no walk has that id yet (a
    server waits for its worker to journal the walk it asked for)."""
    if not settings.journal_path.exists():
        return None
    with open_journal(settings) as j:
        try:
            return j.walks.get(walk_id).owner_pid
        except NotFound:
            return None


class PickRef(BaseModel):
    """What a rule traded over an epoch's period: a search trial of its session, or the
    default config (``trial_id`` None)."""

    model_config = _FROZEN

    trial_id: int | None
    config_hash: str


class EpochView(BaseModel):
    """An epoch as front ends show it: its session and period and, once traded, what each rule
    traded there (the day-by-day returns stay in the journal)."""

    model_config = _FROZEN

    epoch: int
    session_id: str
    first_day: str
    last_day: str
    traded: bool
    n_days: int | None = None
    picks: dict[RuleName, PickRef] | None = None

    @classmethod
    def of(cls, e: WalkEpoch) -> EpochView:
        r = e.result
        return cls(
            **e.model_dump(include={"epoch", "session_id", "first_day", "last_day"}),
            traded=r is not None,
            n_days=len(r.dates) if r is not None else None,
            picks={k: PickRef(trial_id=t.trial_id, config_hash=t.config_hash)
                   for k, t in r.picks.items()} if r is not None else None,
        )  # fmt: skip


class WalkView(BaseModel):
    """One walk as the command line's ``--json`` and the API show it: the walk (what it was
    started with, where it is, its report once finished), its epochs begun so far, and the
    command that continues it when it stopped."""

    model_config = _FROZEN

    walk: WalkRecord
    epochs: tuple[EpochView, ...]
    resume: str | None


def walk_view(detail: WalkDetail) -> WalkView:
    """``detail`` without the epochs' day-by-day returns."""
    return WalkView(
        walk=detail.walk,
        epochs=tuple(EpochView.of(e) for e in detail.epochs),
        resume=detail.resume_command,
    )


class WalkRow(BaseModel):
    """A walk in a list: where it is and, once finished, its verdict and the Sharpe edges its
    record could detect (over the default config and over 1/N, with 80% power)."""

    model_config = _FROZEN

    id: str
    goal: str
    status: WalkStatus
    cadence: str
    rule: str
    created_at: str
    finished_at: str | None
    error: str | None
    go: bool | None
    verdict: str | None
    first_day: str | None
    last_day: str | None
    n_days: int | None
    n_epochs: int | None
    detectable: dict[str, float | None] | None
    resume: str | None

    @classmethod
    def of(cls, w: WalkRecord) -> WalkRow:
        report = w.report
        return cls(
            **w.model_dump(include={"id", "goal", "status", "created_at", "finished_at", "error"}),
            cadence=report.cadence if report else w.spec.cadence.value,
            rule=report.rule if report else w.spec.rule.value,
            go=report.go if report else None,
            verdict=report.verdict if report else None,
            first_day=report.first_day if report else None,
            last_day=report.last_day if report else None,
            n_days=report.n_days if report else None,
            n_epochs=len(report.epochs) if report else None,
            detectable=dict(report.record().detectable) if report else None,
            resume=resume_command(w),
        )


def walk_rows(settings: Settings) -> list[WalkRow]:
    """Every walk as a list shows it, newest first."""
    return [WalkRow.of(w) for w in list_walks(settings)]
