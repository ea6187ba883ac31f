"""Go/no-go gates: the defaults, strict thresholds, missing evidence, turned-off gates, the
verdict line naming the tests that decided it, and thresholds from the settings' text."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from alphaloop.evidence import GateReport, PBOSummary
from alphaloop.metrics import Metrics, compute_metrics
from alphaloop.validation import (
    GATE_NAMES,
    ExcessEvidence,
    Gates,
    evaluate_gates,
    excess_evidence,
    gate_thresholds,
    resolved_gates,
)
from alphaloop.validation.report import Selection, gate_report


def _metrics(**values: float) -> Metrics:
    base = compute_metrics(np.array([0.01, -0.005, 0.004, 0.002]), np.zeros(4))
    return base.model_copy(update=values)


PASSING = {"sharpe": 1.2, "max_drawdown": 0.12, "hit_rate": 0.53, "profit_factor": 1.4}


def _excess(edge: float, seed: int = 0) -> dict[str, ExcessEvidence]:
    """Evidence of a pick earning ``edge`` a day over both references, on 500 TEST days."""
    rng = np.random.default_rng(seed)
    market = rng.normal(0.0004, 0.01, 500)
    pick = market + rng.normal(edge, 0.002, 500)
    return {ref: excess_evidence(ref, pick, market) for ref in ("default", "equal_weight")}


BEATS = _excess(0.0006)
NAMES = [
    "beats_default",
    "beats_equal_weight",
    "sharpe",
    "max_drawdown",
    "hit_rate",
    "profit_factor",
    "deflated_sharpe",
]
WITH_PBO = Gates(max_pbo=0.5)  # PBO as a gate, for those who set it


def test_defaults_are_the_common_practice_thresholds() -> None:
    g = Gates()
    assert (g.min_sharpe, g.max_drawdown, g.min_hit_rate) == (0.8, 0.30, 0.48)
    assert (g.min_profit_factor, g.min_deflated_sharpe, g.max_pbo) == (1.1, 0.95, None)
    assert g.max_excess_p_value == 0.05
    assert (
        GATE_NAMES == tuple(Gates.model_fields) and "min_excess_deflated_sharpe" not in GATE_NAMES
    )
    with pytest.raises(ValueError):
        g.max_pbo = 0.9  # frozen


def test_a_strategy_clearing_every_gate_is_a_go() -> None:
    report = evaluate_gates(_metrics(**PASSING), dsr=0.97, pbo=0.2, excess=BEATS)
    assert report.passed and report.failed == ()
    assert [r.gate for r in report.results] == NAMES
    p = [f"{r.value:.3g}" for r in report.results[:2]]
    assert report.summary() == (
        f"GO: beats the default (p {p[0]}) and 1/N (p {p[1]}) on TEST; 7 of 7 gates passed"
    )
    assert report.results[3].reason == "max drawdown 12.0% passes < 30.0%"


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
    bar = {">": "> ", "<": "< "}[report.failed[0].comparison]
    shown = f"{value:.3g}, needs {bar}{report.failed[0].threshold:g}"
    assert report.summary() == f"NO-GO: {gate} failed ({shown}); 6 of 7 gates passed ({reason})"


def test_pbo_is_no_gate_unless_set_and_the_verdict_reports_it_with_its_interval() -> None:
    # A PBO of 0.73 (a planted session's +0.59 pick had it) decides nothing by default.
    report = evaluate_gates(_metrics(**PASSING), dsr=0.97, pbo=0.73, excess=BEATS)
    assert report.passed and "pbo" not in [r.gate for r in report.results]
    vetoed = evaluate_gates(_metrics(**PASSING), dsr=0.97, pbo=0.73, gates=WITH_PBO, excess=BEATS)
    assert [r.gate for r in vetoed.failed] == ["pbo"]
    summary = PBOSummary(
        pbo=0.727, n_blocks=16, n_trials=18, n_days=6804, n_combinations=12870,
        prob_oos_loss=0.2, degradation_slope=None, logit_quantiles={}, histogram_edges=(0.0, 1.0),
        histogram_counts=(1,), interval=(0.41, 0.93),
    )  # fmt: skip
    chosen = Selection(n_search_trials=18, pbo=summary)
    noted = gate_report(_metrics(**PASSING), chosen, Gates(), BEATS)
    pbo = (
        "PBO 0.73 (95% interval 0.41-0.93, 18 search trials): a diagnostic of the search, "
        "not a gate"
    )
    # (the deflated Sharpe is missing here: no GO, but no PBO veto)
    assert noted.notes == (FIRST_LOOK, _detectable(BEATS), pbo)
    assert noted.summary().endswith("); " + "; ".join(noted.notes))
    assert [r.gate for r in noted.failed] == ["deflated_sharpe"]
    assert gate_report(_metrics(**PASSING), chosen, WITH_PBO, BEATS).notes == (
        FIRST_LOOK,
        _detectable(BEATS),
    )


FIRST_LOOK = "the first look at these TEST days of this data"


def _detectable(excess: dict[str, ExcessEvidence]) -> str:
    """The verdict's detectable edges, by hand: each test's standard error times z(0.95) +
    z(0.80)."""
    edge = {r: e.test.se * (norm.isf(0.05) + norm.ppf(0.80)) for r, e in excess.items()}
    return (
        f"over {excess['default'].test.n_obs:,} TEST days the tests detect a Sharpe edge of "
        f"{edge['default']:+.2f} over the default config and {edge['equal_weight']:+.2f} over "
        "1/N with 80% power"
    )


def test_the_verdict_says_the_edge_its_tests_could_detect_and_none_without_a_test() -> None:
    chosen = Selection(n_search_trials=18)
    report = gate_report(_metrics(**PASSING), chosen, Gates(max_pbo=0.5), BEATS)
    assert _detectable(BEATS) in report.notes
    # Against 1/N only (the pick is the default): one edge; no test at all: no edge.
    only = {"default": "the pick is the default config", "equal_weight": BEATS["equal_weight"]}
    said = gate_report(_metrics(**PASSING), chosen, Gates(max_pbo=0.5), only).notes
    edge = BEATS["equal_weight"].test.se * (norm.isf(0.05) + norm.ppf(0.80))
    assert f"detect a Sharpe edge of {edge:+.2f} over 1/N with 80% power" in said[1]
    none = {"default": "no TEST returns", "equal_weight": "no TEST returns"}
    assert gate_report(_metrics(**PASSING), chosen, Gates(max_pbo=0.5), none).notes == (FIRST_LOOK,)


def test_thresholds_are_strict() -> None:
    at = {"sharpe": 0.8, "max_drawdown": 0.30, "hit_rate": 0.48, "profit_factor": 1.1}
    report = evaluate_gates(_metrics(**at), dsr=0.95, pbo=0.5, gates=WITH_PBO, excess=BEATS)
    assert not report.passed and len(report.failed) == 6


def test_missing_or_nan_evidence_fails_its_gate() -> None:
    report = evaluate_gates(
        _metrics(**PASSING), dsr=None, pbo=float("nan"), gates=WITH_PBO, excess=BEATS
    )
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
    )
    report = evaluate_gates(_metrics(**PASSING), dsr=None, pbo=None, gates=gates)
    assert report.passed and len(report.results) == 4
    assert report.results[0].threshold == 1.0
    assert report.headline() == (
        "GO: 4 of 4 gates passed (the TEST tests against the default and 1/N are off)"
    )


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


def test_a_pick_with_no_edge_is_no_go_and_the_verdict_names_the_tests_that_decided() -> None:
    # A pick with no edge over either reference: the absolute gates pass, the TEST tests fail,
    # and the verdict names them first, with their p-values.
    report = evaluate_gates(_metrics(**PASSING), dsr=0.97, pbo=0.2, excess=_excess(0.0, seed=1))
    assert not report.passed
    assert [r.gate for r in report.failed] == ["beats_default", "beats_equal_weight"]
    p = [f"{r.value:.3g}" for r in report.failed]
    assert report.headline() == (
        f"NO-GO: beats_default failed (p-value {p[0]}, needs < 0.05), beats_equal_weight "
        f"failed (p-value {p[1]}, needs < 0.05); 5 of 7 gates passed"
    )
    first = report.summary().removeprefix(report.headline() + " (")
    assert first.startswith("TEST Sharpe ") and "vs the default config's" in first.split(";")[0]
    # The verdict read from the report as journaled is the same.
    journaled = GateReport.model_validate(report.model_dump(mode="json"))
    assert journaled.headline() == report.headline()
    # The TEST tests come first whatever order the results are in.
    both = [r for r in report.results if r.gate in ("sharpe", "beats_equal_weight")]
    flipped = (both[0].model_copy(update={"passed": False}), both[1])
    assert (
        GateReport(passed=False, results=flipped)
        .headline()
        .startswith("NO-GO: beats_equal_weight failed (p-value")
    )


def test_the_test_tests_without_evidence_fail_and_say_why() -> None:
    excess = {"default": "the pick is the default config: nothing beat it"}
    report = evaluate_gates(_metrics(**PASSING), dsr=0.97, pbo=0.2, excess=excess)
    failed = {r.gate: r.reason for r in report.failed}
    assert set(failed) == {"beats_default", "beats_equal_weight"}
    assert failed["beats_default"] == (
        "p-value over the default config not computed (the pick is the default config: "
        "nothing beat it); needs < 0.050"
    )
    assert "no evidence given" in failed["beats_equal_weight"]
    assert report.headline().startswith("NO-GO: beats_default failed (not computed)")


def test_thresholds_read_from_text_with_the_names_of_the_gates() -> None:
    assert gate_thresholds(["min_sharpe=1.0", " max_pbo = off "]) == {
        "min_sharpe": 1.0,
        "max_pbo": None,
    }
    with pytest.raises(ValueError, match=r"unknown gate 'min_sortino'; the gates are min_sharpe"):
        gate_thresholds(["min_sortino=1"])
    with pytest.raises(ValueError, match="takes a number or 'off'"):
        gate_thresholds(["min_sharpe=high"])
    with pytest.raises(ValueError, match="is not NAME=VALUE"):
        gate_thresholds(["min_sharpe"])


def test_a_sessions_gates_are_the_defaults_under_the_settings_under_its_own() -> None:
    assert resolved_gates("", None, None) == Gates()
    assert resolved_gates("min_sharpe=1.0,max_pbo=off", None, None) == Gates(
        min_sharpe=1.0, max_pbo=None
    )
    asked = Gates(min_sharpe=0.5)
    assert resolved_gates("min_sharpe=1.0,max_pbo=off", asked, 0.2) == Gates(
        min_sharpe=0.5, max_pbo=None, max_drawdown=0.2
    )
    # A drawdown gate the settings or the request set stands over the session's limit.
    assert resolved_gates("max_drawdown=0.4", None, 0.2).max_drawdown == 0.4
    with pytest.raises(ValueError, match="unknown gate 'nope'"):
        resolved_gates("nope=1", None, None)
