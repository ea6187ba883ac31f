"""Reading a date column one way for the whole file, and making it the index of a price table.

Dates that could be day first or month first (``03/01/2005``) are refused unless the data or a
``date_format`` settles the order (see :func:`parse_dates`): reading each row the way it happens
to fit put 3 January on 1 March, silently.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from alphaloop.exceptions import InvalidRequest

DATE_COLUMNS = ("date", "datetime", "timestamp", "time", "day")
# Day and month as numbers, then the year (03/01/2005, 3.1.05, 03-01-2005), maybe a time after.
_DAY_MONTH = re.compile(
    r"^(?P<first>\d{1,2})(?P<sep>[/.\- ])(?P<second>\d{1,2})(?P=sep)"
    r"(?P<year>\d{4}|\d{2})(?=$|[\sT])"
)
_FIX = "write dates as YYYY-MM-DD, or pass --date-format (a strptime format such as %d/%m/%Y)"
_UTC_OFFSET = re.compile(r"(?:Z|[+-]\d{2}:?\d{2})$")


def _rows(raw: pd.Series, mask: np.ndarray | pd.Series, limit: int = 3) -> str:
    """The first few values under ``mask`` with their line in the file (the header is line 1)."""
    where = np.flatnonzero(np.asarray(mask))[:limit]
    # .tolist() gives Python values: the message shows 2020, not np.int64(2020)
    values = raw.iloc[where].tolist()
    shown = [f"{_show(v)} (row {i + 2})" for i, v in zip(where, values, strict=True)]
    total = int(np.asarray(mask).sum())
    more = f" and {total - limit} more" if total > limit else ""
    return ", ".join(shown) + more


def _show(value: object) -> str:
    """A value as a message quotes it; a missing one (NaN, None) as the word ``empty``."""
    return (
        "empty" if value is None or (isinstance(value, float) and np.isnan(value)) else repr(value)
    )


def _valid_days(year: pd.Series, month: pd.Series, day: pd.Series) -> np.ndarray:
    """Whether each (year, month, day) is a real calendar date."""
    parts = pd.DataFrame({"year": year, "month": month, "day": day})
    return pd.to_datetime(parts, errors="coerce").notna().to_numpy()


def parse_dates(raw: pd.Series, date_format: str | None, origin: str) -> pd.Series:
    """Parses a date column, refusing any format whose reading the data cannot settle.

    The rule, so that no file is read two ways at once:

    * With ``date_format`` (a strptime format such as ``%d/%m/%Y``) every value must match it;
      the rows that do not are named.
    * ISO dates and datetimes (``2005-01-03``, ``2005-01-03 16:00``, ``20050103``) are taken as
      they are: the year comes first, so the order is never in doubt.
    * Day and month as numbers (``03/01/2005``, ``3.1.05``) are read one way for the whole file:
      day first when every row is a real date day first and some row is not month first
      (``25/01/2005``), month first in the mirror case. A file where every row reads both ways
      is refused (there is no telling ``03/01/2005`` is 3 January rather than 1 March), and so is
      a file with some rows only day first and others only month first. One row settles the
      order for all, so in a month-first file whose only day above 12 is a typo
      (``13/01/2005``) the typo wins; the rows then come out of order and the sort warning
      says so.
    * Other text (``Jan 3, 2005``, ``3 January 2005``) names its month; it is parsed as it is,
      but never in the same column as the formats above.
    """
    if pd.api.types.is_datetime64_any_dtype(raw):
        return raw
    where = f"{origin}: column {raw.name!r}"
    # Numbers such as 20200102 are parsed as text: as numbers pandas would read them as
    # nanoseconds since 1970 and every date would silently land on 1970-01-01.
    text = raw.astype(str).str.strip()
    if date_format is not None:
        return _parse_with_format(raw, text, date_format, where)
    iso = _parse_iso(text, where)
    is_iso = iso.notna().to_numpy()
    if is_iso.all():
        return iso
    parts = text.str.extract(_DAY_MONTH)
    is_dm = parts["first"].notna().to_numpy() & ~is_iso
    other = ~is_iso & ~is_dm
    if other.any():
        named = pd.to_datetime(text.where(other), errors="coerce", format="mixed")
        bad = other & named.isna().to_numpy()
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            raise InvalidRequest(
                f"{origin}: {int(bad.sum())} unparsable date(s) in column {raw.name!r}, "
                f"first {_show(raw.tolist()[first])} (row {first + 2} of the file); {_FIX}"
            )
    kinds = {
        "YYYY-MM-DD": is_iso,
        "day/month numbers": is_dm,
        "other formats": other,
    }
    present = {k: m for k, m in kinds.items() if m.any()}
    if len(present) > 1:
        listed = "; ".join(f"{k}: {_rows(raw, m, 2)}" for k, m in present.items())
        raise InvalidRequest(f"{where}: mixed date formats ({listed}); {_FIX}")
    if other.all():
        return pd.to_datetime(text, format="mixed")
    return _parse_day_month(raw, text, parts, where)


def _parse_with_format(raw: pd.Series, text: pd.Series, date_format: str, where: str) -> pd.Series:
    """Every value parsed with ``date_format``; the rows that do not match are named."""
    try:
        parsed = pd.to_datetime(text, format=date_format, errors="coerce")
    except ValueError as err:
        raise InvalidRequest(
            f"bad date format {date_format!r} ({err}); use strptime codes such as %d/%m/%Y"
        ) from None
    bad = parsed.isna().to_numpy()
    if bad.any():
        raise InvalidRequest(
            f"{where}: {int(bad.sum())} date(s) do not match the date format "
            f"{date_format!r}: {_rows(raw, bad)}; fix those rows or the format"
        )
    return parsed


def _parse_day_month(raw: pd.Series, text: pd.Series, parts: pd.DataFrame, where: str) -> pd.Series:
    """Day-and-month dates (``parts`` from :data:`_DAY_MONTH`) read one way for all rows."""
    year = parts["year"].astype(int)
    # strptime's %y: 69-99 are 19xx, 00-68 are 20xx.
    year = year.where(parts["year"].str.len() == 4, year + np.where(year < 69, 2000, 1900))
    a, b = parts["first"].astype(int), parts["second"].astype(int)
    day_first, month_first = _valid_days(year, b, a), _valid_days(year, a, b)
    sep, y = parts["sep"].iloc[0], "%Y" if len(parts["year"].iloc[0]) == 4 else "%y"
    formats = f"--date-format '%d{sep}%m{sep}{y}' (day first) or '%m{sep}%d{sep}{y}' (month first)"
    if day_first.all() and month_first.all():
        raise InvalidRequest(
            f"{where}: ambiguous dates such as {_rows(raw, np.ones(len(raw), bool), 2)} read as "
            "day/month or month/day and every row fits both; convert the column to ISO "
            f"YYYY-MM-DD, or pass {formats}"
        )
    if not (day_first.all() or month_first.all()):
        neither = ~day_first & ~month_first
        if neither.any():
            raise InvalidRequest(
                f"{where}: {int(neither.sum())} impossible date(s) {_rows(raw, neither)}; "
                f"fix them, then convert the column to ISO YYYY-MM-DD or pass {formats}"
            )
        raise InvalidRequest(
            f"{where}: mixed day-first and month-first dates (only day first: "
            f"{_rows(raw, ~month_first, 2)}; only month first: {_rows(raw, ~day_first, 2)}); "
            f"fix the rows written the other way, convert the column to ISO YYYY-MM-DD, "
            f"or pass {formats}"
        )
    day, month = (a, b) if day_first.all() else (b, a)
    # dateutil reads any time of day after the date; the day and month are checked after it.
    parsed = pd.to_datetime(text, format="mixed", dayfirst=bool(day_first.all()), errors="coerce")
    wrong = (parsed.dt.day != day) | (parsed.dt.month != month)
    if wrong.any():
        raise InvalidRequest(f"{where}: cannot read {_rows(raw, wrong.to_numpy())}; {_FIX}")
    return parsed


def _parse_iso(text: pd.Series, where: str) -> pd.Series:
    """ISO 8601 dates (NaT where a value is not one); offsets that differ by row are dropped.

    A file with several UTC offsets (an exchange's local time across daylight saving) keeps
    each row's local date and time, as a single offset does when the index is made naive.
    """
    try:
        return pd.to_datetime(text, format="ISO8601", errors="coerce")
    except ValueError:
        local = text.str.replace(_UTC_OFFSET, "", regex=True)
        try:
            return pd.to_datetime(local, format="ISO8601", errors="coerce")
        except ValueError as err:
            raise InvalidRequest(
                f"{where}: cannot read the dates ({err}); write YYYY-MM-DD"
            ) from None


def date_index(frame: pd.DataFrame, origin: str, date_format: str | None) -> pd.DataFrame:
    if isinstance(frame.index, pd.DatetimeIndex):
        return frame
    named = [c for c in frame.columns if str(c).strip().lower() in DATE_COLUMNS]
    if not named and len(frame.columns) and not pd.api.types.is_numeric_dtype(frame.iloc[:, 0]):
        # An index written by pandas without a name ("Unnamed: 0"): take it if it is all dates.
        first = frame.columns[0]
        if pd.to_datetime(frame[first], errors="coerce", format="mixed").notna().all():
            named = [first]
    if not named:
        raise InvalidRequest(
            f"{origin}: no date column; name one of {', '.join(DATE_COLUMNS)} "
            f"(columns found: {', '.join(map(str, frame.columns[:8]))})"
        )
    col = named[0]
    parsed = parse_dates(frame[col], date_format, origin)
    out = frame.drop(columns=[col])
    out.index = pd.DatetimeIndex(parsed, name="date")
    return out
