"""The daily tick on the schedule: APScheduler fires ``pm_tick`` after the close of a trading
day, the tick runs as the API's does (a ``pm_tick`` job in a worker process), a holiday is
skipped, a day is ticked once however often the job fires, and a day no tick decided (the
machine was off) is reported, not back-filled."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from typing import Any

import pytest

from alphaloop import library
from alphaloop.journal import Journal
from alphaloop.journal.schedule import ScheduleOutcome
from alphaloop.ops import schedule
from alphaloop.pm.calendar import TradingCalendar
from alphaloop.scheduler.runner import build_scheduler
from alphaloop.settings import Settings


def test_the_nyse_calendar_knows_the_exchange_s_holidays() -> None:
    nyse, weekdays = TradingCalendar("nyse"), TradingCalendar("weekdays")
    # Published NYSE closures of 2024 (a leap-year Good Friday in March, Juneteenth a Wednesday).
    assert sorted(nyse.holidays(dt.date(2024, 1, 1), dt.date(2024, 12, 31))) == [
        dt.date(2024, 1, 1), dt.date(2024, 1, 15), dt.date(2024, 2, 19), dt.date(2024, 3, 29),
        dt.date(2024, 5, 27), dt.date(2024, 6, 19), dt.date(2024, 7, 4), dt.date(2024, 9, 2),
        dt.date(2024, 11, 28), dt.date(2024, 12, 25),
    ]  # fmt: skip
    assert nyse.next_session(dt.date(2024, 7, 3)) == dt.date(2024, 7, 5)
    assert nyse.next_session(dt.date(2024, 3, 28)) == dt.date(2024, 4, 1)  # Good Friday
    assert weekdays.next_session(dt.date(2024, 7, 3)) == dt.date(2024, 7, 4)
    assert nyse.why_closed(dt.date(2024, 7, 6)) == "2024-07-06 is a Saturday"
    assert nyse.sessions_between(dt.date(2013, 7, 2), dt.date(2013, 7, 8)) == [
        dt.date(2013, 7, 3),
        dt.date(2013, 7, 5),
    ]


def test_pm_tick_is_listed_with_its_cron(settings: Settings) -> None:
    monday = dt.datetime(2026, 11, 23, 20, 0, tzinfo=dt.UTC)
    jobs = {j.name: j for j in schedule.list_jobs(settings, now=monday)}
    assert jobs["pm_tick"].cron == "30 21 * * mon-fri"
    assert jobs["pm_tick"].next_run == "2026-11-23T21:30:00+00:00"


@pytest.fixture
def ticking(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A home with an active policy on synthetic data (2013 among its days), a scheduler really
    running on it, and a clock the test sets."""
    from tests.pm.helpers import add_policy

    settings.home.mkdir(parents=True, exist_ok=True)
    with Journal(settings.journal_path) as j:
        library.activate(j, settings, add_policy(j, settings, "mean_cvar").id)
    clock = {"now": dt.datetime(2013, 7, 1, 21, 30, tzinfo=dt.UTC)}
    monkeypatch.setattr(schedule, "now", lambda: clock["now"])
    scheduler = build_scheduler(settings, blocking=False)
    scheduler.start()
    try:
        yield {"settings": settings, "scheduler": scheduler, "clock": clock}
    finally:
        scheduler.shutdown(wait=True)


def fire(ticking: dict[str, Any], at: dt.datetime) -> Any:
    """Sets the clock to ``at`` and has the scheduler fire ``pm_tick`` now; its journaled run."""
    settings = ticking["settings"]
    with Journal(settings.journal_path) as j:
        before = len(j.schedule.runs("pm_tick"))
    ticking["clock"]["now"] = at
    ticking["scheduler"].modify_job("pm_tick", next_run_time=dt.datetime.now(dt.UTC))
    deadline = time.monotonic() + 180
    while True:
        with Journal(settings.journal_path) as j:
            runs = j.schedule.runs("pm_tick")
        if len(runs) > before and runs[-1].finished_at is not None:
            return runs[-1]
        assert time.monotonic() < deadline, "the scheduler did not run pm_tick"
        time.sleep(0.2)


@pytest.mark.slow
def test_the_scheduler_ticks_each_trading_day_once_and_skips_holidays(
    ticking: dict[str, Any],
) -> None:
    settings = ticking["settings"]
    # Monday 1 July 2013 after the close: Tuesday 2 July is decided.
    monday = fire(ticking, dt.datetime(2013, 7, 1, 21, 30, tzinfo=dt.UTC))
    assert monday.trigger == "schedule" and monday.outcome == ScheduleOutcome.ok, monday
    (book,) = monday.detail["books"]
    assert (monday.detail["day"], book["book"], book["missed"]) == ("2013-07-02", "main", [])
    # Thursday 4 July, Independence Day: no close, no tick.
    holiday = fire(ticking, dt.datetime(2013, 7, 4, 21, 30, tzinfo=dt.UTC))
    assert holiday.outcome == ScheduleOutcome.skipped
    assert "holiday of the nyse calendar" in holiday.detail
    # Monday again (a second fire for the same day): the day is decided once.
    again = fire(ticking, dt.datetime(2013, 7, 1, 22, 0, tzinfo=dt.UTC))
    assert again.outcome == ScheduleOutcome.skipped and "ticked already" in again.detail
    # Friday 5 July: Monday 8 July is decided; Wednesday 3 and Friday 5, never decided (the
    # machine was off on Tuesday and Thursday's runs), are reported, not back-filled.
    friday = fire(ticking, dt.datetime(2013, 7, 5, 21, 30, tzinfo=dt.UTC))
    assert friday.outcome == ScheduleOutcome.ok, friday
    assert friday.detail["books"][0]["missed"] == ["2013-07-03", "2013-07-05"]
    with Journal(settings.journal_path) as j:
        decisions = j.books.list_decisions("main")
        jobs = j.jobs.list("pm_tick")
    assert sorted(d.date for d in decisions) == ["2013-07-02", "2013-07-08"]
    # Each tick ran as the API's does: a pm_tick job, finished, naming its decision.
    assert [(job.status, job.result["decision_id"]) for job in jobs] == [
        ("finished", d.id) for d in sorted(decisions, key=lambda d: d.id)
    ]
