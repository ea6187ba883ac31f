"""How many tests the session's pick is one of, on hand-built daily series with a known answer."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from alphaloop.meta_agent.finalize import configs_tried
from alphaloop.metrics import effective_trials


def _search(series: np.ndarray) -> list[SimpleNamespace]:
    return [
        SimpleNamespace(kind="search", status="keep", val_returns=list(column))
        for column in series.T
    ]


def test_configs_that_each_differ_from_the_default_in_their_own_way_count_as_many() -> None:
    rng = np.random.default_rng(7)
    market = 0.01 * rng.standard_normal(2_000)
    # Six configs: the default's moves (every long-only book shares the market) plus
    # differences of their own, independent of each other.
    configs = market[:, None] + 0.002 * rng.standard_normal((2_000, 6))
    assert effective_trials(configs) < 3  # over returns they look like one or two configs
    assert configs_tried(_search(configs), market) == pytest.approx(6.0, abs=0.5)


def test_configs_that_differ_from_the_default_alike_count_as_one() -> None:
    rng = np.random.default_rng(8)
    market = 0.01 * rng.standard_normal(1_000)
    shared = 0.002 * rng.standard_normal(1_000)
    configs = market[:, None] + shared[:, None] * np.array([1.0, 2.0, 0.5])
    assert configs_tried(_search(configs), market) == pytest.approx(1.0)
    assert configs_tried([], market) == 1.0  # nothing tried: the test is one test


def test_only_the_days_all_share_count_and_other_kinds_of_row_are_not_candidates() -> None:
    rng = np.random.default_rng(9)
    market = 0.01 * rng.standard_normal(900)
    configs = market[:, None] + 0.002 * rng.standard_normal((900, 4))
    rows = _search(configs)
    rows[0].val_returns = rows[0].val_returns[-300:]  # raced out: its last fold only
    rows.append(SimpleNamespace(kind="baseline", status="keep", val_returns=list(market)))
    expected = effective_trials(configs[-300:] - market[-300:, None])
    assert configs_tried(rows, market) == pytest.approx(expected, rel=1e-12)
