"""Price loading, validation, the synthetic generator and date splits."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from alphaloop.exceptions import AlphaloopError, DataWarning, InvalidRequest
from alphaloop.market import (
    MarketData,
    load_market,
    load_prices,
    market_of,
    select_symbols,
    split,
    synthetic_prices,
    validate_prices,
)
from alphaloop.spec import DataSpec

GOOD_CSV = """date,A,B
2020-01-02,100,50
2020-01-03,101,51
2020-01-06,102,52
2020-01-07,103,53
"""


def write(tmp_path: Path, text: str, name: str = "prices.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def small_prices(n_days: int = 10, n_assets: int = 3) -> pd.DataFrame:
    return synthetic_prices(n_days=n_days, n_assets=n_assets, seed=1)


@pytest.fixture(scope="module")
def sp500() -> pd.DataFrame:
    return load_prices("sp500")


# -- synthetic ----------------------------------------------------------------------------------


def test_synthetic_is_seeded_and_shaped() -> None:
    a = synthetic_prices(n_days=300, n_assets=4, seed=3)
    b = synthetic_prices(n_days=300, n_assets=4, seed=3)
    c = synthetic_prices(n_days=300, n_assets=4, seed=4)
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a.to_numpy(), c.to_numpy())
    assert a.shape == (300, 4)
    assert list(a.columns) == ["A00", "A01", "A02", "A03"]
    assert a.index[0] == pd.Timestamp("2010-01-04")
    assert (a.index.dayofweek < 5).all() and a.index.is_monotonic_increasing
    assert (a.to_numpy() > 0).all()
    default = synthetic_prices()
    assert default.shape == (1500, 6)
    pd.testing.assert_frame_equal(load_prices("synthetic"), default)
    pd.testing.assert_frame_equal(load_prices("synthetic:3"), synthetic_prices(seed=3))


def test_synthetic_passes_its_own_validation() -> None:
    prices = synthetic_prices()
    pd.testing.assert_frame_equal(
        validate_prices(prices, "synthetic"), prices, check_names=False, check_freq=False
    )


def test_synthetic_returns_have_fat_tails() -> None:
    r = synthetic_prices(n_days=3000, n_assets=6, seed=0).pct_change().iloc[1:].to_numpy()
    d = r - r.mean(axis=0)
    kurtosis = (d**4).mean(axis=0) / ((d**2).mean(axis=0)) ** 2  # Pearson: 3 for a normal
    assert (kurtosis > 3.5).all(), kurtosis
    # and the assets move together through the common factor
    corr = np.corrcoef(r.T)[np.triu_indices(6, 1)]
    assert (corr > 0).all()


def test_synthetic_bad_arguments() -> None:
    with pytest.raises(ValueError, match="n_days >= 2 and n_assets >= 1"):
        synthetic_prices(n_days=1)
    with pytest.raises(InvalidRequest, match="synthetic data seed must be an integer, got 'x'"):
        load_prices("synthetic:x")


# -- embedded S&P 500 ---------------------------------------------------------------------------


def test_sp500_shape_and_dates(sp500: pd.DataFrame) -> None:
    assert sp500.shape[1] == 20
    assert sp500.shape[0] > 8000
    assert sp500.index[0].year == 1990 and sp500.index[-1].year == 2022
    assert sp500.index.is_monotonic_increasing and sp500.index.is_unique
    assert (sp500.dtypes == np.float64).all()
    assert (sp500.to_numpy() > 0).all()


def test_sp500_default_split(sp500: pd.DataFrame) -> None:
    md = split(sp500, source="sp500")
    assert md.window_dates(md.train)[1] == "2016-12-30"
    assert md.window_dates(md.val) == ("2017-01-03", "2019-12-31")
    assert md.window_dates(md.test)[0] == "2020-01-02"
    # returns start on the second price date
    assert md.dates[0] == sp500.index[1]
    assert md.describe()["validation"] == ("2017-01-03", "2019-12-31")
    assert md.n_assets == 20


def test_load_market_sp500_with_symbols(sp500: pd.DataFrame) -> None:
    symbols = list(sp500.columns[:3])
    md = load_market("sp500", symbols=symbols)
    assert md.symbols == tuple(symbols)
    assert md.returns.shape == (len(sp500) - 1, 3)
    assert md.window_dates(md.val) == ("2017-01-03", "2019-12-31")


# -- file round trips ---------------------------------------------------------------------------


def test_csv_round_trip_with_date_column(tmp_path: Path) -> None:
    prices = small_prices()
    path = tmp_path / "p.csv"
    prices.to_csv(path)  # index named "date" becomes a "date" column
    loaded = load_prices(path)
    np.testing.assert_allclose(loaded.to_numpy(), prices.to_numpy(), rtol=1e-15)
    assert list(loaded.index) == list(prices.index)
    assert list(loaded.columns) == list(prices.columns)


def test_csv_round_trip_with_unnamed_index(tmp_path: Path) -> None:
    prices = small_prices()
    prices.index.name = None
    path = tmp_path / "p.csv"
    prices.to_csv(path)
    assert pd.read_csv(path).columns[0] == "Unnamed: 0"
    loaded = load_prices(path)
    assert list(loaded.index) == list(prices.index)
    np.testing.assert_allclose(loaded.to_numpy(), prices.to_numpy(), rtol=1e-15)


def test_csv_with_capitalised_date_column(tmp_path: Path) -> None:
    loaded = load_prices(write(tmp_path, GOOD_CSV.replace("date", "Date")))
    assert loaded.index[0] == pd.Timestamp("2020-01-02")
    assert loaded.loc["2020-01-07", "B"] == 53.0


def test_csv_with_yyyymmdd_integer_dates(tmp_path: Path) -> None:
    loaded = load_prices(write(tmp_path, "date,A,B\n20200102,1,2\n20200103,1.5,2.5\n"))
    assert list(loaded.index) == [pd.Timestamp("2020-01-02"), pd.Timestamp("2020-01-03")]


@pytest.mark.parametrize("as_column", [False, True])
def test_parquet_round_trip(tmp_path: Path, as_column: bool) -> None:
    prices = small_prices()
    path = tmp_path / "p.parquet"
    (prices.reset_index() if as_column else prices).to_parquet(path)
    loaded = load_prices(path)
    np.testing.assert_array_equal(loaded.to_numpy(), prices.to_numpy())
    assert list(loaded.index) == list(prices.index)
    assert list(loaded.columns) == list(prices.columns)


def test_same_prices_same_fingerprint_whatever_the_file_or_time_unit(tmp_path: Path) -> None:
    prices = synthetic_prices(n_days=400, n_assets=3, seed=2)
    prices.to_csv(tmp_path / "p.csv")
    prices.to_parquet(tmp_path / "p.parquet")
    ns = prices.copy()
    ns.index = ns.index.as_unit("ns")
    ms = prices.copy()
    ms.index = ms.index.as_unit("ms")
    prints = {
        split(load_prices(tmp_path / "p.csv")).fingerprint,
        split(load_prices(tmp_path / "p.parquet")).fingerprint,
        split(prices).fingerprint,
        split(ns).fingerprint,
        split(ms).fingerprint,
    }
    assert len(prints) == 1


# -- bad inputs ---------------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.csv"
    with pytest.raises(InvalidRequest, match=r"price file not found: .*nope\.csv"):
        load_prices(path)


def test_unsupported_suffix(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD_CSV, "prices.xlsx")
    expected = r"unsupported price file type '\.xlsx'.*use \.csv or \.parquet"
    with pytest.raises(InvalidRequest, match=expected):
        load_prices(path)


def test_unreadable_parquet(tmp_path: Path) -> None:
    path = write(tmp_path, "not parquet", "prices.parquet")
    with pytest.raises(InvalidRequest, match=r"cannot read .*prices\.parquet"):
        load_prices(path)


def test_no_date_column(tmp_path: Path) -> None:
    path = write(tmp_path, "A,B\n1,2\n3,4\n")
    with pytest.raises(InvalidRequest) as info:
        load_prices(path)
    assert "no date column; name one of date, datetime, timestamp, time, day" in str(info.value)
    assert "(columns found: A, B)" in str(info.value)


def test_unparsable_date_names_value_and_row(tmp_path: Path) -> None:
    text = GOOD_CSV.replace("2020-01-06", "2020-13-45")
    with pytest.raises(InvalidRequest) as info:
        load_prices(write(tmp_path, text))
    msg = str(info.value)
    # header is line 1, so the third data row is line 4 of the file
    assert "1 unparsable date(s) in column 'date', first '2020-13-45' (row 4 of the file)" in msg


def test_duplicated_date_is_named(tmp_path: Path) -> None:
    text = GOOD_CSV.replace("2020-01-06", "2020-01-03")
    with pytest.raises(
        InvalidRequest, match="duplicated date 2020-01-03 \\(1 duplicate row\\(s\\)\\)"
    ):
        load_prices(write(tmp_path, text))


def test_unsorted_dates_are_sorted_with_a_warning(tmp_path: Path) -> None:
    text = "date,A,B\n2020-01-06,102,52\n2020-01-02,100,50\n2020-01-03,101,51\n"
    with pytest.warns(DataWarning, match="dates were not sorted; sorted 3 rows"):
        loaded = load_prices(write(tmp_path, text))
    assert [d.day for d in loaded.index] == [2, 3, 6]
    np.testing.assert_array_equal(loaded["A"].to_numpy(), [100.0, 101.0, 102.0])
    np.testing.assert_array_equal(loaded["B"].to_numpy(), [50.0, 51.0, 52.0])


@pytest.mark.parametrize("bad", ["0", "-1.5"])
def test_non_positive_price_names_asset_and_date(tmp_path: Path, bad: str) -> None:
    text = GOOD_CSV.replace("2020-01-03,101,51", f"2020-01-03,101,{bad}")
    with pytest.raises(InvalidRequest) as info:
        load_prices(write(tmp_path, text))
    msg = str(info.value)
    assert f"non-positive price {float(bad)!r} for B on 2020-01-03" in msg
    assert "prices must be > 0" in msg


def test_infinite_price_is_refused(tmp_path: Path) -> None:
    text = GOOD_CSV.replace("2020-01-06,102,52", "2020-01-06,inf,52")
    with pytest.raises(InvalidRequest, match="infinite price inf for A on 2020-01-06"):
        load_prices(write(tmp_path, text))
    with pytest.raises(InvalidRequest, match="infinite price inf for A on 2020-01-06"):
        load_prices(write(tmp_path, text), fill="ffill")


def test_nan_without_fill_names_asset_date_and_the_fix(tmp_path: Path) -> None:
    text = GOOD_CSV.replace("2020-01-06,102,52", "2020-01-06,102,")
    with pytest.raises(InvalidRequest) as info:
        load_prices(write(tmp_path, text))
    msg = str(info.value)
    assert "missing price for B on 2020-01-06 (1 missing value(s))" in msg
    assert "--fill ffill" in msg


def test_nan_with_ffill_carries_prices_forward(tmp_path: Path) -> None:
    text = "date,A,B\n2020-01-02,100,50\n2020-01-03,,51\n2020-01-06,,52\n2020-01-07,103,\n"
    with pytest.warns(DataWarning, match="forward-filled 3 missing price"):
        loaded = load_prices(write(tmp_path, text), fill="ffill")
    np.testing.assert_array_equal(loaded["A"].to_numpy(), [100.0, 100.0, 100.0, 103.0])
    np.testing.assert_array_equal(loaded["B"].to_numpy(), [50.0, 51.0, 52.0, 52.0])
    assert len(loaded) == 4


def test_leading_nan_rows_dropped_with_a_warning(tmp_path: Path) -> None:
    text = (
        "date,A,B\n2020-01-02,,50\n2020-01-03,,51\n2020-01-06,102,52\n"
        "2020-01-07,103,\n2020-01-08,104,54\n"
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load_prices(write(tmp_path, text), fill="ffill")
    messages = [str(w.message) for w in caught if issubclass(w.category, DataWarning)]
    assert any("dropped 2 leading row(s) before every asset has a price" in m for m in messages)
    # only the one gap inside the kept rows was filled; the two leading NaNs were dropped
    assert any("forward-filled 1 missing price(s)" in m for m in messages), messages
    assert loaded.index[0] == pd.Timestamp("2020-01-06")
    np.testing.assert_array_equal(loaded["A"].to_numpy(), [102.0, 103.0, 104.0])
    np.testing.assert_array_equal(loaded["B"].to_numpy(), [52.0, 52.0, 54.0])


def test_asset_without_any_price_is_refused_even_with_ffill(tmp_path: Path) -> None:
    text = "date,A,B,C\n2020-01-02,100,50,\n2020-01-03,101,51,\n"
    with pytest.raises(InvalidRequest, match="'C' has no price at all"):
        load_prices(write(tmp_path, text), fill="ffill")


def test_non_numeric_column_names_value_and_date(tmp_path: Path) -> None:
    text = GOOD_CSV.replace("2020-01-03,101,51", "2020-01-03,101,abc")
    with pytest.raises(
        InvalidRequest, match="column 'B' is not numeric, first 'abc' on 2020-01-03"
    ):
        load_prices(write(tmp_path, text))


def test_single_asset_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match="need at least two assets, found 1"):
        load_prices(write(tmp_path, "date,A\n2020-01-02,1\n2020-01-03,2\n"))


def test_unknown_fill_policy() -> None:
    with pytest.raises(InvalidRequest, match="unknown fill policy 'bfill'; use 'none' or 'ffill'"):
        validate_prices(small_prices(), "x", fill="bfill")  # type: ignore[arg-type]


def test_tz_aware_index_is_made_naive_without_touching_the_input() -> None:
    prices = small_prices()
    prices.index = prices.index.tz_localize("America/New_York")
    clean = validate_prices(prices, "x")
    assert clean.index.tz is None
    assert clean.index[0] == pd.Timestamp("2010-01-04")
    assert prices.index.tz is not None


def test_data_error_is_an_alphaloop_error_and_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(AlphaloopError):
        load_prices(tmp_path / "missing.csv")
    with pytest.raises(ValueError):
        load_prices(tmp_path / "missing.csv")


# -- date formats -------------------------------------------------------------------------------


def dated_csv(tmp_path: Path, dates: list[str], name: str = "prices.csv") -> Path:
    rows = "".join(f"{d},{100 + i},{50 + i}\n" for i, d in enumerate(dates))
    return write(tmp_path, "date,A,B\n" + rows, name)


# Three months of business days: days 13-31 exist, so only one order reads every row.
QUARTER = pd.bdate_range("2005-01-03", "2005-03-31")


@pytest.mark.parametrize(
    ("fmt", "example"), [("%d/%m/%Y", "13/01/2005"), ("%m/%d/%Y", "01/13/2005")]
)
def test_slash_dates_read_the_only_way_every_row_fits(
    tmp_path: Path, fmt: str, example: str
) -> None:
    dates = [d.strftime(fmt) for d in QUARTER]
    assert example in dates
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "dates were not sorted": nothing was scrambled
        loaded = load_prices(dated_csv(tmp_path, dates))
    assert list(loaded.index) == list(QUARTER)
    np.testing.assert_array_equal(loaded["A"].to_numpy(), 100.0 + np.arange(len(QUARTER)))


def test_ambiguous_slash_dates_are_refused_with_the_fix(tmp_path: Path) -> None:
    # 3-12 January, day first: every row is also a real date month first (1 March...).
    days = [d.strftime("%d/%m/%Y") for d in pd.bdate_range("2005-01-03", "2005-01-12")]
    with pytest.raises(InvalidRequest) as info:
        load_prices(dated_csv(tmp_path, days))
    msg = str(info.value)
    assert "ambiguous dates such as '03/01/2005' (row 2), '04/01/2005' (row 3)" in msg
    assert "every row fits both" in msg
    assert "convert the column to ISO YYYY-MM-DD" in msg
    assert "--date-format '%d/%m/%Y' (day first) or '%m/%d/%Y' (month first)" in msg


def test_explicit_date_format_settles_ambiguous_dates(tmp_path: Path) -> None:
    days = pd.bdate_range("2005-01-03", "2005-01-12")
    path = dated_csv(tmp_path, [d.strftime("%d/%m/%Y") for d in days])
    assert list(load_prices(path, date_format="%d/%m/%Y").index) == list(days)
    month_first = load_prices(path, date_format="%m/%d/%Y").index
    assert month_first[0] == pd.Timestamp("2005-03-01")


def test_mixed_day_first_and_month_first_rows_are_named(tmp_path: Path) -> None:
    dates = ["10/01/2005", "11/01/2005", "25/01/2005", "01/26/2005"]
    with pytest.raises(InvalidRequest) as info:
        load_prices(dated_csv(tmp_path, dates))
    msg = str(info.value)
    assert "mixed day-first and month-first dates" in msg
    assert "only day first: '25/01/2005' (row 4); only month first: '01/26/2005' (row 5)" in msg
    assert "convert the column to ISO YYYY-MM-DD" in msg


def test_iso_mixed_with_slash_dates_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest) as info:
        load_prices(dated_csv(tmp_path, ["2005-01-03", "2005-01-04", "25/01/2005"]))
    msg = str(info.value)
    assert "mixed date formats (YYYY-MM-DD: '2005-01-03' (row 2), '2005-01-04' (row 3); " in msg
    assert "day/month numbers: '25/01/2005' (row 4))" in msg


def test_impossible_slash_date_is_named(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match=r"1 impossible date\(s\) '31/02/2005' \(row 3\)"):
        load_prices(dated_csv(tmp_path, ["25/01/2005", "31/02/2005"]))


def test_rows_not_matching_the_date_format_are_named(tmp_path: Path) -> None:
    path = dated_csv(tmp_path, ["03/01/2005", "2005-01-04", "05/01/2005", "x", "y", "z"])
    with pytest.raises(InvalidRequest) as info:
        load_prices(path, date_format="%d/%m/%Y")
    msg = str(info.value)
    assert "4 date(s) do not match the date format '%d/%m/%Y'" in msg
    assert "'2005-01-04' (row 3), 'x' (row 5), 'y' (row 6) and 1 more" in msg


def test_bad_date_format_is_refused(tmp_path: Path) -> None:
    with pytest.raises(
        InvalidRequest, match=r"bad date format '%Q'.*strptime codes such as %d/%m/%Y"
    ):
        load_prices(dated_csv(tmp_path, ["03/01/2005"]), date_format="%Q")


@pytest.mark.parametrize(
    "dates",
    [
        ["03.01.05", "25.01.05"],  # dots, two-digit years
        ["03-01-2005 16:00", "25-01-2005 16:00"],  # dashes, a time of day
        ['"Jan 3, 2005"', '"Jan 25, 2005"'],  # month names
        ["2005-01-03T00:00:00-05:00", "2005-01-25T00:00:00-04:00"],  # offsets that differ
        ["20050103", "20050125"],
    ],
)
def test_unambiguous_formats_are_read(tmp_path: Path, dates: list[str]) -> None:
    loaded = load_prices(dated_csv(tmp_path, dates))
    assert [d.date().isoformat() for d in loaded.index] == ["2005-01-03", "2005-01-25"]


def test_empty_date_is_called_empty(tmp_path: Path) -> None:
    with pytest.raises(
        InvalidRequest, match=r"1 unparsable date.*first empty \(row 3 of the file\)"
    ):
        load_prices(dated_csv(tmp_path, ["2005-01-03", "", "2005-01-05"]))


def test_data_spec_carries_the_date_format(tmp_path: Path) -> None:
    # Four years, month first, only days <= 12: ambiguous without the format.
    days = [d for d in pd.bdate_range("2005-01-03", "2008-12-31") if d.day <= 12]
    path = dated_csv(tmp_path, [d.strftime("%m/%d/%Y") for d in days])
    with pytest.raises(InvalidRequest, match="ambiguous dates"):
        market_of(DataSpec(data=str(path)))
    spec = DataSpec(data=str(path), date_format="%m/%d/%Y")
    again = DataSpec.model_validate(spec.model_dump(mode="json"))
    assert again.date_format == "%m/%d/%Y"
    assert list(market_of(again).dates) == days[1:]
    assert DataSpec().date_format is None


# -- files that are not what they claim --------------------------------------------------------


def test_missing_file_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match="check the path, or use --data sp500 or synthetic"):
        load_prices(tmp_path / "nope.csv")


def test_directory_is_not_a_price_file(tmp_path: Path) -> None:
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(InvalidRequest, match=r"dir\.csv is not a file; give a CSV or Parquet file"):
        load_prices(tmp_path / "dir.csv")


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_empty_file(tmp_path: Path, text: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        load_prices(write(tmp_path, text))
    msg = str(info.value)
    assert "prices.csv is empty; a price CSV needs a header row such as date,AAPL,MSFT" in msg


def test_header_only_file_has_no_data_rows(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest) as info:
        load_prices(write(tmp_path, "date,A00,A01\n"))
    msg = str(info.value)
    assert "no data rows (columns: date, A00, A01)" in msg
    assert "add one row of prices per date" in msg
    assert "not numeric" not in msg


def test_date_column_without_prices(tmp_path: Path) -> None:
    with pytest.raises(
        InvalidRequest, match="no price columns, only dates; add one column of prices"
    ):
        load_prices(write(tmp_path, "date\n2020-01-02\n2020-01-03\n"))


def test_single_asset_names_it_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest) as info:
        load_prices(write(tmp_path, "date,A\n2020-01-02,1\n2020-01-03,2\n"))
    assert "need at least two assets, found 1 (A); add a column of prices" in str(info.value)


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_other_delimiters_are_detected(tmp_path: Path, sep: str) -> None:
    loaded = load_prices(write(tmp_path, GOOD_CSV.replace(",", sep)))
    assert list(loaded.columns) == ["A", "B"]
    assert loaded.loc["2020-01-07", "B"] == 53.0


def test_semicolons_with_decimal_commas(tmp_path: Path) -> None:
    text = "date;A;B\n2020-01-02;100,5;50\n2020-01-03;101,25;51,75\n"
    loaded = load_prices(write(tmp_path, text))
    np.testing.assert_array_equal(loaded["A"].to_numpy(), [100.5, 101.25])
    np.testing.assert_array_equal(loaded["B"].to_numpy(), [50.0, 51.75])


def test_semicolons_with_decimal_points(tmp_path: Path) -> None:
    loaded = load_prices(write(tmp_path, "date;A;B\n2020-01-02;100.5;50\n2020-01-03;101;51\n"))
    np.testing.assert_array_equal(loaded["A"].to_numpy(), [100.5, 101.0])


def test_gzipped_csv_is_read_whatever_its_name(tmp_path: Path) -> None:
    import gzip

    for name in ("prices.csv.gz", "prices.csv"):
        path = tmp_path / name
        path.write_bytes(gzip.compress(GOOD_CSV.encode()))
        assert load_prices(path).loc["2020-01-07", "B"] == 53.0


def test_utf8_bom_and_utf16_are_read(tmp_path: Path) -> None:
    path = tmp_path / "bom.csv"
    path.write_bytes(GOOD_CSV.encode("utf-8-sig"))
    assert load_prices(path).index[0] == pd.Timestamp("2020-01-02")
    path = tmp_path / "utf16.csv"
    path.write_bytes(GOOD_CSV.replace(",", "\t").encode("utf-16"))
    assert load_prices(path).loc["2020-01-07", "B"] == 53.0


def test_latin1_csv_is_read_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes(GOOD_CSV.replace("B", "Société").encode("latin-1"))
    with pytest.warns(DataWarning, match="not UTF-8 text; read as Latin-1"):
        loaded = load_prices(path)
    assert list(loaded.columns) == ["A", "Société"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (bytes(range(256)) * 4, r"is not a text CSV \(binary content"),
        (b"PK\x03\x04" + bytes(200), "is not a text CSV: it is a zip archive .*export the sheet"),
        (b"PAR1" + bytes(200), r"not a text CSV: it is a Parquet file; rename it to \.parquet"),
    ],
)
def test_binary_file_named_csv(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "prices.csv"
    path.write_bytes(content)
    with pytest.raises(InvalidRequest, match=expected):
        load_prices(path)


def test_real_parquet_named_csv_says_rename(tmp_path: Path) -> None:
    path = tmp_path / "prices.csv"
    small_prices().to_parquet(path)
    with pytest.raises(InvalidRequest, match=r"it is a Parquet file; rename it to \.parquet"):
        load_prices(path)


def test_csv_named_parquet_says_rename(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest) as info:
        load_prices(write(tmp_path, GOOD_CSV, "prices.parquet"))
    msg = str(info.value)
    assert "not a Parquet file (it looks like text; if it is a CSV, rename it to .csv)" in msg


def test_binary_named_parquet_and_empty_parquet(tmp_path: Path) -> None:
    path = tmp_path / "prices.parquet"
    path.write_bytes(bytes(range(256)))
    with pytest.raises(InvalidRequest, match=r"not a Parquet file \(no Parquet header\)"):
        load_prices(path)
    path.write_bytes(b"")
    with pytest.raises(InvalidRequest, match=r"is empty; write prices with DataFrame\.to_parquet"):
        load_prices(path)


def test_truncated_parquet(tmp_path: Path) -> None:
    path = tmp_path / "prices.parquet"
    small_prices().to_parquet(path)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(InvalidRequest, match="broken Parquet file"):
        load_prices(path)


def test_ragged_rows_name_the_delimiter(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match="every row needs the same number of ','-separated"):
        load_prices(write(tmp_path, GOOD_CSV + "2020-01-08,1,2,3,4\n"))


# -- select_symbols -----------------------------------------------------------------------------


def test_select_symbols() -> None:
    prices = small_prices(n_assets=4)
    assert list(select_symbols(prices, ["A02", "A00"]).columns) == ["A02", "A00"]
    assert list(select_symbols(prices, ["A01", "A03", "A01"]).columns) == ["A01", "A03"]
    assert select_symbols(prices, None) is prices
    assert select_symbols(prices, []) is prices


def test_select_unknown_symbol_lists_available() -> None:
    with pytest.raises(InvalidRequest) as info:
        select_symbols(small_prices(n_assets=4), ["A00", "ZZZ", "QQQ"])
    assert str(info.value) == "unknown symbol(s) ZZZ, QQQ; available: A00, A01, A02, A03"


def test_select_needs_two_distinct_symbols() -> None:
    with pytest.raises(InvalidRequest, match="need at least two distinct symbols"):
        select_symbols(small_prices(), ["A00", "A00"])


# -- split --------------------------------------------------------------------------------------


def assert_windows_partition(md: MarketData) -> None:
    n = md.returns.shape[0]
    assert md.train.start == 0
    assert md.train.stop == md.val.start
    assert md.val.stop == md.test.start
    assert md.test.stop == n == len(md.dates)
    assert all(s.step is None for s in (md.train, md.val, md.test))
    covered = np.concatenate([np.arange(n)[w] for w in (md.train, md.val, md.test)])
    np.testing.assert_array_equal(covered, np.arange(n))


def test_split_fallback_60_20_20_on_synthetic() -> None:
    prices = synthetic_prices()  # 2010-01-04 .. 2015-09: no room for the 2016 / 2019 windows
    md = split(prices)
    # 1,499 returns: int(0.6 * 1499) = 899, int(0.8 * 1499) = 1199
    assert (md.train, md.val, md.test) == (slice(0, 899), slice(899, 1199), slice(1199, 1499))
    assert_windows_partition(md)
    p = prices.to_numpy()
    np.testing.assert_allclose(md.returns, p[1:] / p[:-1] - 1.0, rtol=1e-13)
    assert md.returns.dtype == np.float64 and md.returns.flags["C_CONTIGUOUS"]
    assert md.symbols == tuple(prices.columns)
    assert list(md.dates) == list(prices.index[1:])


def test_split_explicit_dates() -> None:
    prices = synthetic_prices()
    md = split(prices, "2013-06-30", "2014-06-30", source="mine")
    assert_windows_partition(md)
    dates = prices.index[1:]
    assert md.train.stop == int((dates <= "2013-06-30").sum())
    assert md.val.stop == int((dates <= "2014-06-30").sum())
    assert md.window_dates(md.train)[1] == "2013-06-28"  # a Friday
    assert md.window_dates(md.val) == ("2013-07-01", "2014-06-30")
    assert md.source == "mine"


@pytest.mark.parametrize(
    ("n_days", "start"),
    [
        (5217, "2005-01-03"),  # 2005-2024: the embedded set's 2016 / 2019 would cut 60/15/25
        (2730, "2010-01-04"),  # to 2020-06: they would cut 70/30/5
        (900, "2016-09-01"),  # 2016-09 .. 2020-03: they would leave train ~80 rows
    ],
)
def test_split_default_is_60_20_20_of_trading_days_on_other_data(n_days: int, start: str) -> None:
    prices = synthetic_prices(n_days=n_days, n_assets=3, start=start)
    md = split(prices, source="mine.csv")
    n = n_days - 1
    assert (md.train.stop, md.val.stop) == (int(0.6 * n), int(0.8 * n))
    assert_windows_partition(md)


def test_split_keeps_the_embedded_windows_only_for_the_embedded_set() -> None:
    prices = synthetic_prices(n_days=5217, n_assets=3, start="2005-01-03")
    md = split(prices, source="sp500")
    assert md.window_dates(md.train) == ("2005-01-04", "2016-12-30")
    assert md.window_dates(md.val) == ("2017-01-02", "2019-12-31")  # business days, no holidays
    assert md.window_dates(md.test) == ("2020-01-01", "2024-12-31")


def test_windows_are_described_for_output() -> None:
    md = split(synthetic_prices())
    windows = md.windows()
    assert list(windows) == ["train", "validation", "test"]
    assert windows["validation"] == md.window_dates(md.val)
    assert {k: md.describe()[k] for k in windows} == windows
    a, b = windows["test"]
    assert md.windows_text().endswith(f", test {a}..{b}")
    assert md.windows_text().startswith(f"train {windows['train'][0]}..")


def test_split_too_few_rows_lists_the_windows() -> None:
    prices = synthetic_prices(n_days=100, n_assets=3)
    with pytest.raises(InvalidRequest) as info:
        split(prices, source="tiny")
    msg = str(info.value)
    # 99 returns -> 59 / 20 / 20
    assert msg.startswith("tiny: too few rows for the windows (")
    assert "train has 59 rows, needs >= 181" in msg
    assert "validation has 20 rows, needs >= 21" in msg
    assert "test has" not in msg  # 20 rows meet the TEST window's 15
    assert "99 daily returns from 2010-01-05 to" in msg
    with pytest.raises(InvalidRequest) as info:
        split(synthetic_prices(n_days=60, n_assets=3), source="tiny")
    # 59 returns -> 35 / 12 / 12
    assert "test has 12 rows, needs >= 15" in str(info.value)


@pytest.mark.parametrize("n_days", [1, 2])
def test_split_of_almost_no_data_is_a_data_error(n_days: int) -> None:
    prices = synthetic_prices(n_days=max(n_days, 2), n_assets=2).iloc[:n_days]
    with pytest.raises(InvalidRequest, match="too few rows for the windows"):
        split(prices)


def test_split_date_arguments_are_checked() -> None:
    prices = synthetic_prices()
    with pytest.raises(InvalidRequest, match="give both train_end and val_end, or neither"):
        split(prices, train_end="2013-01-01")
    with pytest.raises(
        InvalidRequest, match="train_end 2014-01-01 must be before val_end 2013-01-01"
    ):
        split(prices, "2014-01-01", "2013-01-01")
    with pytest.raises(InvalidRequest, match="bad split date"):
        split(prices, "not-a-date", "2014-01-01")


def test_fingerprint_stable_and_sensitive() -> None:
    prices = synthetic_prices()
    fp = split(prices).fingerprint
    assert fp == split(synthetic_prices()).fingerprint
    assert len(fp) == 16 and int(fp, 16) >= 0
    changed = prices.copy()
    changed.iloc[700, 2] *= 1.0 + 1e-12
    assert split(changed).fingerprint != fp
    renamed = prices.rename(columns={"A05": "B05"})
    assert split(renamed).fingerprint != fp


def test_load_market_from_csv(tmp_path: Path) -> None:
    prices = synthetic_prices()
    path = tmp_path / "p.csv"
    prices.to_csv(path)
    md = load_market(path, symbols=["A01", "A04"], train_end="2013-06-30", val_end="2014-06-30")
    assert md.symbols == ("A01", "A04")
    assert md.source == str(path)
    p = prices[["A01", "A04"]].to_numpy()
    np.testing.assert_allclose(md.returns, p[1:] / p[:-1] - 1.0, rtol=1e-12)
    assert md.window_dates(md.val) == ("2013-07-01", "2014-06-30")
