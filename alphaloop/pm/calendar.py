"""The trading days a book's daily tick follows: weekdays less the exchange's holidays.

``nyse``: the New York Stock Exchange's full-day closures (New Year's Day, Martin Luther King
Jr. Day, Washington's Birthday, Good Friday, Memorial Day, Juneteenth from 2022, Independence
Day, Labor Day, Thanksgiving, Christmas; a Sunday holiday is observed on the Monday, a Saturday
one on the Friday, except New Year's Day), written with pandas' holiday rules. ``weekdays``: every
weekday, for a market that trades them all. Closures for events (national mourning, storms) are
not rules: a tick on such a day finds no new close and its kill switch halts it.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

import pandas as pd
from pandas.tseries.holiday import (
    AbstractHolidayCalendar,
    GoodFriday,
    Holiday,
    USLaborDay,
    USMartinLutherKingJr,
    USMemorialDay,
    USPresidentsDay,
    USThanksgivingDay,
    nearest_workday,
    sunday_to_monday,
)

CalendarName = Literal["nyse", "weekdays"]


class NYSEHolidays(AbstractHolidayCalendar):
    rules = [  # noqa: RUF012 (pandas reads the class attribute)
        Holiday("New Year's Day", month=1, day=1, observance=sunday_to_monday),
        USMartinLutherKingJr,
        USPresidentsDay,
        GoodFriday,
        USMemorialDay,
        Holiday("Juneteenth", month=6, day=19, start_date="2022-01-01", observance=nearest_workday),
        Holiday("Independence Day", month=7, day=4, observance=nearest_workday),
        USLaborDay,
        USThanksgivingDay,
        Holiday("Christmas", month=12, day=25, observance=nearest_workday),
    ]


class TradingCalendar:
    """The sessions of one calendar: which days trade, and the next one after a day."""

    def __init__(self, name: CalendarName = "nyse") -> None:
        self.name = name
        self._holidays = NYSEHolidays() if name == "nyse" else None

    def holidays(self, start: dt.date, end: dt.date) -> set[dt.date]:
        if self._holidays is None:
            return set()
        found = self._holidays.holidays(pd.Timestamp(start), pd.Timestamp(end))
        return {d.date() for d in found}

    def is_session(self, day: dt.date) -> bool:
        """Whether the exchange trades on ``day``."""
        return day.weekday() < 5 and day not in self.holidays(day, day)

    def why_closed(self, day: dt.date) -> str | None:
        """Why ``day`` is no session (a weekend, a holiday), or None when it trades."""
        if day.weekday() >= 5:
            return f"{day} is a {day:%A}"
        if not self.is_session(day):
            return f"{day} is a holiday of the {self.name} calendar"
        return None

    def next_session(self, day: dt.date) -> dt.date:
        """The first session after ``day``."""
        following = day + dt.timedelta(days=1)
        while not self.is_session(following):
            following += dt.timedelta(days=1)
        return following

    def sessions_between(self, after: dt.date, before: dt.date) -> list[dt.date]:
        """The sessions strictly after ``after`` and strictly before ``before``."""
        days = pd.bdate_range(after + dt.timedelta(days=1), before - dt.timedelta(days=1))
        closed = self.holidays(after, before)
        return [d.date() for d in days if d.date() not in closed]


__all__ = ["CalendarName", "NYSEHolidays", "TradingCalendar"]
