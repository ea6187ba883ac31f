"""The day a tick may decide follows the book's calendar: after a Friday before a Monday
holiday, the next session is the Tuesday, and the holiday itself is refused."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest

from alphaloop.exceptions import InvalidRequest
from alphaloop.pm.calendar import TradingCalendar
from alphaloop.pm.dates import tick_day

DATES = pd.bdate_range("2025-06-02", "2026-01-16")  # the data's last close: a Friday
FRIDAY = dt.date(2026, 1, 16)  # Martin Luther King Jr. Day is Monday 2026-01-19
NYSE = TradingCalendar("nyse")


def test_after_a_friday_before_a_monday_holiday_the_tuesday_is_the_next_session() -> None:
    assert tick_day("2026-01-20", DATES, NYSE, today=FRIDAY) == pd.Timestamp("2026-01-20")
    assert tick_day(None, DATES, NYSE) == pd.Timestamp("2026-01-20")


def test_the_holiday_itself_and_a_day_past_the_next_session_are_refused() -> None:
    with pytest.raises(InvalidRequest, match="2026-01-19 is a holiday of the nyse calendar"):
        tick_day("2026-01-19", DATES, NYSE, today=FRIDAY)
    with pytest.raises(InvalidRequest, match=r"at most the next trading day \(2026-01-20\)"):
        tick_day("2026-01-21", DATES, NYSE, today=FRIDAY)


def test_a_book_that_trades_every_weekday_decides_the_monday() -> None:
    weekdays = TradingCalendar("weekdays")
    assert tick_day("2026-01-19", DATES, weekdays, today=FRIDAY) == pd.Timestamp("2026-01-19")
    with pytest.raises(InvalidRequest, match="is in the future"):
        tick_day("2026-01-20", DATES, weekdays, today=FRIDAY)
