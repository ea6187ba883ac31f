"""The scheduler's jobs and their user-level actions: list them, run one now.

Four jobs, each on a cron expression from the settings:

- ``prefs_extract``: turn the portfolio manager's labelled decisions and the research journal
  into preference pairs (:func:`alphaloop.ops.prefs.extract_preferences`);
- ``dpo_check``: train DPO when enough new pairs exist (:func:`alphaloop.ops.dpo.dpo_check`);
- ``retrain``: a research session with the last finished session's settings on the newest
  data; finalize puts its winner into the policy library;
- ``pm_tick``: after the close of each trading day of the books' calendar, one tick of each
  scheduled book for the next trading day, through the same job as the API's tick (a worker
  process, journaled in ``jobs``). Weekends and holidays are skipped; a day already ticked is
  not ticked again; days no tick decided since the book's last (the machine was off) are
  reported in the run's detail, never back-filled.

Every run, scheduled or by hand, is journaled in ``schedule_runs`` with its outcome (ok,
skipped, failed), error and a one-line detail. Each job's operation is imported when it runs
(``scheduler list`` loads none of them); an import that fails is the run's failure, never a
skip.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from alphaloop import telemetry
from alphaloop.exceptions import AlphaloopError, Conflict, InvalidRequest
from alphaloop.journal import Journal
from alphaloop.journal.schedule import ScheduleOutcome, ScheduleRunRecord, ScheduleTrigger
from alphaloop.ops._journal import open_journal
from alphaloop.settings import Settings
from alphaloop.spec import SessionSpec, labelled_goal

if TYPE_CHECKING:
    from apscheduler.triggers.cron import CronTrigger

    from alphaloop.pm.calendar import TradingCalendar

logger = logging.getLogger(__name__)

_DETAIL_CHARS = 2000
TICK_WAIT_S = 600.0  # a tick's worker loads the policy's data and decides: seconds, not minutes


class Skipped(Exception):
    """A job found nothing to do; its message is the run's detail. Control flow within the
    scheduler's runner (which journals the run ``skipped``), never an error a front end sees."""


class JobSpec(BaseModel):
    """One job: its name, the setting holding its cron expression, what it does."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    setting: str
    description: str


JOBS: dict[str, JobSpec] = {
    j.name: j
    for j in (
        JobSpec(
            name="prefs_extract",
            setting="cron_prefs_extract",
            description="nightly: label decisions and journal proposals into preference pairs",
        ),
        JobSpec(
            name="dpo_check",
            setting="cron_dpo_check",
            description="train DPO on the preference pairs when enough new ones exist",
        ),
        JobSpec(
            name="retrain",
            setting="cron_retrain",
            description="weekly: rerun the last finished research session on the newest data; "
            "its winner enters the policy library",
        ),
        JobSpec(
            name="pm_tick",
            setting="cron_pm_tick",
            description="each trading day after the close: tick the scheduled books for the "
            "next trading day (weekends and holidays skipped, a missed day reported)",
        ),
    )
}


class JobInfo(BaseModel):
    """A job as ``scheduler list`` shows it: its cron, next fire time and last run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str
    cron: str
    setting: str
    next_run: str | None
    last_run: ScheduleRunRecord | None


def job_spec(name: str) -> JobSpec:
    """The job called ``name``.

    Raises:
        InvalidRequest: no such job (the message lists them).
    """
    if name not in JOBS:
        raise InvalidRequest(f"unknown job {name!r}; choose one of {', '.join(JOBS)}")
    return JOBS[name]


def cron_trigger(expression: str, setting: str = "cron") -> CronTrigger:
    """An APScheduler ``CronTrigger`` (UTC) for a five-field crontab expression.

    Raises:
        InvalidRequest: the expression is not a valid crontab line (names the setting).
    """
    from apscheduler.triggers.cron import CronTrigger

    try:
        return CronTrigger.from_crontab(expression, timezone=UTC)
    except ValueError as err:
        env = "ALPHALOOP_" + setting.upper()
        raise InvalidRequest(
            f"{env}={expression!r} is not a crontab expression ({err}); write five fields, "
            "minute hour day month weekday, e.g. '0 22 * * mon-fri'"
        ) from None


def job_triggers(settings: Settings) -> dict[str, Any]:
    """Every job's trigger, checked: a bad expression fails before any job is scheduled."""
    return {name: cron_trigger(getattr(settings, j.setting), j.setting) for name, j in JOBS.items()}


