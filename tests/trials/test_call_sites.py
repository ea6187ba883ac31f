"""Every caller that scores a strategy on a window of its own (the portfolio manager's
reference book, a replay, the stress test's reruns) gives what the frozen evaluator gave when
each caller re-split the data by hand: ``rows`` as the validation window, decided by
``strategy_targets``, backtested by ``simulate`` at the evaluation cost. The recipe is
written out here as the oracle, so a change of the shared path cannot move the numbers."""

from __future__ import annotations

import numpy as np
import pytest

from alphaloop.journal import Journal
from alphaloop.knobs import TrialConfig
from alphaloop.market import load_market
from alphaloop.metrics import compute_metrics
from alphaloop.ops.replay import ReplayRequest, replay
from alphaloop.pm.policy import evaluator_equity, load_data, window_rows
from alphaloop.settings import Settings
from alphaloop.trials import EVALUATOR_VERSION, TrialBudget, span_reruns
from tests.pm.helpers import add_policy
from tests.trials.recipe import by_hand

START, END = "2013-07-01", "2013-08-30"  # inside the synthetic validation window


@pytest.mark.parametrize("kind", ["mean_cvar", "ppo"])
def test_the_reference_book_and_a_replay_are_the_recipe(settings: Settings, kind: str) -> None:
    settings.home.mkdir(parents=True)
    with Journal(settings.journal_path) as journal:
        record = add_policy(journal, settings, kind)
    _, market = load_data(record, None)
    rows = window_rows(market, START, END)
    book, base = by_hand(
        record.mode,
        TrialConfig(**record.config),
        market,
        rows,
        record.trial_budget,
        record.seed,
        policy_path=record.path,
    )
    equity = evaluator_equity(record, market, rows, 100_000.0)
    np.testing.assert_array_equal(equity, 100_000.0 * np.cumprod(1.0 + book.net))

    run = replay(settings, ReplayRequest(policy_id=record.id, start=START, end=END))
    assert run.replay.returns == [float(x) for x in book.net]
    assert run.metrics == compute_metrics(book.net, book.turnover)
    assert run.baselines == base
    assert run.replay.evaluator_version == EVALUATOR_VERSION


def test_stress_reruns_are_the_recipe_at_every_cost() -> None:
    data = load_market("synthetic:3")
    config = TrialConfig(cufolio_hold_days=10, n_scenarios=1000)
    budget = TrialBudget(scenario_window=120)
    span = slice(data.val.start, len(data.returns))
    reruns = span_reruns("cufolio_only", config, data, span, budget, 4)
    for bps in (10.0, 15.0):
        book, _ = by_hand(
            "cufolio_only", config, data, span, budget, 4, train=slice(0, span.start), cost_bps=bps
        )
        np.testing.assert_array_equal(reruns["strategy"](bps).net, book.net)
        np.testing.assert_array_equal(reruns["strategy"](bps).turnover, book.turnover)
