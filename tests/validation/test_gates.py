"""Go/no-go gates: the defaults, strict thresholds, missing evidence and turned-off gates."""

from __future__ import annotations

import math

import numpy as np
import pytest

from alphaloop.evidence import GateReport
from alphaloop.metrics import Metrics, compute_metrics
from alphaloop.validation import ExcessEvidence, Gates, evaluate_gates, excess_evidence


def _metrics(**values: float) -> Metrics:
    base = compute_metrics(np.array([0.01, -0.005, 0.004, 0.002]), np.zeros(4))
    return base.model_copy(update=values)


PASSING = {"sharpe": 1.2, "max_drawdown": 0.12, "hit_rate": 0.53, "profit_factor": 1.4}


def _excess(edge: float, seed: int = 0) -> dict[str, ExcessEvidence]:
    """Evidence of a pick earning ``edge`` a day over both references, on 500 TEST days, with
    20 search trials of no edge to deflate by."""
    rng = np.random.default_rng(seed)
    market = rng.normal(0.0004, 0.01, 500)
    pick = market + rng.normal(edge, 0.002, 500)
    search = [rng.normal(0.0, 0.002, 500) for _ in range(20)]
    return {ref: excess_evidence(ref, pick, market, search) for ref in ("default", "equal_weight")}


BEATS = _excess(0.0006)
NAMES = [
    "sharpe",
    "max_drawdown",
    "hit_rate",
    "profit_factor",
    "deflated_sharpe",
    "pbo",
    "beats_default",
    "excess_dsr_default",
    "beats_equal_weight",
    "excess_dsr_equal_weight",
]


def test_defaults_are_the_common_practice_thresholds() -> None:
    g = Gates()
    assert (g.min_sharpe, g.max_drawdown, g.min_hit_rate) == (0.8, 0.30, 0.48)
    assert (g.min_profit_factor, g.min_deflated_sharpe, g.max_pbo) == (1.1, 0.95, 0.5)
    assert (g.max_excess_p_value, g.min_excess_deflated_sharpe) == (0.05, 0.95)
    with pytest.raises(ValueError):
        g.max_pbo = 0.9  # frozen


def test_a_strategy_clearing_every_gate_is_a_go() -> None:
    report = evaluate_gates(_metrics(**PASSING), dsr=0.97, pbo=0.2, excess=BEATS)
    assert report.passed and report.failed == ()
    assert [r.gate for r in report.results] == NAMES
    assert report.summary() == "GO: 10 of 10 gates passed"
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
    report = evaluate_gates(_metrics(**{**PASSING, field: value}), dsr=0.97, pbo=0.2, excess=BEATS)
    assert not report.passed
    assert [r.gate for r in report.failed] == [gate]
    assert report.failed[0].reason == reason
    assert report.summary() == f"NO-GO: 9 of 10 gates passed ({reason})"


def test_thresholds_are_strict() -> None:
    at = {"sharpe": 0.8, "max_drawdown": 0.30, "hit_rate": 0.48, "profit_factor": 1.1}
    report = evaluate_gates(_metrics(**at), dsr=0.95, pbo=0.5, excess=BEATS)
    assert not report.passed and len(report.failed) == 6


def test_missing_or_nan_evidence_fails_its_gate() -> None:
    report = evaluate_gates(_metrics(**PASSING), dsr=None, pbo=float("nan"), excess=BEATS)
    failed = {r.gate: r.reason for r in report.failed}
    assert failed == {
        "deflated_sharpe": "deflated Sharpe not computed; needs > 0.950",
        "pbo": "probability of backtest overfitting not a finite number (nan); needs < 0.500",
    }
    assert all(r.value is None for r in report.failed)


def test_a_gate_set_to_none_is_not_checked() -> None:
    gates = Gates(
        max_pbo=None,
        min_deflated_sharpe=None,
        min_sharpe=1.0,
        max_excess_p_value=None,
        min_excess_deflated_sharpe=None,
    )
    report = evaluate_gates(_metrics(**PASSING), dsr=None, pbo=None, gates=gates)
    assert report.passed and len(report.results) == 4
    assert report.results[0].threshold == 1.0


def test_a_sessions_drawdown_limit_is_the_drawdown_gate_unless_one_was_asked_for() -> None:
    assert Gates().within(0.15).max_drawdown == 0.15
    assert Gates().within(None) == Gates()
    asked = Gates(max_drawdown=0.4, min_sharpe=1.0)
    assert asked.within(0.15) == asked  # set on the command line: it stands
    assert Gates(max_drawdown=None).within(0.15).max_drawdown is None  # turned off: it stays off
    assert Gates(min_sharpe=1.0).within(0.15) == Gates(min_sharpe=1.0, max_drawdown=0.15)


def test_gates_reject_nonsense_thresholds() -> None:
    with pytest.raises(ValueError):
        Gates(max_pbo=1.5)
    with pytest.raises(ValueError):
        Gates(min_sharpe=math.inf)
    with pytest.raises(ValueError):
        Gates(unknown=1.0)  # type: ignore[call-arg]


def test_a_pick_that_does_not_beat_one_over_n_is_no_go_said_first() -> None:
    # A pick with no edge over either reference: the absolute gates pass, the excess ones fail.
    report = evaluate_gates(_metrics(**PASSING), dsr=0.97, pbo=0.2, excess=_excess(0.0, seed=1))
    assert not report.passed
    assert {r.gate for r in report.failed} >= {"beats_equal_weight", "beats_default"}
    assert report.summary().startswith("NO-GO: does not beat 1/N with confidence; ")
    first = report.summary().split("(", 1)[1]
    assert first.startswith("TEST Sharpe ") and "vs 1/N's" in first.split(";")[0]
    ok = len(report.results) - len(report.failed)
    assert report.headline() == (
        f"NO-GO: does not beat 1/N with confidence; {ok} of {len(report.results)} gates passed"
    )
    assert report.summary().startswith(report.headline() + " (")
    # The headline read from the report as journaled is the same.
    journaled = GateReport.model_validate(report.model_dump(mode="json"))
    assert journaled.headline() == report.headline()
    both = [r for r in report.results if r.gate in ("sharpe", "beats_equal_weight")]
    flipped = (
        both[0].model_copy(update={"passed": False}),
        both[1].model_copy(update={"passed": True}),
    )
    assert GateReport(passed=False, results=flipped).headline() == "NO-GO: 1 of 2 gates passed"


def test_excess_gates_without_evidence_fail_and_say_why() -> None:
    excess = {"default": "the pick is the default config: nothing beat it"}
    report = evaluate_gates(_metrics(**PASSING), dsr=0.97, pbo=0.2, excess=excess)
    failed = {r.gate: r.reason for r in report.failed}
    assert set(failed) == {
        "beats_default",
        "excess_dsr_default",
        "beats_equal_weight",
        "excess_dsr_equal_weight",
    }
    assert failed["beats_default"] == (
        "p-value over the default config not computed (the pick is the default config: "
        "nothing beat it); needs < 0.050"
    )
    assert "no evidence given" in failed["beats_equal_weight"]