def list_jobs(settings: Settings, *, now: datetime | None = None) -> list[JobInfo]:
    """The jobs with their next fire time (from their cron, UTC) and last journaled run.

    Raises:
        InvalidRequest: a cron setting is not a valid expression.
    """
    moment = now or datetime.now(UTC)
    triggers = job_triggers(settings)
    last: dict[str, ScheduleRunRecord | None] = dict.fromkeys(JOBS)
    if settings.journal_path.exists():
        with open_journal(settings) as journal:
            last = {name: journal.schedule.last_run(name) for name in JOBS}
    infos = []
    for name, spec in JOBS.items():
        fire = triggers[name].get_next_fire_time(None, moment)
        infos.append(
            JobInfo(
                name=name,
                description=spec.description,
                cron=getattr(settings, spec.setting),
                setting=spec.setting,
                next_run=fire.isoformat() if fire else None,
                last_run=last[name],
            )
        )
    return infos


def schedule_runs(
    settings: Settings, *, job: str | None = None, after: int = 0
) -> list[ScheduleRunRecord]:
    """Journaled runs with an id above ``after`` (of one job if given), oldest first."""
    if job is not None:
        job_spec(job)
    if not settings.journal_path.exists():
        return []
    with open_journal(settings) as journal:
        return journal.schedule.runs(job, after=after)


def run_job(
    settings: Settings, name: str, trigger: ScheduleTrigger | str = ScheduleTrigger.manual
) -> ScheduleRunRecord:
    """Runs one job now, in this process, and journals the run (start, end, outcome).

    A failing job is journaled ``failed`` with its error and returned, not raised: a scheduler
    must outlive its jobs.

    Raises:
        InvalidRequest: no such job.
    """
    spec = job_spec(name)
    work = _WORK[spec.name]
    with Journal(settings.journal_path) as journal:
        run = journal.schedule.start_run(spec.name, trigger)
    with telemetry.span(f"schedule {spec.name}", {"alphaloop.job": spec.name}):
        outcome, detail, error = ScheduleOutcome.ok, None, None
        try:
            detail = _one_line(work(settings))
        except Skipped as err:
            outcome, detail = ScheduleOutcome.skipped, str(err)
        except Exception as err:
            logger.exception("job %s failed", spec.name)
            outcome = ScheduleOutcome.failed
            error = f"{err!r}\n{traceback.format_exc()[-_DETAIL_CHARS:]}"
    with Journal(settings.journal_path) as journal:
        return journal.schedule.finish_run(run.id, outcome, detail=detail, error=error)


def _one_line(result: Any) -> str | None:
    if result is None:
        return None
    if isinstance(result, BaseModel):
        result = result.model_dump(mode="json")
    text = result if isinstance(result, str) else json.dumps(result, default=str)
    return text[:_DETAIL_CHARS]


def _prefs_extract(settings: Settings) -> Any:
    if not settings.journal_path.exists():
        raise Skipped("no journal yet: no decisions or sessions to extract pairs from")
    from alphaloop.ops.prefs import extract_preferences

    return extract_preferences(settings)


def _dpo_check(settings: Settings) -> Any:
    from alphaloop.ops.dpo import dpo_check

    result = dpo_check(settings)
    # A check that found too few pairs trained nothing: a skip, not a success.
    data = result.model_dump() if isinstance(result, BaseModel) else result
    if isinstance(data, dict) and data.get("trained") is False:
        reason = (data.get("run") or {}).get("reason")  # the skipped run says why
        raise Skipped(str(reason or json.dumps(data, default=str)))
    return result


def retrain_spec(settings: Settings) -> tuple[str, Any]:
    """The last finished research session's id and the spec that reruns it on the newest data.

    The spec keeps the session's mode, goal, objective, scope and budget; explicit split dates
    are dropped so the newest data is split afresh.

    Raises:
        Skipped: no finished research session to retrain.
    """
    if not settings.journal_path.exists():
        raise Skipped("no journal yet: no finished research session to retrain")
    with open_journal(settings) as journal:
        done = [
            s
            for s in journal.sessions.list()
            if s.status == "finished"
            and not s.manual
            and (s.spec is not None or s.settings.unread is not None)
        ]
    if not done:
        raise Skipped("no finished research session to retrain")
    last = done[0]
    if not isinstance(last.spec, SessionSpec):
        raise AlphaloopError(
            f"session {last.id} was started with a setting this alphaloop refuses "
            f"({last.settings.unread}); it cannot be retrained"
        )
    goal = last.spec.goal
    if not goal.startswith("weekly retrain"):
        goal = labelled_goal(goal, before=f"weekly retrain of {last.id}: ")
    fields = {"goal": goal, "train_end": None, "val_end": None, "test_end": None}
    return last.id, SessionSpec(**{**last.spec.model_dump(), **fields})


