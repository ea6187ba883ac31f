"""The embedded reader: its bullets and key figures against the journal and hand-made curves."""

from __future__ import annotations

import re
import time
from typing import Any

import numpy as np
import pytest

from alphaloop.charts import CHART_KINDS, build_chart, read_embedded, read_figure, training_curve
from alphaloop.charts._reading import drawdown
from alphaloop.charts.build import raced_out
from alphaloop.journal import TrialRecord
from alphaloop.metrics import max_drawdown
from alphaloop.ops.series import SessionSeries

from .conftest import Lab


def curve_trial(rewards: list[float], status: str = "keep") -> TrialRecord:
    return TrialRecord(
        id=1,
        session_id="s-x",
        idx=0,
        kind="search",
        status=status,
        counted=True,
        config={},
        delta={},
        started_at="2026-01-01T00:00:00.000+00:00",
        curve=[[256 * (i + 1), r] for i, r in enumerate(rewards)],
    )


@pytest.mark.parametrize("kind", list(CHART_KINDS))
def test_every_chart_reads_in_four_to_six_bullets(lab: Lab, kind: str) -> None:
    sid = {"training_curve": lab.manual.session.id, "ratio_curve": None}.get(kind, lab.research_id)
    with lab.journal() as j:
        chart = build_chart(kind, j, session_id=sid, series=SessionSeries())
    cpu = time.process_time()
    read = read_embedded(chart)
    cpu = time.process_time() - cpu
    assert 4 <= len(read.bullets) <= 6, read.bullets
    assert read.model == "embedded-reader" and read.embedded
    assert read.signature.startswith("\u2014 embedded reader (data-grounded), ")
    # Instant, no model: measured in CPU time, which a busy machine's other work does not
    # lengthen (its wall clock, which the reading reports, can be seconds there).
    assert cpu < 1.0 and read.elapsed_s > 0
    assert read.context["goal"] == chart.goal
    assert read.context["axes"]["x"] == chart.figure.layout.xaxis.title.text


def test_best_point_bullet_matches_the_journal(lab: Lab) -> None:
    with lab.journal() as j:
        best = j.trials.best(lab.research_id)
        search = [t for t in j.trials.of_session(lab.research_id, "search")]
        chart = build_chart("research_progress", j, session_id=lab.research_id)
        raced = raced_out(j, lab.research_id)
    facts, bullets = read_figure(chart.figure)
    assert facts["best"] == {"trial": best.idx, "objective": best.objective, "kept": True}
    [line] = [b for b in bullets if b.startswith("Best:")]
    nth = [t.idx for t in search].index(best.idx) + 1
    assert line == (
        f"Best: trial #{best.idx} with sharpe {best.objective:.3f}, reached at search trial "
        f"{nth} of {len(search)}."
    )
    counts = {s: sum(t.status == s for t in search) for s in ("keep", "discard", "invalid")}
    # a raced-out trial (journaled discard) is counted as raced out, as the page says it
    assert (facts["kept"], facts["discarded"], facts["raced_out"], facts["failed"]) == (
        counts["keep"],
        counts["discard"] - len(raced),
        len(raced),
        counts["invalid"],
    )
    # Invalid rows never ran: the first bullet does not count them in the budget.
    ran = sum(t.status != "invalid" for t in search)
    assert facts["counted_trials"] == ran and facts["invalid"] == counts["invalid"]
    assert bullets[0].startswith(f"{ran} search trial")
    if counts["invalid"]:
        assert "not counted, never ran" in bullets[0]
    # Two search trials ran after the kept one without beating it.
    assert any(b.startswith("Plateau: no new best in the last 3 search trials") for b in bullets)


def test_equity_read_states_the_evaluator_numbers(lab: Lab) -> None:
    with lab.journal() as j:
        best = j.trials.best(lab.research_id)
        chart = build_chart("equity_curves", j, session_id=lab.research_id, series=SessionSeries())
        # VALIDATION is the most recent of the folds the trial was scored on.
        validation = j.folds.of_trial(best.id)[-1].metrics
    facts, bullets = read_figure(chart.figure)
    val = facts["validation"]
    assert val["max_drawdown"] == pytest.approx(validation["max_drawdown"])
    assert val["final"] == pytest.approx(1 + validation["total_return"])
    assert val["baselines"]["min CVaR"] == pytest.approx(
        1 + best.baselines["min_cvar"]["total_return"]
    )
    assert "test" in facts
    assert f"({validation['total_return']:+.1%})" in bullets[0]
    assert bullets[1].startswith("Held-out test ")


def test_ratio_read_names_the_best_run(lab: Lab) -> None:
    with lab.journal() as j:
        chart = build_chart("ratio_curve", j)
        top = max(j.trials.completed(), key=lambda t: t.metrics["sharpe"])
    facts, bullets = read_figure(chart.figure)
    assert facts["best"] == {
        "session": top.session_id,
        "trial": top.idx,
        "sharpe": top.metrics["sharpe"],
    }
    assert facts["trials"] == 6 and facts["runs"] == 2 and facts["manual_runs"] == 1
    assert f"Sharpe {top.metrics['sharpe']:.3f}, trial #{top.idx} of {top.session_id}" in bullets[1]


