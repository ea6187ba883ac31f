"""The walk's verdict: every rule's periods end to end, tested against the default and 1/N on
all out-of-sample days, with the edge the record could detect."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from alphaloop.journal import EpochResult, Traded
from alphaloop.metrics import sharpe
from alphaloop.validation import Gates, excess_evidence, sharpe_difference
from alphaloop.walk import walk_report

DAYS = 252


def epochs(pick_edge: float, n: int = 6, seed: int = 0, default_everywhere: bool = False):
    """``n`` yearly epochs of correlated daily returns: the pick earns ``pick_edge`` more
    annualised Sharpe than the default; 1/N rides the same market."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        market = rng.normal(0.0004, 0.01, DAYS)
        default = market + rng.normal(0, 0.004, DAYS)
        equal = market + rng.normal(0, 0.004, DAYS)
        pick = default + rng.normal(pick_edge * 0.0108 / np.sqrt(DAYS), 0.003, DAYS)
        traded = Traded(trial_id=None, config_hash="d", returns=tuple(default))
        # The pick's config changes once, half way.
        config = "c" if i < n // 2 else "e"
        chosen = (
            traded
            if default_everywhere
            else Traded(trial_id=100 + i, config_hash=config, returns=tuple(pick))
        )
        out.append(
            EpochResult(
                epoch=i,
                session_id=f"s-{i}",
                start=f"{2000 + i}-01-03",
                end=f"{2000 + i}-12-29",
                dates=tuple(f"d{k}" for k in range(DAYS)),
                default=tuple(default),
                equal_weight=tuple(equal),
                picks={
                    "strict": chosen,
                    "kept": chosen,
                    "best": Traded(trial_id=100 + i, config_hash="c", returns=tuple(pick)),
                },
            )
        )
    return out


def test_the_record_is_the_periods_end_to_end_under_the_paired_tests() -> None:
    results = epochs(1.5, seed=1)
    report = walk_report(list(reversed(results)), "strict", "yearly", Gates())
    pick = np.concatenate([r.picks["strict"].returns for r in results])
    default = np.concatenate([r.default for r in results])
    equal = np.concatenate([r.equal_weight for r in results])
    own = report.record()
    assert report.n_days == pick.size == 6 * DAYS
    assert own.metrics["sharpe"] == pytest.approx(sharpe(pick))
    for ref, other in (("default", default), ("equal_weight", equal)):
        oracle = sharpe_difference(pick, other)
        assert own.excess[ref].test.p_value == pytest.approx(oracle.p_value)
        # One test for both: the record's is the one a lone session's TEST runs.
        assert own.excess[ref].test == excess_evidence(ref, pick, other).test
        assert own.excess[ref].test.method == "bootstrap"
        # The minimum detectable edge at 80% power: se * (z(0.95) + z(0.80)).
        assert own.detectable[ref] == pytest.approx(oracle.se * (norm.isf(0.05) + norm.ppf(0.8)))
    assert [line.epoch for line in report.epochs] == list(range(6))
    # From the default to the first config, then to the second.
    assert own.n_default == 0 and own.n_changes == 2
    assert [line.changed for line in report.epochs] == [True, False, False, True, False, False]


def test_go_needs_both_references_and_the_success_criteria() -> None:
    strong = walk_report(epochs(3.0, seed=2), "strict", "yearly", Gates(min_sharpe=None))
    beats_default = strong.record().excess["default"].test.p_value < 0.05
    beats_equal = strong.record().excess["equal_weight"].test.p_value < 0.05
    assert strong.go == (beats_default and beats_equal and strong.record().gates.passed)
    assert strong.verdict.startswith("GO" if strong.go else "NO-GO")
    assert "out of sample" in strong.verdict or not strong.go


def test_a_record_of_the_default_tests_nothing_against_it_and_reads_its_edge_elsewhere() -> None:
    report = walk_report(epochs(1.0, default_everywhere=True), "strict", "yearly", Gates())
    own = report.record()
    assert not report.go and own.n_default == 6 and own.n_changes == 0
    assert own.excess["default"].note.startswith("every epoch traded the default")
    assert own.detectable["default"] is None
    best = report.record("best")
    assert best.detectable["default"] is not None
    assert f"{best.detectable['default']:+.2f} over the default (read off the best rule)" in (
        report.verdict
    )
    assert report.verdict.startswith("NO-GO")
