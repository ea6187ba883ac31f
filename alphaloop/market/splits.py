"""Daily returns split by date into TRAIN, VALIDATION and TEST windows (:class:`MarketData`)."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from alphaloop.exceptions import InvalidRequest
from alphaloop.spec import MIN_EVAL_ROWS

logger = logging.getLogger(__name__)

# The evaluation windows: search trials score on validation, finalize once on test.
Window = Literal["validation", "test"]

# Windows of the embedded set: 27 years to learn from, 3 to choose on, 3 held out.
SP500_TRAIN_END = "2016-12-31"
SP500_VAL_END = "2019-12-31"
# Other data: shares of its trading days for TRAIN and VALIDATION; TEST gets the rest.
TRAIN_FRACTION = 0.6
VAL_FRACTION = 0.2
# Smallest windows the knob bounds can work with: the longest lookback plus the longest episode
# to train, and a month of trading days to evaluate on (MIN_EVAL_ROWS, the spec's bound).
MIN_TRAIN_ROWS = 60 + 120 + 1
# The shortest TEST: three weeks, so that a month of a monthly walk (19 trading days in most
# Februaries) is one period of its own.
MIN_TEST_ROWS = 15


@dataclass(frozen=True)
class MarketData:
    """Daily returns of a price table, split by date into TRAIN / VALIDATION / TEST.

    The windows are slices into ``returns`` (rows are days, columns assets) so that a strategy
    evaluated on one window can still look back into the days before it.
    """

    returns: np.ndarray
    dates: pd.DatetimeIndex
    symbols: tuple[str, ...]
    train: slice
    val: slice
    test: slice
    source: str
    fingerprint: str

    @property
    def n_assets(self) -> int:
        return len(self.symbols)

    def window_dates(self, window: slice) -> tuple[str, str]:
        d = self.dates[window]
        return (d[0].date().isoformat(), d[-1].date().isoformat())

    def windows(self) -> dict[str, tuple[str, str]]:
        """First and last date of each window, so a run can show what it trained and chose on."""
        return {
            "train": self.window_dates(self.train),
            "validation": self.window_dates(self.val),
            "test": self.window_dates(self.test),
        }

    def windows_text(self) -> str:
        """``train 2010-01-05..2013-07-01, validation ..., test ...`` for human output."""
        return ", ".join(f"{k} {a}..{b}" for k, (a, b) in self.windows().items())

    def describe(self) -> dict[str, object]:
        return {
            "source": self.source,
            "fingerprint": self.fingerprint,
            "symbols": list(self.symbols),
            **self.windows(),
        }


def _fingerprint(prices: pd.DataFrame) -> str:
    h = hashlib.sha256()
    h.update(",".join(prices.columns).encode())
    # In nanoseconds whatever unit the index holds (CSV, Parquet and pandas versions differ), so
    # the same prices always give the same fingerprint.
    h.update(pd.DatetimeIndex(prices.index).as_unit("ns").asi8.tobytes())
    h.update(np.ascontiguousarray(prices.to_numpy(dtype=float)).tobytes())
    return h.hexdigest()[:16]


def _cut(prices: pd.DataFrame, test_end: str, source: str) -> pd.DataFrame:
    """The prices up to ``test_end`` (inclusive): a walk's epoch sees nothing after its period."""
    try:
        end = pd.Timestamp(test_end)
    except ValueError as err:
        raise InvalidRequest(f"bad test_end date: {err}") from None
    return prices.loc[pd.DatetimeIndex(prices.index) <= end]


def split(
    prices: pd.DataFrame,
    train_end: str | None = None,
    val_end: str | None = None,
    source: str = "prices",
    test_end: str | None = None,
) -> MarketData:
    """Splits prices by date into TRAIN (<= train_end), VALIDATION (<= val_end) and TEST (after,
    up to ``test_end`` when given: the prices after it are dropped, as if the data ended there).

    Without dates, the embedded set (``source="sp500"``) keeps its fixed windows, TRAIN to 2016,
    VALIDATION 2017-2019 and TEST 2020-2022, which benchmarks and past sessions were run on.
    The graded markets (``graded:EDGE``, :func:`~alphaloop.market.worlds.graded_prices`) keep
    the embedded set's shape: their last three years are TEST and the three before VALIDATION.
    Any other data is split 60% / 20% / 20% of its trading days (daily returns) in date order,
    whatever years it spans: cutting a 2005-2024 file at the embedded set's years would give
    60% / 15% / 25%, windows nobody asked for.
    """
    if test_end is not None:
        prices = _cut(prices, test_end, source)
    rets = prices.pct_change().iloc[1:]
    dates = pd.DatetimeIndex(rets.index)
    n = len(dates)
    if train_end is None and val_end is None and source == "sp500":
        train_end, val_end = SP500_TRAIN_END, SP500_VAL_END
    if train_end is None and val_end is None and source.startswith("graded:"):
        # The graded markets mirror the embedded set: three years each of VALIDATION and TEST.
        from alphaloop.market.worlds import GRADED_EVAL_DAYS

        a, b = n - 2 * GRADED_EVAL_DAYS, n - GRADED_EVAL_DAYS
    elif train_end is None and val_end is None:
        a, b = int(n * TRAIN_FRACTION), int(n * (TRAIN_FRACTION + VAL_FRACTION))
    elif train_end is None or val_end is None:
        raise InvalidRequest("give both train_end and val_end, or neither")
    else:
        try:
            t_end, v_end = pd.Timestamp(train_end), pd.Timestamp(val_end)
        except ValueError as err:
            raise InvalidRequest(f"bad split date: {err}") from None
        if t_end >= v_end:
            raise InvalidRequest(f"train_end {train_end} must be before val_end {val_end}")
        a = int(dates.searchsorted(t_end, side="right"))
        b = int(dates.searchsorted(v_end, side="right"))
    sizes = {"train": a, "validation": b - a, "test": n - b}
    needed = {"train": MIN_TRAIN_ROWS, "validation": MIN_EVAL_ROWS, "test": MIN_TEST_ROWS}
    short = [f"{k} has {v} rows, needs >= {needed[k]}" for k, v in sizes.items() if v < needed[k]]
    if short:
        raise InvalidRequest(
            f"{source}: too few rows for the windows ({'; '.join(short)}); "
            f"{n} daily returns" + (f" from {dates[0].date()} to {dates[-1].date()}" if n else "")
        )
    logger.debug("%s: %d daily returns split %s", source, n, sizes)
    return MarketData(
        returns=np.ascontiguousarray(rets.to_numpy(dtype=np.float64)),
        dates=dates,
        symbols=tuple(prices.columns),
        train=slice(0, a),
        val=slice(a, b),
        test=slice(b, n),
        source=source,
        fingerprint=_fingerprint(prices),
    )
