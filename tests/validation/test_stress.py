"""Stress tests against the frozen evaluator's own backtest as the oracle."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from alphaloop.metrics import compute_metrics
from alphaloop.trials import simulate
from alphaloop.validation import (
    CRISIS_WINDOWS,
    CrisisWindow,
    crisis_windows_in,
    recosted,
    stress_test,
)

DATES = pd.bdate_range("2007-01-02", "2023-06-30")


@pytest.fixture(scope="module")
def book() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    n_days, n = len(DATES), 4
    returns = rng.normal(0.0003, 0.012, (n_days, n))
    targets = rng.dirichlet(np.ones(n), n_days)
    rebalance = np.zeros(n_days, dtype=bool)
    rebalance[::5] = True
    monthly = np.zeros(n_days, dtype=bool)
    monthly[::21] = True
    return {"returns": returns, "targets": targets, "rebalance": rebalance, "monthly": monthly}


def _reruns(book: dict[str, np.ndarray]) -> dict:
    r, n = book["returns"], book["returns"].shape[1]
    return {
        "best": lambda bps: simulate(r, book["targets"], book["rebalance"], bps),
        "equal_weight": lambda bps: simulate(r, np.full_like(r, 1.0 / n), book["monthly"], bps),
    }


def test_recosted_reproduces_the_evaluator_at_another_cost(book: dict[str, np.ndarray]) -> None:
    at_10 = simulate(book["returns"], book["targets"], book["rebalance"], 10.0)
    at_15 = simulate(book["returns"], book["targets"], book["rebalance"], 15.0)
    rerun = recosted(at_10.net, at_10.turnover, 10.0)
    np.testing.assert_allclose(rerun(15.0).net, at_15.net, rtol=0, atol=1e-14)
    np.testing.assert_allclose(rerun(10.0).net, at_10.net, rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="equal-length"):
        recosted(at_10.net, at_10.turnover[:-1], 10.0)


def test_crisis_windows_found_in_the_dates() -> None:
    found = crisis_windows_in(DATES)
    assert [w.name for w, _ in found] == ["gfc_2008_09", "covid_2020_q1", "rates_2022"]
    gfc = found[0][1]
    assert DATES[gfc.start] == pd.Timestamp("2008-09-01")
    assert DATES[gfc.stop - 1] == pd.Timestamp("2009-03-31")
    covid = found[1][1]
    assert covid.stop - covid.start == len(pd.bdate_range("2020-01-01", "2020-03-31"))
    # ISO strings work as well as timestamps, and a window the data barely touches is skipped.
    late = [d.date().isoformat() for d in pd.bdate_range("2020-03-20", "2021-12-31")]
    assert crisis_windows_in(late) == []
    assert [w.name for w, _ in crisis_windows_in(late, min_days=5)] == ["covid_2020_q1"]
    with pytest.raises(ValueError, match="strictly increasing"):
        crisis_windows_in(["2020-01-02", "2020-01-02"])


def test_stress_test_against_the_evaluator(book: dict[str, np.ndarray]) -> None:
    runs = _reruns(book)
    report = stress_test(runs, DATES, 10.0)
    assert report.reference == "equal_weight" and report.cost_multiplier == 1.5
    assert [c.scenario for c in report.cases] == [
        "base",
        "cost_x1.5",
        "gfc_2008_09",
        "covid_2020_q1",
        "rates_2022",
    ]
    assert report.windows_not_in_data == ()
    for case in report.cases:
        assert set(case.metrics) == {"best", "equal_weight"}
    stressed = report.case("cost_x1.5")
    assert stressed.cost_bps == 15.0
    for name, rerun in runs.items():
        oracle = rerun(15.0)
        assert stressed.metrics[name] == compute_metrics(oracle.net, oracle.turnover)
    # More cost, less return, for a book that trades.
    assert stressed.metrics["best"].total_return < report.case("base").metrics["best"].total_return
    covid = report.case("covid_2020_q1")
    assert (covid.start, covid.end) == ("2020-01-01", "2020-03-31")
    span = (DATES >= "2020-01-01") & (DATES <= "2020-03-31")
    base = runs["best"](10.0)
    assert covid.metrics["best"] == compute_metrics(base.net[span], base.turnover[span])


def test_stress_test_reports_only_windows_in_the_data(book: dict[str, np.ndarray]) -> None:
    window = slice(len(DATES) - 900, len(DATES))  # 2020 onwards: no 2008-09
    cut = {k: v[window] for k, v in book.items()}
    report = stress_test(_reruns(cut), DATES[window], 10.0, cost_multiplier=2.0)
    assert [c.scenario for c in report.cases][:2] == ["base", "cost_x2"]
    assert report.windows_not_in_data == ("gfc_2008_09",)
    custom = CrisisWindow(name="flash", start="2021-01-04", end="2021-02-26")
    only = stress_test(_reruns(cut), DATES[window], 10.0, windows=[custom])
    assert [c.scenario for c in only.cases] == ["base", "cost_x1.5", "flash"]
    assert CRISIS_WINDOWS[0].name == "gfc_2008_09"


def test_stress_test_rejects_bad_input(book: dict[str, np.ndarray]) -> None:
    runs = _reruns(book)
    with pytest.raises(ValueError, match="reference 'equal_weight'"):
        stress_test({"best": runs["best"]}, DATES, 10.0)
    with pytest.raises(ValueError, match="for 100 dates"):
        stress_test(runs, DATES[:100], 10.0)
    with pytest.raises(ValueError, match="cost_multiplier > 0"):
        stress_test(runs, DATES, 10.0, cost_multiplier=0.0)
    with pytest.raises(KeyError, match="no scenario 'x'"):
        stress_test(runs, DATES, 10.0).case("x")
