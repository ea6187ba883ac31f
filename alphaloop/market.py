"""Price data: the embedded S&P 500 set, CSV/Parquet files, a synthetic generator, date splits.

Decisions a user should know about:

* Dates that are not sorted are sorted, with a warning naming how many rows moved (exports from
  some sites run newest-first; refusing them helps nobody). Duplicated dates are refused.
* A date column is read one way for the whole file, never row by row: dates that could be day
  first or month first (``03/01/2005``) are refused unless the data or ``date_format`` settles
  the order (see :func:`_parse_dates`). Reading each row the way it happens to fit put 3 January
  on 1 March, silently.
* CSV files may use ``,``, ``;``, tab or ``|`` (Excel in many locales writes ``;`` with decimal
  commas); a file that is not text (a workbook, a Parquet file named .csv) is refused by name.
* Windows: the embedded set keeps TRAIN to 2016, VALIDATION 2017-2019, TEST 2020-2022; other
  data is split 60% / 20% / 20% of its trading days (see :func:`split`).
* Missing prices (NaN) are refused unless ``fill="ffill"`` is asked for; then they are carried
  forward and leading rows without a price for every asset are dropped, with a warning.
  Non-positive and infinite prices are always refused: carrying them forward would hide a bug
  in the data.
* Everything downstream works on simple daily returns ``prices[t] / prices[t-1] - 1``; the date of
  a return is the date of its closing price.
"""

from __future__ import annotations

import codecs
import gzip
import hashlib
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from alphaloop.exceptions import DataError

Fill = Literal["none", "ffill"]
DATE_COLUMNS = ("date", "datetime", "timestamp", "time", "day")

# Windows of the embedded set: 27 years to learn from, 3 to choose on, 3 held out.
SP500_TRAIN_END = "2016-12-31"
SP500_VAL_END = "2019-12-31"
# Other data: shares of its trading days for TRAIN and VALIDATION; TEST gets the rest.
TRAIN_FRACTION = 0.6
VAL_FRACTION = 0.2
# Smallest windows the knob bounds can work with: the longest lookback plus the longest episode
# to train, and a month of trading days to evaluate on.
MIN_TRAIN_ROWS = 60 + 120 + 1
MIN_EVAL_ROWS = 21


class DataWarning(UserWarning):
    """Something about the data was changed on load; the message says what."""


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


def synthetic_prices(
    n_days: int = 1500, n_assets: int = 6, seed: int = 0, start: str = "2010-01-04"
) -> pd.DataFrame:
    """Seeded regime-switching prices with fat tails, for fast tests.

    A two-state Markov chain (calm / stress, sticky) sets per-asset drift and volatility; shocks
    are Student-t (4 degrees of freedom) with a common market factor, so assets are correlated
    and tails are heavier than normal.
    """
    if n_days < 2 or n_assets < 1:
        raise ValueError("synthetic_prices needs n_days >= 2 and n_assets >= 1")
    rng = np.random.default_rng(seed)
    stay = np.array([0.985, 0.95])
    regime = np.empty(n_days, dtype=int)
    regime[0] = 0
    flips = rng.random(n_days)
    for t in range(1, n_days):
        prev = regime[t - 1]
        regime[t] = prev if flips[t] < stay[prev] else 1 - prev
    drift = np.stack([rng.uniform(0.0002, 0.0009, n_assets), rng.uniform(-0.0015, 0.0, n_assets)])
    vol = np.stack([rng.uniform(0.007, 0.015, n_assets), rng.uniform(0.02, 0.035, n_assets)])
    df = 4.0
    scale = np.sqrt((df - 2.0) / df)  # unit-variance t shocks
    market = rng.standard_t(df, size=(n_days, 1)) * scale
    idio = rng.standard_t(df, size=(n_days, n_assets)) * scale
    beta = rng.uniform(0.3, 0.8, n_assets)
    shocks = beta * market + np.sqrt(1.0 - beta**2) * idio
    rets = drift[regime] + vol[regime] * shocks
    rets = np.clip(rets, -0.5, 0.5)
    prices = 100.0 * np.cumprod(1.0 + rets, axis=0)
    index = pd.bdate_range(start=start, periods=n_days, name="date")
    return pd.DataFrame(prices, index=index, columns=[f"A{i:02d}" for i in range(n_assets)])


