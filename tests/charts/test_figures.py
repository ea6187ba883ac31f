"""Each figure, built from real runs on synthetic data, against the journal rows it draws."""

from __future__ import annotations

import math
import statistics
from typing import Any

import numpy as np
import pytest

from alphaloop.charts import build_chart, chart_kind, research_progress, training_curve
from alphaloop.charts.build import raced_out
from alphaloop.charts.figures import (
    BASELINE_MEAN_TRACE,
    BASELINE_TRACE,
    BEST_TRACE,
    DISCARDED_TRACE,
    DRAWDOWN_TRACE,
    FAILED_TRACE,
    KEPT_TRACE,
    NOISE_BAND_TRACE,
    RACED_TRACE,
    REWARD_TRACE,
    SHARPE_TRACE,
)
from alphaloop.exceptions import AlphaloopError, InvalidRequest, NotFound
from alphaloop.journal import Journal, downsample_curve
from alphaloop.meta_agent.session import SessionSpec, create_session, run_session
from alphaloop.ops.series import SessionSeries, allocation, session_budget, session_market
from alphaloop.settings import Settings
from alphaloop.trials import TrialBudget

from .conftest import CURVE_CAP, Lab


def traces(fig) -> dict:
    return {t.name: t for t in fig.data}


def test_training_curve_draws_the_journaled_curve(lab: Lab) -> None:
    with lab.journal() as j:
        chart = build_chart("training-curve", j, session_id=lab.manual.session.id)
        trial = j.trials.get(lab.manual.trial.id)
    assert chart.kind == "training_curve" and chart.trial_id == trial.id
    assert [t.name for t in chart.figure.data] == [REWARD_TRACE]
    curve = chart.figure.data[0]
    # 24 updates were made; the journal holds an even sample of 10 over the whole run.
    assert len(lab.updates) == 24 and len(curve.x) == CURVE_CAP
    expected = downsample_curve([[t, r] for t, r in lab.updates], CURVE_CAP)
    assert [[x, y] for x, y in zip(curve.x, curve.y, strict=True)] == trial.curve == expected
    assert curve.x[0] == lab.updates[0][0] == 64 and curve.x[-1] == lab.updates[-1][0] == 64 * 24
    assert chart.figure.layout.xaxis.title.text == "environment steps"


def test_training_curve_needs_a_curve(lab: Lab) -> None:
    with lab.journal() as j:
        cvar_trial = j.trials.at(lab.research_id, 2)
        with pytest.raises(InvalidRequest, match=r"no trial of session .* training curve"):
            build_chart("training_curve", j, session_id=lab.research_id)
    with pytest.raises(InvalidRequest, match="no journaled training curve"):
        training_curve(cvar_trial)


def test_research_progress_marks_every_trial(lab: Lab) -> None:
    with lab.journal() as j:
        session = j.sessions.get(lab.research_id)
        rows = j.trials.of_session(lab.research_id)
        chart = build_chart("research_progress", j, session_id=lab.research_id)
        raced = raced_out(j, lab.research_id)
    fig = traces(chart.figure)
    assert raced  # the lab's session races: its raced-out trials are drawn apart
    assert set(fig) == {
        RACED_TRACE,
        NOISE_BAND_TRACE,
        BASELINE_MEAN_TRACE,
        BASELINE_TRACE,
        KEPT_TRACE,
        DISCARDED_TRACE,
        FAILED_TRACE,
        BEST_TRACE,
    }

    def points(status: str, kind: str = "search", apart: bool = False) -> list[tuple[int, Any]]:
        return [(t.idx, t.objective) for t in rows
                if t.kind == kind and t.status == status and (t.idx in raced) == apart]  # fmt: skip

    assert list(zip(fig[BASELINE_TRACE].x, fig[BASELINE_TRACE].y, strict=True)) == points(
        "keep", "baseline"
    )
    assert list(zip(fig[KEPT_TRACE].x, fig[KEPT_TRACE].y, strict=True)) == points("keep")
    assert list(zip(fig[DISCARDED_TRACE].x, fig[DISCARDED_TRACE].y, strict=True)) == points(
        "discard"
    )
    assert list(zip(fig[RACED_TRACE].x, fig[RACED_TRACE].y, strict=True)) == points(
        "discard", apart=True
    )
    # The invalid reply is drawn (below every drawn objective: it has none); test rows are not.
    assert list(fig[FAILED_TRACE].x) == [idx for idx, _ in points("invalid")] == [6]
    drawn_objectives = [
        t.objective for t in rows if t.kind in ("baseline", "search") and t.objective is not None
    ]
    assert fig[FAILED_TRACE].y[0] < min(drawn_objectives)
    assert fig[FAILED_TRACE].customdata[0][1] == "invalid"
    drawn = [
        x
        for name in (BASELINE_TRACE, KEPT_TRACE, DISCARDED_TRACE, RACED_TRACE, FAILED_TRACE)
        for x in fig[name].x
    ]
    # Confirmation re-runs of a candidate are not trials of their own: the candidate stands.
    assert sorted(drawn) == [t.idx for t in rows if t.kind not in ("test", "confirm")]
    # Best so far: the baseline mean until a trial is kept, then its mean over its seeds.
    base = [t.objective for t in rows if t.kind == "baseline"]
    mean = statistics.fmean(base)
    [kept] = [t for t in rows if t.kind == "search" and t.status == "keep"]
    assert kept.n_seeds == 3 and kept.seed_mean is not None
    search = [t.idx for t in rows if t.kind == "search"]
    assert list(fig[BEST_TRACE].x) == [search[0] - 1, *search]
    assert fig[BEST_TRACE].y == pytest.approx([mean] + [kept.seed_mean] * len(search))
    assert fig[BEST_TRACE].line.shape == "hv"
    floor = session.noise_floor
    assert floor == pytest.approx(statistics.stdev(base))
    assert min(fig[NOISE_BAND_TRACE].y) == pytest.approx(mean - 2 * floor)
    assert max(fig[NOISE_BAND_TRACE].y) == pytest.approx(mean + 2 * floor)
    assert chart.figure.layout.yaxis.title.text == "validation sharpe"


