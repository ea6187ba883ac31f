"""The day a tick decides, checked before anything is journaled (:func:`tick_day`)."""

from __future__ import annotations

import re

import pandas as pd

from alphaloop.exceptions import BadTickDate

__all__ = ["tick_day"]

_ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def tick_day(text: str | None, dates: pd.DatetimeIndex) -> pd.Timestamp:
    """The trading day ``text`` names (default: the weekday after the data's last close).

    A day inside the data's range must be one of its rows (a weekday it lacks is a holiday);
    a day after it must be a weekday no later than the next one from today (a tick decides
    from the closes it has: the kill switch halts one whose prices are stale).

    Raises:
        BadTickDate: not a YYYY-MM-DD date, a weekend, a holiday, no close before it, or
            after the next weekday from today (a typo, not a day to decide yet).
    """
    if text is None:
        return dates[-1] + pd.offsets.BDay(1)
    try:
        if not _ISO_DAY.match(text.strip()):
            raise ValueError(text)
        day = pd.Timestamp(text.strip())
    except ValueError:
        raise BadTickDate(f"{text!r} is not a date; give the day as YYYY-MM-DD") from None
    if day.weekday() >= 5:
        raise BadTickDate(f"{day.date()} is a {day.day_name()}: markets are closed")
    latest = pd.Timestamp.today().normalize() + pd.offsets.BDay(1)
    if day > latest:
        raise BadTickDate(
            f"{day.date()} is in the future: a tick decides at most the next trading day "
            f"({latest.date()}) from the closes before it"
        )
    if day <= dates[0]:
        raise BadTickDate(
            f"{day.date()} is outside the data: a tick decides from the closes before it and "
            f"the data starts on {dates[0].date()}"
        )
    if day <= dates[-1] and day not in dates:
        raise BadTickDate(
            f"{day.date()} is not a trading day of the data (a holiday); the data's days around "
            f"it are {dates[dates < day][-1].date()} and {dates[dates > day][0].date()}"
        )
    return day