# How a file that is not a text CSV starts, and what to tell its owner.
_MAGIC = {
    b"PAR1": "it is a Parquet file; rename it to .parquet",
    b"PK\x03\x04": "it is a zip archive (an Excel workbook?); export the sheet as CSV",
    b"%PDF": "it is a PDF document; export the prices as CSV",
}
_GZIP_MAGIC = b"\x1f\x8b"
# Bytes that occur in text: printable ASCII, tab, newlines, form feed, and every byte >= 0x80
# (UTF-8 or Latin-1 letters). Anything else, and NUL above all, means binary content.
_TEXT_BYTES = bytes([9, 10, 12, 13, *range(32, 127), *range(128, 256)])
DELIMITERS = (",", ";", "\t", "|")
_SNIFF_BYTES = 1 << 16
_COMMA_NUMBER = re.compile(r"^[+-]?\d+,\d+$")
_DOT_NUMBER = re.compile(r"^[+-]?\d+\.\d+$")
# Day and month as numbers, then the year (03/01/2005, 3.1.05, 03-01-2005), maybe a time after.
_DAY_MONTH = re.compile(
    r"^(?P<first>\d{1,2})(?P<sep>[/.\- ])(?P<second>\d{1,2})(?P=sep)"
    r"(?P<year>\d{4}|\d{2})(?=$|[\sT])"
)
_UTC_OFFSET = re.compile(r"(?:Z|[+-]\d{2}:?\d{2})$")
_HOW_TO_WRITE = "a header row such as date,AAPL,MSFT and one row of prices per date"


def _is_binary(sample: bytes) -> bool:
    control = len(sample.translate(None, _TEXT_BYTES))
    return b"\x00" in sample or control > len(sample) // 100


def _sniff_csv(path: Path) -> dict[str, object]:
    """``read_csv`` arguments for a text CSV, or a :class:`DataError` saying why it is not one.

    The delimiter is the one of ``, ; tab |`` found most often in the header line (Excel in many
    European locales writes ``;``). With a delimiter other than ``,``, a decimal comma is assumed
    when numbers are written only as ``101,5`` and never as ``101.5``.
    """
    with path.open("rb") as fh:
        head = fh.read(_SNIFF_BYTES)
    options: dict[str, object] = {}
    if head.startswith(_GZIP_MAGIC):
        try:
            with gzip.open(path, "rb") as fh:
                head = fh.read(_SNIFF_BYTES)
        except (OSError, EOFError) as err:
            raise DataError(f"cannot read {path}: broken gzip file ({err})") from None
        options["compression"] = "gzip"
    if not head.strip():
        raise DataError(f"{path} is empty; a price CSV needs {_HOW_TO_WRITE}")
    for magic, advice in _MAGIC.items():
        if head.startswith(magic):
            raise DataError(f"{path} is not a text CSV: {advice}")
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        options["encoding"] = "utf-16"
        text = head.decode("utf-16", errors="ignore")
    elif _is_binary(head):
        raise DataError(
            f"{path} is not a text CSV (binary content in its first bytes); "
            f"export the prices as a UTF-8 CSV with {_HOW_TO_WRITE}"
        )
    else:
        try:
            # Incremental: the sample may end inside a multi-byte character.
            text = codecs.getincrementaldecoder("utf-8-sig")().decode(head, final=False)
        except UnicodeDecodeError:
            warnings.warn(
                f"{path}: not UTF-8 text; read as Latin-1 (save it as UTF-8 if names look wrong)",
                DataWarning,
                stacklevel=4,
            )
            options["encoding"] = "latin-1"
            text = head.decode("latin-1")
    lines = [line for line in text.splitlines() if line.strip()][:50]
    header = lines[0]
    sep = max(DELIMITERS, key=header.count)
    if header.count(sep) == 0:
        sep = ","
    options["sep"] = sep
    if sep != ",":
        fields = [f.strip().strip('"') for line in lines[1:] for f in line.split(sep)]
        if any(_COMMA_NUMBER.match(f) for f in fields) and not any(
            _DOT_NUMBER.match(f) for f in fields
        ):
            options["decimal"] = ","
    return options