def test_research_progress_without_finished_trials(lab: Lab) -> None:
    with lab.journal() as j:
        session = j.sessions.get(lab.research_id)
    with pytest.raises(InvalidRequest, match="no finished trial"):
        research_progress(session, [])


def test_ratio_curve_ranks_every_completed_trial(lab: Lab) -> None:
    with lab.journal() as j:
        sessions = j.sessions.list()
        every = [t for s in sessions for t in j.trials.of_session(s.id)]
        chart = build_chart("ratio_curve", j)
        raced = {(s.id, i) for s in sessions for i in raced_out(j, s.id)}
    completed = [
        t
        for t in every
        if t.kind in ("search", "baseline")
        and t.status in ("keep", "discard")
        and (t.session_id, t.idx) not in raced
    ]
    # 3 baselines + the 2 search trials scored on every fold (a third was raced out: its
    # partial score ranks with no full one), and the manual run.
    assert len(raced) == 1 and len(completed) == 6
    fig = traces(chart.figure)
    assert set(fig) == {SHARPE_TRACE, DRAWDOWN_TRACE}
    bars, dd = fig[SHARPE_TRACE], fig[DRAWDOWN_TRACE]
    assert list(bars.x) == list(dd.x) == [1, 2, 3, 4, 5, 6]
    ranked = sorted(completed, key=lambda t: -t.metrics["sharpe"])
    assert list(bars.y) == [t.metrics["sharpe"] for t in ranked]
    assert list(dd.y) == [t.metrics["max_drawdown"] for t in ranked]
    assert [(c[0], c[1]) for c in bars.customdata] == [(t.session_id, t.idx) for t in ranked]
    manual = [c for c in bars.customdata if c[0] == lab.manual.session.id]
    assert len(manual) == 1 and manual[0][3] == "manual run"
    assert dd.yaxis == "y2" and chart.figure.layout.yaxis2.overlaying == "y"


def test_equity_curves_end_where_the_journal_says(lab: Lab) -> None:
    with lab.journal() as j:
        session = j.sessions.get(lab.research_id)
        chart = build_chart("equity_curves", j, session_id=lab.research_id, series=SessionSeries())
        best = j.trials.get(session.best_trial_id)
        [test_row] = [
            t for t in j.trials.of_session(lab.research_id, "test") if t.parent_id == best.id
        ]
        # The chart draws VALIDATION, the most recent of the folds the trial was scored on.
        validation = j.folds.of_trial(best.id)[-1]
    data = session_market(session)
    n_val, n_test = data.val.stop - data.val.start, data.test.stop - data.test.start
    fig = traces(chart.figure)
    label = f"trial #{best.idx}"
    assert list(fig) == [
        f"{label} (validation)",
        "equal weight (validation)",
        "min CVaR (validation)",
        f"{label} (test)",
        "equal weight (test)",
        "min CVaR (test)",
    ]
    for name, t in fig.items():
        assert len(t.x) == len(t.y) == (n_test if "test" in name else n_val) + 1
        assert t.y[0] == 1.0
    # The last point is 1 + the total return the evaluator journaled (baselines included).
    assert fig[f"{label} (validation)"].y[-1] == pytest.approx(
        1 + validation.metrics["total_return"]
    )
    assert (validation.start_date, validation.end_date) == data.window_dates(data.val)
    assert fig[f"{label} (test)"].y[-1] == pytest.approx(1 + test_row.metrics["total_return"])
    for key, name in (("equal_weight", "equal weight"), ("min_cvar", "min CVaR")):
        assert fig[f"{name} (validation)"].y[-1] == pytest.approx(
            1 + best.baselines[key]["total_return"], abs=1e-9
        )
        assert fig[f"{name} (test)"].y[-1] == pytest.approx(
            1 + test_row.baselines[key]["total_return"], abs=1e-9
        )
    # The curve starts at the close before the window's first day.
    assert fig[f"{label} (validation)"].x[1] == data.dates[data.val.start].date().isoformat()
    assert fig[f"{label} (validation)"].line.dash == "solid"
    assert fig[f"{label} (test)"].line.dash == "dash"


