"""The walk-forward folds a search trial is scored on: where they lie, their purge, their step
budget and how their results add up into the trial's."""

from __future__ import annotations

import itertools
import math
import statistics

import pytest

from alphaloop.exceptions import InvalidRequest, exit_code_of
from alphaloop.knobs import TrialConfig
from alphaloop.market import MIN_TRAIN_ROWS, load_market
from alphaloop.trials import (
    PURGE_ROWS,
    TrialBudget,
    aggregate_folds,
    build_folds,
    fold_budget,
    fold_score,
    max_folds,
    run_trial,
)
from alphaloop.trials.folds import fold_timesteps


@pytest.fixture(scope="module")
def data():
    return load_market("synthetic")


@pytest.mark.parametrize("k", [1, 2, 3])
def test_folds_tile_the_history_before_test_and_end_with_validation(data, k: int) -> None:
    folds = build_folds(data, k)
    length = data.val.stop - data.val.start
    assert len(folds) == k
    assert (folds[-1].start, folds[-1].stop) == (data.val.start, data.val.stop)
    for before, after in itertools.pairwise(folds):
        assert before.stop == after.start  # contiguous, oldest first
    for f in folds:
        assert f.stop - f.start == length
        # No TEST day in a fold or its training, and training ends the purge before the fold.
        assert f.stop <= data.test.start
        first, stop = f.train
        assert first == data.train.start and stop == f.start - PURGE_ROWS
        assert stop - first >= MIN_TRAIN_ROWS


def test_too_many_folds_name_the_most_that_fit(data) -> None:
    most = max_folds(data)
    build_folds(data, most)
    with pytest.raises(InvalidRequest, match=f"ask for {most} folds or fewer") as err:
        build_folds(data, most + 1)
    assert exit_code_of(err.value) == 2
    with pytest.raises(InvalidRequest, match="at least 1"):
        build_folds(data, 0)


@pytest.mark.parametrize(("total", "k"), [(4096, 3), (64, 5), (10_001, 7)])
def test_fold_steps_add_up_to_the_trials_budget(total: int, k: int) -> None:
    shares = [fold_timesteps(total, k, i) for i in range(k)]
    assert sum(shares) == total and max(shares) - min(shares) <= 1
    budget = TrialBudget(total_timesteps=total, n_envs=1)
    assert sum(fold_budget(budget, k, i).total_timesteps for i in range(k)) == total


def test_the_fold_score_is_the_mean_less_one_standard_error() -> None:
    values = [1.0, 0.4, 0.7]
    se = statistics.stdev(values) / math.sqrt(3)
    assert fold_score(values) == pytest.approx(0.7 - se)
    assert fold_score([0.9]) == 0.9  # one fold: no spread to charge


def test_a_trials_result_is_its_folds_end_to_end(data) -> None:
    folds = build_folds(data, 3)
    parts = [run_trial("cufolio_only", TrialConfig(), data, None, 0, window=f) for f in folds]
    whole = aggregate_folds(parts)
    assert whole.daily_returns == [x for p in parts for x in p.daily_returns]
    assert whole.objective == pytest.approx(fold_score([p.objective for p in parts]))
    assert whole.metrics.max_drawdown == max(p.metrics.max_drawdown for p in parts)
    assert whole.metrics.n_days == sum(p.metrics.n_days for p in parts)
    assert (whole.start_date, whole.end_date) == (parts[0].start_date, parts[-1].end_date)
    # The most recent fold is VALIDATION itself: its result equals the named window's.
    named = run_trial("cufolio_only", TrialConfig(), data, None, 0, window="validation")
    assert parts[-1].daily_returns == pytest.approx(named.daily_returns, abs=1e-15)
