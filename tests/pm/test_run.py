"""The deployment check: a paper book ticked day by day over a window holds the evaluator's
book, for every policy kind (the equity curves agree to float round-off)."""

from __future__ import annotations

import numpy as np
import pytest

from alphaloop.exceptions import Conflict, InvalidRequest
from alphaloop.journal import Journal
from alphaloop.market import market_of
from alphaloop.ops import pm as ops_pm
from alphaloop.pm.policy import window_rows
from alphaloop.settings import Settings
from alphaloop.spec import DataSpec
from tests.pm.helpers import add_policy

START, END = "2013-07-01", "2013-08-30"  # inside the synthetic validation window


@pytest.fixture
def pm_settings(settings: Settings) -> Settings:
    # Limits far from what the window reaches: this test is about the accounting.
    return settings.model_copy(update={"pm_max_turnover": 2.0, "pm_max_drawdown": 0.9})


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mean_cvar", "ppo", "unified"])
def test_pm_run_equals_the_evaluator_backtest(pm_settings: Settings, kind: str) -> None:
    pm_settings.home.mkdir(parents=True)
    with Journal(pm_settings.journal_path) as journal:
        policy = add_policy(journal, pm_settings, kind)
    report = ops_pm.pm_run(pm_settings, start=START, end=END, policy_id=policy.id)
    assert report.halted_days == 0
    assert len(report.dates) == len(report.evaluator_equity) > 30
    equity, reference = np.asarray(report.equity), np.asarray(report.evaluator_equity)
    np.testing.assert_allclose(equity, reference, rtol=1e-12, atol=0)
    assert report.max_abs_diff < 1e-6  # dollars on a 100,000 book
    # The book really traded: its fills and a decision per day are journaled.
    with Journal(pm_settings.journal_path) as journal:
        decisions = journal.books.list_decisions(report.book)
        fills = journal.books.list_fills(report.book)
    assert len(decisions) == len(report.dates)
    assert all(d.status == "sent" for d in decisions)
    assert sum(1 for d in decisions if d.orders) >= 3
    assert fills and all(f.price > 0 for f in fills)
    # Each decision keeps the weights a reviewer sees, as {symbol: weight}.
    last = decisions[0]
    assert set(last.target_weights) == set(policy.symbols)
    assert abs(sum(last.pre_weights.values()) - 1) < 1e-9


def test_a_reversed_window_is_bad_usage_and_an_empty_one_is_said() -> None:
    market = market_of(DataSpec(data="synthetic"))
    with pytest.raises(
        InvalidRequest, match="--end 2013-01-04 is before --start 2013-03-29"
    ) as err:
        window_rows(market, "2013-03-29", "2013-01-04")
    assert err.value.exit_code == 2
    with pytest.raises(Conflict, match="no trading days between 2013-06-29 and 2013-06-30"):
        window_rows(market, "2013-06-29", "2013-06-30")  # a weekend