def _read_csv(path: Path) -> pd.DataFrame:
    options = _sniff_csv(path)
    try:
        return pd.read_csv(path, **options)  # type: ignore[call-overload]
    except pd.errors.EmptyDataError:
        raise DataError(f"{path} is empty; a price CSV needs {_HOW_TO_WRITE}") from None
    except UnicodeDecodeError as err:
        raise DataError(
            f"{path} is not UTF-8 text at byte {err.start}; save it as a UTF-8 CSV"
        ) from None
    except Exception as err:  # pandas raises many types for a broken file
        raise DataError(
            f"cannot read {path}: {err}; every row needs the same number of "
            f"{options['sep']!r}-separated fields"
        ) from err


def _read_parquet(path: Path) -> pd.DataFrame:
    with path.open("rb") as fh:
        head = fh.read(_SNIFF_BYTES)
    if not head:
        raise DataError(f"{path} is empty; write prices with DataFrame.to_parquet")
    if not head.startswith(b"PAR1"):
        what = "no Parquet header"
        if not _is_binary(head):
            what = "it looks like text; if it is a CSV, rename it to .csv"
        raise DataError(
            f"cannot read {path}: not a Parquet file ({what}); "
            "write prices with DataFrame.to_parquet, or give a CSV"
        )
    try:
        return pd.read_parquet(path)
    except Exception as err:  # pyarrow raises many types for a broken file
        raise DataError(f"cannot read {path}: broken Parquet file ({err})") from err