def _retrain(settings: Settings) -> dict[str, Any]:
    from alphaloop.ops.research import run_research

    parent, spec = retrain_spec(settings)
    session_id = run_research(spec, settings)
    with open_journal(settings) as journal:
        final = journal.sessions.get(session_id).final
    return {
        "retrained": parent,
        "session": session_id,
        "best_trial_id": final.best_trial_id if final else None,
    }


def now() -> datetime:
    """The clock the daily tick reads its day from (UTC)."""
    return datetime.now(UTC)


def _pm_tick(settings: Settings) -> dict[str, Any]:
    from alphaloop.pm.calendar import TradingCalendar

    calendar = TradingCalendar(settings.pm_calendar)
    today = now().date()
    closed = calendar.why_closed(today)
    if closed is not None:
        raise Skipped(f"{closed}: no close to tick from")
    day = calendar.next_session(today)
    books = [_tick_book(settings, book, day, calendar) for book in settings.scheduled_books]
    failed = [b for b in books if b["outcome"] == "failed"]
    if failed:
        raise RuntimeError("; ".join(f"book {b['book']}: {b['error']}" for b in failed))
    if all(b["outcome"] == "skipped" for b in books):
        raise Skipped("; ".join(f"book {b['book']}: {b['why']}" for b in books))
    return {"day": str(day), "books": books}


def _tick_book(
    settings: Settings, book: str, day: date, calendar: TradingCalendar
) -> dict[str, Any]:
    """One scheduled tick of ``book`` for ``day``, through a ``pm_tick`` job; what happened."""
    from alphaloop.ops.jobs import PmTickJob, start_job, wait_for_job

    with open_journal(settings) as journal:
        decided = journal.books.decision_on(book, str(day)) if journal.books.get(book) else None
        last = journal.books.list_decisions(book, limit=1) if journal.books.get(book) else []
    if decided is not None:
        return {"book": book, "outcome": "skipped", "why": f"{day} was ticked already "
                f"(decision {decided.id})", "decision_id": decided.id}  # fmt: skip
    missed = []
    if last:
        since = datetime.fromisoformat(last[0].date).date()
        missed = [str(d) for d in calendar.sessions_between(since, day)]
    if missed:
        logger.warning(
            "book %s: no tick decided %s (not back-filled; `alphaloop pm tick --date DAY`)",
            book,
            ", ".join(missed),
        )
    view = start_job(settings, PmTickJob(date=day, book=book))
    view = wait_for_job(settings, view.id, lambda v: False, timeout_s=TICK_WAIT_S)
    found: dict[str, Any] = {"book": book, "day": str(day), "job_id": view.id, "missed": missed}
    if view.error is not None or view.result is None:
        why = view.error.message if view.error else f"job {view.id} is still {view.status}"
        return {**found, "outcome": "failed", "error": why}
    result: Any = view.result
    return {**found, "outcome": "ok", "decision_id": result.decision_id, "status": result.status}


_WORK: dict[str, Callable[[Settings], Any]] = {
    "prefs_extract": _prefs_extract,
    "dpo_check": _dpo_check,
    "retrain": _retrain,
    "pm_tick": _pm_tick,
}


def lock_path(settings: Settings) -> Path:
    return settings.home / "scheduler.lock"


def scheduler_holder(settings: Settings) -> int | None:
    """The pid of the scheduler running for this home, or None when none holds the lock."""
    path = lock_path(settings)
    if not path.exists():
        return None
    with path.open("a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            text = f.read().strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(f, fcntl.LOCK_UN)
    return None


@contextmanager
def scheduler_lock(settings: Settings) -> Iterator[None]:
    """Holds this home's scheduler lock (an exclusive ``flock``, released when the process
    ends however it ends) for the ``with`` block, its pid written in the file.

    Raises:
        Conflict: another process holds it (the message names its pid).
    """
    path = lock_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    f = path.open("a+")
    try:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            text = f.read().strip()
            pid = int(text) if text.isdigit() else None
            raise Conflict(
                f"a scheduler is already running for {settings.home} (pid {pid or 'unknown'}); "
                f"stop it first (kill {pid or '<pid>'}) or use it",
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()}\n")
        f.flush()
        yield
    finally:
        f.close()  # closing the file releases the lock