def check_allocation(chart, trial, session) -> None:
    """The drawn weights against the journal: one stacked area per asset over the window, rows
    summing to 1, and - the oracle - the daily returns they earn are the journaled ones."""
    data = session_market(session)
    fig = chart.figure
    assert [t.name for t in fig.data] == list(data.symbols)
    assert all(t.stackgroup == "weights" for t in fig.data)
    window = data.test if trial.kind == "test" else data.val
    matrix = np.column_stack([np.asarray(t.y) for t in fig.data])
    assert matrix.shape == (window.stop - window.start, data.n_assets)
    assert np.allclose(matrix.sum(axis=1), 1.0) and (matrix >= -1e-12).all()
    # Each day earns the weights held; a day that trades away from the drifted book pays the
    # evaluation cost on its turnover.
    rets = data.returns[window]
    gross = (matrix * rets).sum(axis=1)
    drifted = matrix * (1 + rets) / (1 + gross)[:, None]
    turnover = np.r_[0.0, np.abs(matrix[1:] - drifted[:-1]).sum(axis=1)]
    cost = session_budget(session).eval_cost_bps / 1e4
    net = (1 - cost * turnover) * (1 + gross) - 1
    # A trial scored on several folds journaled them end to end; VALIDATION is the last.
    assert net == pytest.approx(trial.val_returns[-len(net) :], abs=1e-12)
    assert (turnover > 1e-9).sum() >= 1  # it did trade
    final = fig.layout.meta["final_weights"]
    assert list(final.values()) == pytest.approx(trial.final_weights, abs=1e-9)


@pytest.mark.parametrize("which", ["research", "manual"])
def test_weights_replay_the_trial(lab: Lab, which: str) -> None:
    sid = lab.research_id if which == "research" else lab.manual.session.id
    with lab.journal() as j:
        session = j.sessions.get(sid)
        trial = j.trials.get(session.best_trial_id)
        chart = build_chart("weights", j, session_id=sid, series=SessionSeries())
    check_allocation(chart, trial, session)


def test_weights_of_a_unified_trial(tmp_path) -> None:
    # PPO weights moved by the CVaR overlay: the replay goes through both stages.
    settings = Settings(ALPHALOOP_HOME=str(tmp_path / "home"))
    spec = SessionSpec(
        goal="unified",
        mode="unified",
        budget=1,
        proposer="random",
        data="synthetic",
        noise_seeds=2,
        trial_budget=TrialBudget(total_timesteps=64, n_envs=1),
        folds=1,
    )
    sid = create_session(spec, settings)
    run_session(sid, settings)
    with Journal(settings.journal_path) as j:
        session = j.sessions.get(sid)
        for trial in j.trials.of_session(sid):
            if trial.val_returns:
                chart = build_chart(
                    "weights", j, session_id=sid, trial_idx=trial.idx, series=SessionSeries()
                )
                check_allocation(chart, trial, session)


def test_weights_of_a_policy_that_is_gone(lab: Lab, tmp_path) -> None:
    with lab.journal() as j:
        session = j.sessions.get(lab.manual.session.id)
        trial = j.trials.get(session.best_trial_id)
    moved = trial.model_copy(update={"policy_path": str(tmp_path / "gone.zip")})
    with pytest.raises(AlphaloopError, match="policy is not at"):
        allocation(moved, "ppo_only", session_market(session), session_budget(session))


def test_replay_refuses_changed_data(lab: Lab) -> None:
    with lab.journal() as j:
        session = j.sessions.get(lab.research_id)
    changed = session.model_copy(update={"data_fingerprint": "0" * 16})
    with pytest.raises(AlphaloopError, match="changed since session"):
        session_market(changed)


def test_chart_kinds_and_trial_errors(lab: Lab) -> None:
    assert chart_kind("Equity-Curves") == "equity_curves"
    with pytest.raises(InvalidRequest, match="choose one of training_curve"):
        chart_kind("pie")
    with lab.journal() as j:
        with pytest.raises(NotFound, match=r"no trial #42; its trials are #0\.\.#10"):
            build_chart(
                "weights", j, session_id=lab.research_id, trial_idx=42, series=SessionSeries()
            )
        # An invalid row has no results to draw.
        with pytest.raises(InvalidRequest, match=r"no results to draw .*invalid"):
            build_chart(
                "equity_curves", j, session_id=lab.research_id, trial_idx=6, series=SessionSeries()
            )
        with pytest.raises(InvalidRequest, match="a trial index does not apply"):
            build_chart("research_progress", j, session_id=lab.research_id, trial_idx=2)
        with pytest.raises(InvalidRequest, match="a session does not apply"):
            build_chart("ratio_curve", j, session_id=lab.research_id)
        # A test-window row draws its own window.
        test_chart = build_chart(
            "weights", j, session_id=lab.research_id, trial_idx=9, series=SessionSeries()
        )
        assert test_chart.figure.layout.meta["window"] == "test"
        assert not math.isnan(test_chart.figure.data[0].y[0])
