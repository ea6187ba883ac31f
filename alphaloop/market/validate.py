"""Checking a price table: one row per date in order, numeric, positive; gaps refused or filled."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pandas as pd

from alphaloop.exceptions import DataWarning, InvalidRequest
from alphaloop.market._common import Fill
from alphaloop.market.dates import date_index

logger = logging.getLogger(__name__)


def validate_prices(
    frame: pd.DataFrame, origin: str, fill: Fill = "none", date_format: str | None = None
) -> pd.DataFrame:
    """Checks a price table and returns it clean (sorted, float64), or raises
    :class:`InvalidRequest`.

    ``date_format`` (strptime, e.g. ``%d/%m/%Y``) parses a text date column strictly; without
    it the format must be unambiguous (see :func:`~alphaloop.market.dates.parse_dates`). A
    datetime index or column needs no format and ignores it.
    """
    if fill not in ("none", "ffill"):
        raise InvalidRequest(f"unknown fill policy {fill!r}; use 'none' or 'ffill'")
    frame = _one_row_per_date(frame, origin, date_format)
    frame = _positive_numbers(frame, origin)
    nan = np.isnan(frame.to_numpy())
    if nan.any():
        frame = _fill_gaps(frame, nan, origin, fill)
    frame.columns = [str(c) for c in frame.columns]
    logger.debug(
        "%s: %d dates x %d assets, %s to %s",
        origin,
        frame.shape[0],
        frame.shape[1],
        frame.index[0].date(),
        frame.index[-1].date(),
    )
    return frame


def _one_row_per_date(frame: pd.DataFrame, origin: str, date_format: str | None) -> pd.DataFrame:
    """The table indexed by its (time-zone-naive) dates, sorted, with no date twice."""
    if frame.shape[0] == 0:
        raise InvalidRequest(
            f"{origin}: no data rows (columns: {', '.join(map(str, frame.columns[:8]))}); "
            "add one row of prices per date under the header"
        )
    frame = date_index(frame, origin, date_format)
    if frame.shape[1] == 0:
        raise InvalidRequest(
            f"{origin}: no price columns, only dates; add one column of prices per asset "
            "(date,AAPL,MSFT,...)"
        )
    if getattr(frame.index, "tz", None) is not None:
        frame = frame.tz_localize(None)  # a new frame: the caller's table keeps its time zone
    dup = frame.index.duplicated()
    if dup.any():
        raise InvalidRequest(
            f"{origin}: duplicated date {frame.index[dup][0].date()} "
            f"({int(dup.sum())} duplicate row(s)); keep one row per date"
        )
    if not frame.index.is_monotonic_increasing:
        moved = int((frame.index != frame.index.sort_values()).sum())
        # stacklevel 3: the warning names the line that called validate_prices.
        warnings.warn(
            f"{origin}: dates were not sorted; sorted {moved} rows", DataWarning, stacklevel=3
        )
        frame = frame.sort_index()
    return frame


def _positive_numbers(frame: pd.DataFrame, origin: str) -> pd.DataFrame:
    """The prices as float64, at least two assets, every price > 0 or missing."""
    non_numeric = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    if non_numeric:
        col = non_numeric[0]
        coerced = pd.to_numeric(frame[col], errors="coerce")
        bad = coerced.isna() & frame[col].notna()
        where = (
            f", first {frame[col][bad].iloc[0]!r} on {frame.index[bad][0].date()}"
            if bad.any()
            else ""
        )
        raise InvalidRequest(f"{origin}: column {col!r} is not numeric{where}")
    frame = frame.astype(float)
    if frame.shape[1] < 2:
        raise InvalidRequest(
            f"{origin}: need at least two assets, found {frame.shape[1]} "
            f"({', '.join(map(str, frame.columns))}); add a column of prices for another asset"
        )
    values = frame.to_numpy()
    for label, mask in (("infinite", np.isinf(values)), ("non-positive", values <= 0)):
        if mask.any():
            r, c = np.argwhere(mask)[0]
            raise InvalidRequest(
                f"{origin}: {label} price {float(values[r, c])!r} for {frame.columns[c]} on "
                f"{frame.index[r].date()} ({int(mask.sum())} such value(s)); prices must be > 0"
            )
    return frame


def _fill_gaps(frame: pd.DataFrame, nan: np.ndarray, origin: str, fill: Fill) -> pd.DataFrame:
    """Missing prices (``nan``) refused, or carried forward with a warning saying how many."""
    if fill == "none":
        r, c = np.argwhere(nan)[0]
        raise InvalidRequest(
            f"{origin}: missing price for {frame.columns[c]} on {frame.index[r].date()} "
            f"({int(nan.sum())} missing value(s)); pass --fill ffill to carry prices forward"
        )
    empty = [str(c) for c, none in zip(frame.columns, nan.all(axis=0), strict=True) if none]
    if empty:
        raise InvalidRequest(
            f"{origin}: column(s) {', '.join(map(repr, empty))} has no price at all; "
            "drop it or select other symbols"
        )
    frame = frame.ffill()
    complete = frame.notna().all(axis=1).to_numpy()
    first = int(np.argmax(complete))
    if first:
        warnings.warn(
            f"{origin}: dropped {first} leading row(s) before every asset has a price",
            DataWarning,
            stacklevel=3,
        )
        frame = frame.iloc[first:]
    # Count only the gaps that were filled, not the leading ones dropped with their rows.
    filled = int(nan[first:].sum())
    if filled:
        warnings.warn(
            f"{origin}: forward-filled {filled} missing price(s)", DataWarning, stacklevel=3
        )
    return frame