def test_training_curve_read_finds_best_plateau_setback_and_outlier() -> None:
    # Rises to 1.0 at update 10, falls to 0.2 once (an outlying drop at update 14), then
    # settles at 0.9-0.91.
    rewards = [0.1 * i for i in range(11)] + [0.95, 0.96, 0.95, 0.2, 0.9]
    rewards += [0.9, 0.91] * 6
    facts, bullets = read_figure(training_curve(curve_trial(rewards)))
    assert 4 <= len(bullets) <= 6
    best = int(np.argmax(rewards))
    assert facts["best"] == {"step": 256 * (best + 1), "reward": max(rewards)}
    assert bullets[0].startswith("Mean episode reward went from 0.0000 to 0.9100")
    assert re.search(rf"Best point: 1\.0000 at step {256 * 11:,}", bullets[1])
    assert any(b.startswith("Plateau: the last 7 points") for b in bullets)
    assert any(
        f"Largest setback: from 1.0000 at step {256 * 11:,} down to 0.2000 at step {256 * 15:,}"
        in b
        for b in bullets
    )
    assert any("outlying update" in b and f"step {256 * 15:,}" in b for b in bullets)


def test_training_curve_read_of_a_steady_climb() -> None:
    facts, bullets = read_figure(training_curve(curve_trial([0.1 * i for i in range(12)])))
    assert facts["largest_fall"] == 0.0
    assert "The reward never fell below an earlier high." in bullets
    assert any(b.startswith("No plateau yet") for b in bullets)
    assert any(b.startswith("No outlying update") for b in bullets)


def test_a_run_still_training_says_so() -> None:
    _, bullets = read_figure(training_curve(curve_trial([0.1, 0.2], status="running")))
    assert bullets[-1] == "The run is still training: 2 points so far."
    _, one = read_figure(training_curve(curve_trial([0.3], status="running")))
    assert one[0] == "One update so far: mean episode reward 0.3000 at step 256."


def test_a_wealth_curve_reads_its_deepest_fall_in_percent_not_in_units() -> None:
    # 1 -> 0.8 is a 20% fall; 2.0 -> 1.7 the larger fall in units but only 15%.
    y = np.array([1.0, 0.8, 2.0, 1.7])
    assert drawdown(y) == (pytest.approx(0.3), 2, 3)
    assert drawdown(y, relative=True) == (pytest.approx(0.2), 0, 1)
    returns = y[1:] / y[:-1] - 1.0
    assert drawdown(y, relative=True)[0] == pytest.approx(max_drawdown(returns))


def _drawn_validation() -> Any:
    from alphaloop.charts.validation import DsrShown, ValidationDrawn
    from alphaloop.evidence import GateReport, GateResult, PBOSummary

    pbo = PBOSummary(
        pbo=0.25, n_blocks=8, n_trials=6, n_days=400, n_combinations=70, prob_oos_loss=0.125,
        degradation_slope=None, logit_quantiles={"5%": -1.5, "50%": 0.75, "95%": 2.0},
        histogram_edges=(-2.0, -1.0, 0.0, 1.0, 2.0), histogram_counts=(5, 12, 33, 20),
    )  # fmt: skip
    gate = GateResult(
        gate="pbo", passed=False, value=0.25, threshold=0.2, comparison="<", reason="too high"
    )
    return ValidationDrawn(
        session_id="s-1",
        pbo=pbo,
        deflated_sharpe=DsrShown(dsr=0.9, n_trials=6, n_effective=3.5, dsr_effective=0.96),
        n_search_trials=6,
        gates=GateReport(passed=False, results=(gate,)),
        walk_forward=None,
    )


def test_the_validation_chart_is_read_from_its_model_not_the_figures_metadata() -> None:
    from alphaloop.charts.validation import validation_figure
    from alphaloop.exceptions import InvalidRequest

    drawn = _drawn_validation()
    fig = validation_figure(drawn)
    assert dict(fig.layout.meta) == {"kind": "validation", "session_id": "s-1"}
    facts, bullets = read_figure(fig, drawn)
    assert facts["pbo"] == 0.25 and facts["gates_passed"] is False
    assert facts["deflated_sharpe"]["dsr_effective"] == 0.96
    assert bullets[0].startswith("PBO 0.25: in 25% of 70 CSCV splits (8 blocks of 400 days, 6")
    # the tallest bin of the histogram drawn: logit 0 to 1, 33 splits
    assert "logit +0.00 to +1.00, holds 33 splits" in bullets[1] and "12.5% of splits" in bullets[1]
    assert "Deflated Sharpe 0.900 with N = 6" in bullets[2] and "3.5: 0.960" in bullets[2]
    assert "Gates: NO-GO, 0 of 1 passed; failed: pbo." in bullets
    with pytest.raises(InvalidRequest, match="read with the report it was drawn from"):
        read_figure(fig)
