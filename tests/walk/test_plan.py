"""Where a walk's epochs fall: each epoch's session sees only the days before it, the periods
tile the record once, and a cadence or start the data cannot hold is refused naming what
fits."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from alphaloop.exceptions import InvalidRequest
from alphaloop.market import MIN_TEST_ROWS, MIN_TRAIN_ROWS, load_market, market_of
from alphaloop.meta_agent.session import SessionSpec
from alphaloop.trials import PURGE_ROWS, build_folds
from alphaloop.walk import WalkSpec, plan
from alphaloop.walk.plan import epoch_data, fold_days
from alphaloop.walk.run import epoch_spec


@pytest.fixture(scope="module")
def sp500():
    return load_market("sp500")


def walk(**fields) -> WalkSpec:
    session = fields.pop("session", {})
    return WalkSpec(session=SessionSpec(goal="g", **session), **fields)


@pytest.mark.parametrize("cadence", ["yearly", "quarterly", "monthly"])
def test_periods_tile_the_record_once_on_the_cadence(sp500, cadence) -> None:
    epochs = plan(walk(cadence=cadence), sp500)
    assert len(epochs) >= 2
    # End to end, no gap and no overlap, up to the data's last day.
    assert [e.start for e in epochs[1:]] == [e.stop for e in epochs[:-1]]
    assert epochs[-1].stop == len(sp500.dates)
    periods = sp500.dates.to_period({"yearly": "Y", "quarterly": "Q", "monthly": "M"}[cadence])
    for e in epochs:
        assert e.stop - e.start >= MIN_TEST_ROWS
        # Each epoch starts on the first trading day of its year, quarter or month.
        assert periods[e.start] != periods[e.start - 1]
        assert e.first_day == sp500.dates[e.start].date().isoformat()
        assert e.last_day == sp500.dates[e.stop - 1].date().isoformat()


def test_the_first_epoch_is_the_first_the_folds_fit_before(sp500) -> None:
    length = fold_days(sp500)
    assert length == sp500.val.stop - sp500.val.start  # a lone session's VALIDATION
    for folds in (1, 3):
        first = plan(walk(session={"folds": folds}), sp500)[0]
        need = MIN_TRAIN_ROWS + PURGE_ROWS + folds * length
        assert first.start >= need
        # The year before's first day would not have held them.
        year_before = sp500.dates.year == sp500.dates[first.start].year - 1
        assert int(np.flatnonzero(year_before)[0]) < need
        build_folds(epoch_data(sp500, first.start, first.stop), folds)  # they fit


def test_an_epochs_session_sees_nothing_after_its_period_and_scores_before_the_epoch(
    sp500,
) -> None:
    spec = walk(start="2005-01-01")
    epochs = plan(spec, sp500)
    for e in epochs[:3]:
        data = market_of(epoch_spec(spec, e, "w-x", side_by_side=False))
        assert data.dates[-1].date().isoformat() == e.last_day
        assert data.dates[data.test.start].date().isoformat() == e.first_day
        assert data.val.stop == data.test.start and data.val.stop - data.val.start == fold_days(
            sp500
        )
        # The same returns as the whole data's, row for row: the cut drops, never changes.
        np.testing.assert_array_equal(data.returns, sp500.returns[: e.stop])
        folds = build_folds(data, 2)
        assert all(f.stop <= data.test.start for f in folds)


def test_a_start_before_the_folds_fit_names_the_earliest(sp500) -> None:
    earliest = plan(walk(), sp500)[0].first_day
    with pytest.raises(InvalidRequest, match=f"the earliest yearly start is {earliest}"):
        plan(walk(start="1991-06-01"), sp500)
    later = plan(walk(start="2010-03-01"), sp500)[0]
    assert later.first_day == "2011-01-03"


def test_data_too_short_for_two_epochs_names_the_shortest_span(sp500) -> None:
    with pytest.raises(InvalidRequest, match=r"fewer than two yearly epochs.*needs \d+ trading"):
        plan(walk(start="2022-01-01"), sp500)
    short = load_market("synthetic")
    with pytest.raises(InvalidRequest, match=r"too short for a yearly walk.*\d+ trading days"):
        plan(walk(session={"folds": 4}), short)


def test_a_walk_sets_its_epochs_windows_itself() -> None:
    with pytest.raises(ValueError, match="leave train_end, val_end unset"):
        walk(session={"train_end": "2010-01-01", "val_end": "2012-01-01"})
    with pytest.raises(ValueError, match="must be after its start"):
        walk(start="2010-01-01", end="2009-01-01")


def test_a_short_month_joins_the_one_before() -> None:
    dates = pd.bdate_range("2000-01-03", "2004-12-31")
    prices = pd.DataFrame(
        np.cumprod(1 + np.random.default_rng(0).normal(0, 0.01, (len(dates), 3)), axis=0),
        index=dates,
        columns=list("abc"),
    )
    # Drop most of one month's days: it is too short to be an epoch's TEST.
    prices = prices[
        ~((prices.index.year == 2004) & (prices.index.month == 3) & (prices.index.day > 10))
    ]
    from alphaloop.market import split

    data = split(prices, source="prices")
    epochs = plan(walk(cadence="monthly"), data)
    starts = {data.dates[e.start].strftime("%Y-%m") for e in epochs}
    assert "2004-02" in starts and "2004-03" not in starts and "2004-04" in starts
    feb = next(e for e in epochs if data.dates[e.start].strftime("%Y-%m") == "2004-02")
    assert feb.last_day.startswith("2004-03")


def test_fold_days_sets_each_epochs_validation_and_the_first_epoch(sp500) -> None:
    spec = walk(fold_days=252)
    epochs = plan(spec, sp500)
    assert epochs[0].start < plan(walk(), sp500)[0].start  # shorter folds fit earlier
    data = market_of(epoch_spec(spec, epochs[0], "w-x", side_by_side=False))
    assert data.val.stop - data.val.start == 252 and data.val.stop == data.test.start
