"""Walk-forward windows: train and evaluation ranges never overlap, each window is the frozen
evaluator's run on a re-split of the data, and the evaluation cost is always charged."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from alphaloop.knobs import TrialConfig
from alphaloop.market import load_market
from alphaloop.metrics import compute_metrics
from alphaloop.trials import (
    TrialBudget,
    simulate,
    strategy_targets,
    walk_forward,
    walk_forward_splits,
)


@pytest.fixture(scope="module")
def data():
    return load_market("synthetic:3")


@pytest.mark.parametrize("scheme", ["anchored", "rolling"])
def test_windows_tile_the_span_and_never_overlap_their_training(data, scheme) -> None:
    splits = walk_forward_splits(data, 4, scheme)
    evals = [e for _, e in splits]
    # Only days no search scored: from the start of TEST to the end of the data.
    assert evals[0].start == data.test.start and evals[-1].stop == len(data.returns)
    assert all(a.stop == b.start for a, b in itertools.pairwise(evals))
    for train, ev in splits:
        assert train.stop == ev.start and train.start < train.stop  # train ends before eval
        assert ev.stop - ev.start >= 21
    starts = [t.start for t, _ in splits]
    if scheme == "anchored":
        assert starts == [0] * 4
    else:
        lengths = {t.stop - t.start for t, _ in splits}
        assert len(lengths) == 1 and starts == sorted(starts) and starts[-1] > 0


def test_too_many_windows_are_refused(data) -> None:
    with pytest.raises(ValueError, match=r"unseen days leave .* each needs >= 21"):
        walk_forward_splits(data, 1000)


def test_windows_start_where_they_are_told_and_never_on_a_scored_day(data) -> None:
    later = data.test.start + 100
    splits = walk_forward_splits(data, 2, "anchored", start=later)
    assert splits[0][1].start == later and splits[-1][1].stop == len(data.returns)
    for scheme in ("anchored", "rolling"):
        for _, ev in walk_forward_splits(data, 4, scheme):
            assert ev.start >= data.test.start  # VALIDATION, which selected, is never scored


def test_each_window_is_the_evaluator_on_its_window_at_the_eval_cost(data) -> None:
    # A config that trains with no cost: evaluation still charges eval_cost_bps.
    config = TrialConfig(turnover_cost_bps=0.0, cufolio_hold_days=10, n_scenarios=1000)
    budget = TrialBudget(eval_cost_bps=25.0, scenario_window=120)
    wf = walk_forward("cufolio_only", config, data, budget, seed=7, n_windows=3)
    assert [w.scheme for w in wf.windows] == ["anchored"] * 3 + ["rolling"] * 3
    splits = walk_forward_splits(data, 3, "anchored")
    for w, (train, ev) in zip(wf.windows[:3], splits, strict=True):
        assert (w.train_end < w.eval_start) and w.eval_days == ev.stop - ev.start
        # Oracle: the evaluator's own functions on the same window, charged by hand.
        sub = dataclasses.replace(data, train=train, val=ev)
        targets, rebalance, _ = strategy_targets(
            "cufolio_only", config, sub, "validation", budget, 7
        )
        book = simulate(data.returns[ev], targets, rebalance, 25.0)
        np.testing.assert_allclose(w.net, book.net, rtol=0, atol=1e-12)
        free = simulate(data.returns[ev], targets, rebalance, 0.0)
        assert book.turnover.sum() > 0 and np.all(book.net <= free.net + 1e-15)
        assert w.metrics.sharpe == pytest.approx(compute_metrics(book.net, book.turnover).sharpe)
    anchored, rolling = wf.summaries
    assert anchored.n_windows == 3 and anchored.mean_sharpe == pytest.approx(
        np.mean([w.metrics.sharpe for w in wf.windows[:3]])
    )
    # cufolio_only decides from its trailing scenarios alone: the schemes agree.
    assert [w.net for w in wf.windows[3:]] == [w.net for w in wf.windows[:3]]
    assert rolling.pooled_sharpe == anchored.pooled_sharpe
