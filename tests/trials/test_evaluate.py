"""The frozen evaluator's entry point: the split an explicit window is scored on (its rows, the
history before it, nothing after it, training that ends before it) and :func:`evaluate` of a
config or a published policy, checked against the hand-built re-split callers used before it
and against ``run_trial``."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from alphaloop.exceptions import InvalidRequest
from alphaloop.knobs import TrialConfig
from alphaloop.market import MarketData, load_market
from alphaloop.metrics import compute_metrics
from alphaloop.trials import (
    EVALUATOR_VERSION,
    EXPLICIT,
    ConfigSubject,
    Dates,
    PolicySubject,
    Rows,
    TrialBudget,
    TrialResult,
    evaluate,
    run_trial,
    split_for,
)
from tests.test_trials import TINY_BUDGET, TINY_PPO, perturbed
from tests.trials.recipe import by_hand

FAST_CVAR = TrialConfig(cufolio_hold_days=10, n_scenarios=1000)
FAST_BUDGET = TrialBudget(scenario_window=120)


@pytest.fixture(scope="module")
def data() -> MarketData:
    return load_market("synthetic")


def without_elapsed(result: TrialResult) -> dict[str, Any]:
    return result.model_dump(exclude={"elapsed_s"})


# -- the split ----------------------------------------------------------------------------------


def test_a_named_window_is_scored_on_the_data_itself(data: MarketData) -> None:
    for name, rows in (("validation", data.val), ("test", data.test)):
        split = split_for(data, name)
        assert split.data is data and split.window == name == split.label and split.rows == rows
    with pytest.raises(ValueError, match="unknown window 'train'"):
        split_for(data, "train")  # type: ignore[arg-type]


def test_explicit_rows_keep_their_history_and_end_on_their_last_day(data: MarketData) -> None:
    rows = Rows(start=data.val.start + 50, stop=data.val.start + 120)
    split = split_for(data, rows)
    sub = split.data
    assert split.label == EXPLICIT and split.window == "validation"
    assert split.rows == sub.val == slice(rows.start, rows.stop)
    # Every row before the window is there to look back on, untouched; none after it.
    assert len(sub.returns) == len(sub.dates) == rows.stop
    np.testing.assert_array_equal(sub.returns, data.returns[: rows.stop])
    assert (sub.dates == data.dates[: rows.stop]).all()
    assert sub.test == slice(rows.stop, rows.stop)
    # The data's TRAIN, which ends before this window, is what a config trains on.
    assert sub.train == data.train
    assert (sub.fingerprint, sub.symbols) == (data.fingerprint, data.symbols)


def test_no_test_row_reaches_an_explicit_window_before_it(data: MarketData) -> None:
    rows = Rows(start=data.val.start, stop=data.val.stop - 10)
    sub = split_for(data, rows).data
    assert len(sub.returns) <= data.test.start
    # Scored on data whose TEST rows are replaced, a config trained and scored on the window
    # gives the same numbers: neither training nor scoring read them.
    moved = perturbed(data, data.test)
    subject = ConfigSubject(mode="ppo_only", config=TINY_PPO, budget=TINY_BUDGET, seed=2)
    a, b = evaluate(subject, rows, data), evaluate(subject, rows, moved)
    assert a.daily_returns == b.daily_returns and a.curve == b.curve
    assert a.baselines == evaluate(subject, rows, moved).baselines


def test_training_ends_before_an_explicit_window(data: MarketData) -> None:
    inside_train = Rows(start=400, stop=500)
    assert split_for(data, inside_train).data.train == slice(0, 400)
    walk = Rows(start=1000, stop=1100, train=(300, 1000))
    assert split_for(data, walk).data.train == slice(300, 1000)
    with pytest.raises(ValidationError, match="must be non-empty and end at or before"):
        Rows(start=1000, stop=1100, train=(300, 1001))
    with pytest.raises(ValidationError, match="stop must exceed start"):
        Rows(start=10, stop=10)


def test_dates_are_the_trading_days_between_them(data: MarketData) -> None:
    first, last = data.dates[1000], data.dates[1040]
    window = Dates(start=first.date(), end=last.date())
    assert window.rows(data) == Rows(start=1000, stop=1041)
    # A weekend at either end holds no trading day and moves nothing.
    weekend = Dates(start=dt.date(2015, 1, 3), end=dt.date(2015, 2, 1))
    days = data.dates[weekend.rows(data).start : weekend.rows(data).stop]
    assert str(days[0].date()) == "2015-01-05" and str(days[-1].date()) == "2015-01-30"
    assert split_for(data, window).rows == slice(1000, 1041)
    saturday = dt.date(2015, 1, 3)
    with pytest.raises(InvalidRequest, match="no trading day"):
        split_for(data, Dates(start=saturday, end=saturday))
    with pytest.raises(InvalidRequest, match="run past the 1499 rows"):
        split_for(data, Rows(start=1400, stop=1600))
    with pytest.raises(ValidationError, match="is after its end"):
        Dates(start=dt.date(2015, 2, 1), end=dt.date(2015, 1, 1))


# -- evaluate -----------------------------------------------------------------------------------


def test_a_config_on_a_named_window_is_run_trial(data: MarketData) -> None:
    subject = ConfigSubject(mode="cufolio_only", config=FAST_CVAR, budget=FAST_BUDGET, seed=3)
    for window in ("validation", "test"):
        result = evaluate(subject, window, data)
        old = run_trial("cufolio_only", FAST_CVAR, data, FAST_BUDGET, 3, window=window)
        assert without_elapsed(result) == without_elapsed(old)
        assert result.window == window and result.evaluator_version == EVALUATOR_VERSION


def test_a_config_on_explicit_rows_is_the_hand_built_re_split(data: MarketData) -> None:
    rows = slice(data.test.start + 20, data.test.start + 120)
    subject = ConfigSubject(mode="cufolio_only", config=FAST_CVAR, budget=FAST_BUDGET, seed=1)
    result = evaluate(subject, Rows.of(rows), data)
    book, base = by_hand("cufolio_only", FAST_CVAR, data, rows, FAST_BUDGET, 1)
    assert result.daily_returns == [float(x) for x in book.net]
    assert result.metrics == compute_metrics(book.net, book.turnover)
    assert result.baselines == base
    assert result.final_weights == [float(x) for x in book.final]
    assert (result.window, result.start_date, result.end_date) == (
        EXPLICIT,
        *data.window_dates(rows),
    )


def test_a_ppo_config_trains_on_the_rows_it_is_given(data: MarketData) -> None:
    train, rows = slice(200, 900), slice(900, 1000)
    subject = ConfigSubject(mode="ppo_only", config=TINY_PPO, budget=TINY_BUDGET, seed=5)
    result = evaluate(subject, Rows.of(rows, train), data)
    book, base = by_hand("ppo_only", TINY_PPO, data, rows, TINY_BUDGET, 5, train=train)
    assert result.daily_returns == [float(x) for x in book.net]
    assert result.baselines == base and result.timesteps == 256


def test_a_policy_is_scored_from_its_file_as_callers_did(data: MarketData, tmp_path: Path) -> None:
    trained = run_trial("unified", TINY_PPO, data, TINY_BUDGET, seed=0, policy_dir=tmp_path)
    assert trained.policy_path is not None
    rows = slice(data.val.start + 30, data.test.start + 60)
    subject = PolicySubject(
        mode="unified", config=TINY_PPO, budget=TINY_BUDGET, policy_path=trained.policy_path
    )
    result = evaluate(subject, Rows.of(rows), data)
    book, base = by_hand(
        "unified", TINY_PPO, data, rows, TINY_BUDGET, 0, policy_path=trained.policy_path
    )
    assert result.daily_returns == [float(x) for x in book.net]
    assert result.baselines == base
    # Nothing trained: no curve, no timesteps, and the file it decided with is named.
    assert (result.timesteps, result.curve, result.policy_path) == (
        None,
        [],
        trained.policy_path,
    )
    # On its own validation window the policy gives the trial's returns.
    again = evaluate(subject, "validation", data)
    assert again.daily_returns == trained.daily_returns


def test_subjects_say_what_they_lack() -> None:
    with pytest.raises(ValidationError, match="a ppo_only policy needs its saved policy_path"):
        PolicySubject(mode="ppo_only")
    with pytest.raises(ValidationError, match="has no policy file"):
        PolicySubject(mode="cufolio_only", policy_path="x.zip")
    with pytest.raises(ValidationError, match="unknown metric 'alpha'"):
        ConfigSubject(mode="cufolio_only", metric="alpha")
    with pytest.raises(ValidationError, match="extra"):
        ConfigSubject(mode="cufolio_only", policy_path="x.zip")  # type: ignore[call-arg]
