"""The baselines' metrics, computed once per window and handed from one process of a session to
another: what a process is given is what it would have computed, and it computes nothing."""

from __future__ import annotations

import pytest

from alphaloop.market import MarketData, market_of
from alphaloop.metrics import compute_metrics
from alphaloop.spec import DataSpec
from alphaloop.trials import (
    TrialBudget,
    baselines,
    build_folds,
    known_baselines,
    reference,
    remember_baselines,
    split_for,
)


@pytest.fixture(scope="module")
def data() -> MarketData:
    return market_of(DataSpec(data="synthetic"))


def test_baselines_handed_over_are_the_ones_computed_and_are_not_computed_again(
    data: MarketData, monkeypatch: pytest.MonkeyPatch
) -> None:
    budget = TrialBudget()
    split = split_for(data, build_folds(data, 3)[0])
    monkeypatch.setattr(reference, "_BASELINES", {})
    # The oracle: the two backtests' metrics, computed directly.
    backtests = reference.baseline_backtests(split.data, split.window, budget)
    expected = {name: compute_metrics(bt.net, bt.turnover) for name, bt in backtests.items()}
    assert baselines(split.data, split.window, budget) == expected
    handed = known_baselines()
    assert len(handed) == 1

    # Another process of the session: it has computed nothing, and is given them.
    monkeypatch.setattr(reference, "_BASELINES", {})

    def never(*args: object) -> None:
        raise AssertionError("computed again")

    monkeypatch.setattr(reference, "baseline_backtests", never)
    remember_baselines(handed)
    assert baselines(split.data, split.window, budget) == expected
    # A window it was not given is still its own to compute.
    other = split_for(data, build_folds(data, 3)[1])
    with pytest.raises(AssertionError, match="computed again"):
        baselines(other.data, other.window, budget)


def test_what_a_process_computed_itself_is_kept_over_what_it_is_given(
    data: MarketData, monkeypatch: pytest.MonkeyPatch
) -> None:
    budget = TrialBudget()
    monkeypatch.setattr(reference, "_BASELINES", {})
    mine = baselines(data, "validation", budget)
    [key] = known_baselines()
    remember_baselines({key: {}})
    assert baselines(data, "validation", budget) == mine
