"""The day a tick decides, checked before anything is journaled (:func:`tick_day`)."""

from __future__ import annotations

import datetime as dt
import re

import pandas as pd

from alphaloop.exceptions import InvalidRequest
from alphaloop.pm.calendar import TradingCalendar

__all__ = ["check_day", "tick_day"]

_ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def tick_day(
    text: str | None,
    dates: pd.DatetimeIndex,
    calendar: TradingCalendar | None = None,
    today: dt.date | None = None,
) -> pd.Timestamp:
    """The trading day ``text`` names (default: the session after the data's last close).

    A day inside the data's range must be one of its rows (a weekday it lacks is a holiday);
    a day after it must be a session of the book's ``calendar`` (default: every weekday) no
    later than the next session after ``today`` (default: the clock's): a tick decides from
    the closes it has, and the kill switch halts one whose prices are stale. After a Friday
    before a Monday holiday, the next session is the Tuesday.

    Raises:
        InvalidRequest: not a YYYY-MM-DD date, a weekend, a holiday, no close before it, or
            after the next session from today (a typo, not a day to decide yet).
    """
    calendar = calendar or TradingCalendar("weekdays")
    if text is None:
        return pd.Timestamp(calendar.next_session(dates[-1].date()))
    day = check_day(text, calendar, today)
    if day <= dates[0]:
        raise InvalidRequest(
            f"{day.date()} is outside the data: a tick decides from the closes before it and "
            f"the data starts on {dates[0].date()}"
        )
    if day > dates[-1] and (closed := calendar.why_closed(day.date())) is not None:
        raise InvalidRequest(f"{closed}: markets are closed")
    if day <= dates[-1] and day not in dates:
        raise InvalidRequest(
            f"{day.date()} is not a trading day of the data (a holiday); the data's days around "
            f"it are {dates[dates < day][-1].date()} and {dates[dates > day][0].date()}"
        )
    return day


def check_day(
    text: str, calendar: TradingCalendar | None = None, today: dt.date | None = None
) -> pd.Timestamp:
    """The day ``text`` names, checked for what needs no data: a YYYY-MM-DD date, a weekday, and
    no later than the next session of ``calendar`` after ``today`` (default: the clock's).

    Raises:
        InvalidRequest: not a YYYY-MM-DD date, a weekend, or after the next session from today.
    """
    calendar = calendar or TradingCalendar("weekdays")
    try:
        if not _ISO_DAY.match(text.strip()):
            raise ValueError(text)
        day = pd.Timestamp(text.strip())
    except ValueError:
        raise InvalidRequest(f"{text!r} is not a date; give the day as YYYY-MM-DD") from None
    if day.weekday() >= 5:
        raise InvalidRequest(f"{day.date()} is a {day.day_name()}: markets are closed")
    latest = pd.Timestamp(calendar.next_session(today or dt.date.today()))
    if day > latest:
        raise InvalidRequest(
            f"{day.date()} is in the future: a tick decides at most the next trading day "
            f"({latest.date()}) from the closes before it"
        )
    return day