def _read_file(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise DataError(
            f"price file not found: {path}; check the path, or use --data sp500 or synthetic"
        )
    if not path.is_file():
        raise DataError(f"{path} is not a file; give a CSV or Parquet file of prices")
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return _read_parquet(path)
    if suffix in (".csv", ".txt", ".tsv", ".gz"):
        return _read_csv(path)
    raise DataError(f"unsupported price file type {suffix!r} ({path}); use .csv or .parquet")


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


def _parse_dates(raw: pd.Series, date_format: str | None, origin: str) -> pd.Series:
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
    fix = "write dates as YYYY-MM-DD, or pass --date-format (a strptime format such as %d/%m/%Y)"
    if date_format is not None:
        try:
            parsed = pd.to_datetime(text, format=date_format, errors="coerce")
        except ValueError as err:
            raise DataError(
                f"bad date format {date_format!r} ({err}); use strptime codes such as %d/%m/%Y"
            ) from None
        bad = parsed.isna().to_numpy()
        if bad.any():
            raise DataError(
                f"{where}: {int(bad.sum())} date(s) do not match the date format "
                f"{date_format!r}: {_rows(raw, bad)}; fix those rows or the format"
            )
        return parsed
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
            raise DataError(
                f"{origin}: {int(bad.sum())} unparsable date(s) in column {raw.name!r}, "
                f"first {_show(raw.tolist()[first])} (row {first + 2} of the file); {fix}"
            )
    kinds = {
        "YYYY-MM-DD": is_iso,
        "day/month numbers": is_dm,
        "other formats": other,
    }
    present = {k: m for k, m in kinds.items() if m.any()}
    if len(present) > 1:
        listed = "; ".join(f"{k}: {_rows(raw, m, 2)}" for k, m in present.items())
        raise DataError(f"{where}: mixed date formats ({listed}); {fix}")
    if other.all():
        return pd.to_datetime(text, format="mixed")
    year = parts["year"].astype(int)
    # strptime's %y: 69-99 are 19xx, 00-68 are 20xx.
    year = year.where(parts["year"].str.len() == 4, year + np.where(year < 69, 2000, 1900))
    a, b = parts["first"].astype(int), parts["second"].astype(int)
    day_first, month_first = _valid_days(year, b, a), _valid_days(year, a, b)
    sep, y = parts["sep"].iloc[0], "%Y" if len(parts["year"].iloc[0]) == 4 else "%y"
    formats = f"--date-format '%d{sep}%m{sep}{y}' (day first) or '%m{sep}%d{sep}{y}' (month first)"
    if day_first.all() and month_first.all():
        raise DataError(
            f"{where}: ambiguous dates such as {_rows(raw, np.ones(len(raw), bool), 2)} read as "
            "day/month or month/day and every row fits both; convert the column to ISO "
            f"YYYY-MM-DD, or pass {formats}"
        )
    if not (day_first.all() or month_first.all()):
        neither = ~day_first & ~month_first
        if neither.any():
            raise DataError(
                f"{where}: {int(neither.sum())} impossible date(s) {_rows(raw, neither)}; "
                f"fix them, then convert the column to ISO YYYY-MM-DD or pass {formats}"
            )
        raise DataError(
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
        raise DataError(f"{where}: cannot read {_rows(raw, wrong.to_numpy())}; {fix}")
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
            raise DataError(f"{where}: cannot read the dates ({err}); write YYYY-MM-DD") from None


def _date_index(frame: pd.DataFrame, origin: str, date_format: str | None) -> pd.DataFrame:
    if isinstance(frame.index, pd.DatetimeIndex):
        return frame
    named = [c for c in frame.columns if str(c).strip().lower() in DATE_COLUMNS]
    if not named and len(frame.columns) and not pd.api.types.is_numeric_dtype(frame.iloc[:, 0]):
        # An index written by pandas without a name ("Unnamed: 0"): take it if it is all dates.
        first = frame.columns[0]
        if pd.to_datetime(frame[first], errors="coerce", format="mixed").notna().all():
            named = [first]
    if not named:
        raise DataError(
            f"{origin}: no date column; name one of {', '.join(DATE_COLUMNS)} "
            f"(columns found: {', '.join(map(str, frame.columns[:8]))})"
        )
    col = named[0]
    parsed = _parse_dates(frame[col], date_format, origin)
    out = frame.drop(columns=[col])
    out.index = pd.DatetimeIndex(parsed, name="date")
    return out


def validate_prices(
    frame: pd.DataFrame, origin: str, fill: Fill = "none", date_format: str | None = None
) -> pd.DataFrame:
    """Checks a price table and returns it clean (sorted, float64), or raises :class:`DataError`.

    ``date_format`` (strptime, e.g. ``%d/%m/%Y``) parses a text date column strictly; without
    it the format must be unambiguous (see :func:`_parse_dates`). A datetime index or column
    needs no format and ignores it.
    """
    if fill not in ("none", "ffill"):
        raise DataError(f"unknown fill policy {fill!r}; use 'none' or 'ffill'")
    if frame.shape[0] == 0:
        raise DataError(
            f"{origin}: no data rows (columns: {', '.join(map(str, frame.columns[:8]))}); "
            "add one row of prices per date under the header"
        )
    frame = _date_index(frame, origin, date_format)
    if frame.shape[1] == 0:
        raise DataError(
            f"{origin}: no price columns, only dates; add one column of prices per asset "
            "(date,AAPL,MSFT,...)"
        )
    if getattr(frame.index, "tz", None) is not None:
        frame = frame.tz_localize(None)  # a new frame: the caller's table keeps its time zone
    dup = frame.index.duplicated()
    if dup.any():
        raise DataError(
            f"{origin}: duplicated date {frame.index[dup][0].date()} "
            f"({int(dup.sum())} duplicate row(s)); keep one row per date"
        )
    if not frame.index.is_monotonic_increasing:
        moved = int((frame.index != frame.index.sort_values()).sum())
        warnings.warn(
            f"{origin}: dates were not sorted; sorted {moved} rows", DataWarning, stacklevel=2
        )
        frame = frame.sort_index()
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
        raise DataError(f"{origin}: column {col!r} is not numeric{where}")
    frame = frame.astype(float)
    if frame.shape[1] < 2:
        raise DataError(
            f"{origin}: need at least two assets, found {frame.shape[1]} "
            f"({', '.join(map(str, frame.columns))}); add a column of prices for another asset"
        )
    values = frame.to_numpy()
    for label, mask in (("infinite", np.isinf(values)), ("non-positive", values <= 0)):
        if mask.any():
            r, c = np.argwhere(mask)[0]
            raise DataError(
                f"{origin}: {label} price {float(values[r, c])!r} for {frame.columns[c]} on "
                f"{frame.index[r].date()} ({int(mask.sum())} such value(s)); prices must be > 0"
            )
    nan = np.isnan(values)
    if nan.any():
        if fill == "none":
            r, c = np.argwhere(nan)[0]
            raise DataError(
                f"{origin}: missing price for {frame.columns[c]} on {frame.index[r].date()} "
                f"({int(nan.sum())} missing value(s)); pass --fill ffill to carry prices forward"
            )
        empty = [str(c) for c, none in zip(frame.columns, nan.all(axis=0), strict=True) if none]
        if empty:
            raise DataError(
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
                stacklevel=2,
            )
            frame = frame.iloc[first:]
        # Count only the gaps that were filled, not the leading ones dropped with their rows.
        filled = int(nan[first:].sum())
        if filled:
            warnings.warn(
                f"{origin}: forward-filled {filled} missing price(s)", DataWarning, stacklevel=2
            )
    frame.columns = [str(c) for c in frame.columns]
    return frame


def load_prices(
    source: str | Path = "sp500", fill: Fill = "none", date_format: str | None = None
) -> pd.DataFrame:
    """Loads a daily price table (rows dates, columns assets).

    Args:
        source: ``"sp500"`` (the 20-stock daily set bundled with skfolio, 1990-2022),
            ``"synthetic"`` or ``"synthetic:SEED"`` (see :func:`synthetic_prices`), or a path to a
            CSV/Parquet file with a date column (or a datetime index) and one column per asset.
        fill: ``"none"`` refuses missing prices; ``"ffill"`` carries them forward.
        date_format: strptime format of a file's date column (``%d/%m/%Y``); needed only when
            the dates can be read two ways. Ignored by the embedded and synthetic sets.
    """
    text = str(source)
    if text == "sp500":
        from skfolio.datasets import load_sp500_dataset

        return validate_prices(load_sp500_dataset(), "sp500", fill)
    if text == "synthetic" or text.startswith("synthetic:"):
        seed_text = text.partition(":")[2] or "0"
        try:
            seed = int(seed_text)
        except ValueError:
            raise DataError(f"synthetic data seed must be an integer, got {seed_text!r}") from None
        return synthetic_prices(seed=seed)
    path = Path(text)
    return validate_prices(_read_file(path), str(path), fill, date_format)


def select_symbols(prices: pd.DataFrame, symbols: list[str] | None) -> pd.DataFrame:
    """Keeps the named columns; an unknown symbol is an error listing the available ones."""
    if not symbols:
        return prices
    unknown = [s for s in symbols if s not in prices.columns]
    if unknown:
        raise DataError(
            f"unknown symbol(s) {', '.join(unknown)}; available: {', '.join(prices.columns)}"
        )
    if len(set(symbols)) < 2:
        raise DataError("need at least two distinct symbols")
    return prices[list(dict.fromkeys(symbols))]


def _fingerprint(prices: pd.DataFrame) -> str:
    h = hashlib.sha256()
    h.update(",".join(prices.columns).encode())
    # In nanoseconds whatever unit the index holds (CSV, Parquet and pandas versions differ), so
    # the same prices always give the same fingerprint.
    h.update(pd.DatetimeIndex(prices.index).as_unit("ns").asi8.tobytes())
    h.update(np.ascontiguousarray(prices.to_numpy(dtype=float)).tobytes())
    return h.hexdigest()[:16]


def split(
    prices: pd.DataFrame,
    train_end: str | None = None,
    val_end: str | None = None,
    source: str = "prices",
) -> MarketData:
    """Splits prices by date into TRAIN (<= train_end), VALIDATION (<= val_end) and TEST (after).

    Without dates, the embedded set (``source="sp500"``) keeps its fixed windows, TRAIN to 2016,
    VALIDATION 2017-2019 and TEST 2020-2022, which benchmarks and past sessions were run on.
    Any other data is split 60% / 20% / 20% of its trading days (daily returns) in date order,
    whatever years it spans: cutting a 2005-2024 file at the embedded set's years would give
    60% / 15% / 25%, windows nobody asked for.
    """
    rets = prices.pct_change().iloc[1:]
    dates = pd.DatetimeIndex(rets.index)
    n = len(dates)
    if train_end is None and val_end is None and source == "sp500":
        train_end, val_end = SP500_TRAIN_END, SP500_VAL_END
    if train_end is None and val_end is None:
        a, b = int(n * TRAIN_FRACTION), int(n * (TRAIN_FRACTION + VAL_FRACTION))
    elif train_end is None or val_end is None:
        raise DataError("give both train_end and val_end, or neither")
    else:
        try:
            t_end, v_end = pd.Timestamp(train_end), pd.Timestamp(val_end)
        except ValueError as err:
            raise DataError(f"bad split date: {err}") from None
        if t_end >= v_end:
            raise DataError(f"train_end {train_end} must be before val_end {val_end}")
        a = int(dates.searchsorted(t_end, side="right"))
        b = int(dates.searchsorted(v_end, side="right"))
    sizes = {"train": a, "validation": b - a, "test": n - b}
    needed = {"train": MIN_TRAIN_ROWS, "validation": MIN_EVAL_ROWS, "test": MIN_EVAL_ROWS}
    short = [f"{k} has {v} rows, needs >= {needed[k]}" for k, v in sizes.items() if v < needed[k]]
    if short:
        raise DataError(
            f"{source}: too few rows for the windows ({'; '.join(short)}); "
            f"{n} daily returns" + (f" from {dates[0].date()} to {dates[-1].date()}" if n else "")
        )
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


def load_market(
    source: str | Path = "sp500",
    *,
    fill: Fill = "none",
    symbols: list[str] | None = None,
    train_end: str | None = None,
    val_end: str | None = None,
    date_format: str | None = None,
) -> MarketData:
    """``load_prices`` + ``select_symbols`` + ``split`` in one call (what the CLI uses)."""
    prices = select_symbols(load_prices(source, fill, date_format), symbols)
    return split(prices, train_end, val_end, source=str(source))


class DataSpec(BaseModel):
    """Where prices come from and how they are split: what a session (or a manual run) stores so
    that resuming it, or replaying one of its trials, loads exactly the same data."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    data: str = "sp500"
    fill: Fill = "none"
    symbols: list[str] | None = None
    train_end: str | None = None
    val_end: str | None = None
    date_format: str | None = Field(
        default=None, description="strptime format of a file's date column, e.g. %d/%m/%Y"
    )

    def load(self) -> MarketData:
        """:func:`load_market` with these settings."""
        return load_market(
            self.data,
            fill=self.fill,
            symbols=self.symbols,
            train_end=self.train_end,
            val_end=self.val_end,
            date_format=self.date_format,
        )
