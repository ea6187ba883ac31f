"""Go/no-go gates: the defaults, strict thresholds, missing evidence and turned-off gates."""

from __future__ import annotations

import math

import numpy as np
import pytest

from alphaloop.metrics import Metrics, compute_metrics
from alphaloop.validation import Gates, evaluate_gates


def _metrics(**values: float) -> Metrics:
    base = compute_metrics(np.array([0.01, -0.005, 0.004, 0.002]), np.zeros(4))
    return base.model_copy(update=values)


PASSING = {"sharpe": 1.2, "max_drawdown": 0.12, "hit_rate": 0.53, "profit_factor": 1.4}


def test_defaults_are_the_common_practice_thresholds() -> None:
    g = Gates()
    assert (g.min_sharpe, g.max_drawdown, g.min_hit_rate) == (0.8, 0.30, 0.48)
    assert (g.min_profit_factor, g.min_deflated_sharpe, g.max_pbo) == (1.1, 0.95, 0.5)
    with pytest.raises(ValueError):
        g.max_pbo = 0.9  # frozen


def test_a_strategy_clearing_every_gate_is_a_go() -> None:
    report = evaluate_gates(_metrics(**PASSING), dsr=0.97, pbo=0.2)
    assert report.passed and report.failed == ()
    assert [r.gate for r in report.results] == [
        "sharpe",
        "max_drawdown",
        "hit_rate",
        "profit_factor",
        "deflated_sharpe",
        "pbo",
    ]
    assert report.summary() == "GO: 6 of 6 gates passed"
    assert report.results[1].reason == "max drawdown 12.0% passes < 30.0%"


@pytest.mark.parametrize(
    ("field", "value", "gate", "reason"),
    [
        ("sharpe", 0.5, "sharpe", "out-of-sample Sharpe 0.500 fails > 0.800"),
        ("max_drawdown", 0.35, "max_drawdown", "max drawdown 35.0% fails < 30.0%"),
        ("hit_rate", 0.45, "hit_rate", "hit rate 45.0% fails > 48.0%"),
        ("profit_factor", 1.05, "profit_factor", "profit factor 1.050 fails > 1.100"),
    ],
)
def test_each_metric_gate_fails_on_its_own(
    field: str, value: float, gate: str, reason: str
) -> None:
    report = evaluate_gates(_metrics(**{**PASSING, field: value}), dsr=0.97, pbo=0.2)
    assert not report.passed
    assert [r.gate for r in report.failed] == [gate]
    assert report.failed[0].reason == reason
    assert report.summary() == f"NO-GO: 5 of 6 gates passed ({reason})"


def test_thresholds_are_strict() -> None:
    at = {"sharpe": 0.8, "max_drawdown": 0.30, "hit_rate": 0.48, "profit_factor": 1.1}
    report = evaluate_gates(_metrics(**at), dsr=0.95, pbo=0.5)
    assert not report.passed and len(report.failed) == 6


def test_missing_or_nan_evidence_fails_its_gate() -> None:
    report = evaluate_gates(_metrics(**PASSING), dsr=None, pbo=float("nan"))
    failed = {r.gate: r.reason for r in report.failed}
    assert failed == {
        "deflated_sharpe": "deflated Sharpe not computed; needs > 0.950",
        "pbo": "probability of backtest overfitting not a finite number (nan); needs < 0.500",
    }
    assert all(r.value is None for r in report.failed)


def test_a_gate_set_to_none_is_not_checked() -> None:
    gates = Gates(max_pbo=None, min_deflated_sharpe=None, min_sharpe=1.0)
    report = evaluate_gates(_metrics(**PASSING), dsr=None, pbo=None, gates=gates)
    assert report.passed and len(report.results) == 4
    assert report.results[0].threshold == 1.0


def test_gates_reject_nonsense_thresholds() -> None:
    with pytest.raises(ValueError):
        Gates(max_pbo=1.5)
    with pytest.raises(ValueError):
        Gates(min_sharpe=math.inf)
    with pytest.raises(ValueError):
        Gates(unknown=1.0)  # type: ignore[call-arg]
