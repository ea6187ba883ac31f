"""Figures of runs and sessions: a training curve, a session's research progress, and every
completed trial of every run ranked by Sharpe.

Each function takes journal records and returns a ``go.Figure``; none reads the journal or the
disk. Trace names are fixed (the ``*_TRACE`` constants): the embedded reader and the tests find
the data by them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import plotly.graph_objects as go

from alphaloop.charts._style import COLORS, new_figure
from alphaloop.exceptions import InvalidRequest
from alphaloop.journal import Ranking, SessionRecord, TrialKind, TrialRecord

REWARD_TRACE = "mean episode reward"
BASELINE_TRACE = "baseline"
KEPT_TRACE = "kept"
DISCARDED_TRACE = "discarded"
RACED_TRACE = "raced out (partial)"
FAILED_TRACE = "crashed / invalid"
BEST_TRACE = "best so far"
BASELINE_MEAN_TRACE = "baseline mean"
NOISE_BAND_TRACE = "noise band"
SHARPE_TRACE = "Sharpe (validation)"
DRAWDOWN_TRACE = "max drawdown"
FAILED_STATUSES = ("crash", "timeout", "invalid")


def curve_points(run: TrialRecord) -> tuple[list[int], list[float]]:
    """The (timesteps, rewards) of a trial's journaled training curve."""
    points = [p for p in run.curve or [] if isinstance(p, list | tuple) and len(p) >= 2]
    return [int(p[0]) for p in points], [float(p[1]) for p in points]


def training_curve(run: TrialRecord) -> go.Figure:
    """Mean episode reward after each PPO update of a manual run or a PPO trial.

    Raises:
        InvalidRequest: the trial has no journaled training curve.
    """
    steps, rewards = curve_points(run)
    if not steps:
        raise InvalidRequest(
            f"trial #{run.idx} of session {run.session_id} has no journaled training curve "
            "(only PPO training journals one)"
        )
    live = " — training" if run.status == "running" else ""
    fig = new_figure(
        "training_curve",
        f"Training curve, trial #{run.idx} ({run.proposer or run.kind}){live}",
        "environment steps",
        "mean episode reward",
        {"session_id": run.session_id, "trial_id": run.id, "status": str(run.status)},
    )
    fig.add_trace(
        go.Scatter(
            x=steps,
            y=rewards,
            name=REWARD_TRACE,
            mode="lines+markers",
            marker={"size": 4, "color": COLORS["strategy"]},
            hovertemplate="step %{x:,}<br>reward %{y:.4f}<extra></extra>",
        )
    )
    return fig


def _markers(
    fig: go.Figure, rows: list[TrialRecord], name: str, color: str, symbol: str, size: int = 9
) -> None:
    if not rows:
        return  # no empty entry in the legend
    fig.add_trace(
        go.Scatter(
            x=[t.idx for t in rows],
            y=[t.objective for t in rows],
            name=name,
            mode="markers",
            marker={"color": color, "symbol": symbol, "size": size},
            customdata=[[t.id, str(t.status), (t.reason or "")[:160]] for t in rows],
            hovertemplate="trial #%{x}: %{y:.4f}<br>%{customdata[2]}<extra>" + name + "</extra>",
        )
    )


def research_progress(
    session: SessionRecord, trials: Sequence[TrialRecord], raced: frozenset[int] = frozenset()
) -> go.Figure:
    """The objective of every baseline and search trial of a session, in the order they ran.

    Kept trials are stars, discarded ones grey dots, crashed / timed-out / invalid ones red
    crosses drawn below the lowest objective (they have none); the step line is the incumbent
    the loop compared each trial with (the baseline mean until a trial is kept), and the band
    is the baseline mean plus or minus twice the noise floor: where seed luck alone lands most
    runs of the default config (the keep rule's own margin is a t-margin, see
    ``meta_agent.keep_rule``). The search trials of ``raced`` (their indexes: raced out after
    their first folds, see ``journal.status``) are apart, open circles: their partial score
    ranks with no full one. A finalized session's pick is in the figure's meta (``pick``), so
    a reader names the page's pick.

    Raises:
        InvalidRequest: the session has no finished trial yet.
    """
    metric = session.objective.metric
    rows = sorted(
        (
            t
            for t in trials
            if t.kind in ("baseline", "search") and t.status != "running" and not t.interrupted
        ),
        key=lambda t: t.idx,
    )
    if not rows:
        raise InvalidRequest(f"session {session.id} has no finished trial yet")
    base = [t for t in rows if t.kind == "baseline" and t.objective is not None]
    base_mean = statistics.fmean(t.objective for t in base) if base else None
    fig = new_figure(
        "research_progress",
        f"Research progress: {session.goal}",
        "trial",
        f"validation {metric}",
        {
            "session_id": session.id,
            "metric": metric,
            "goal": session.goal,
            "baseline_mean": base_mean,
            "noise_floor": session.noise_floor,
            "budget": session.budget,
            "pick": _pick(session, rows),
        },
    )
    if base_mean is not None:
        span = (rows[0].idx - 0.5, rows[-1].idx + 0.5)
        _baseline_lines(fig, span, base_mean, session.noise_floor)
    _markers(fig, base, BASELINE_TRACE, COLORS["baseline"], "diamond")
    discarded = _search(rows, "discard")
    _markers(fig, [t for t in discarded if t.idx not in raced], DISCARDED_TRACE,
             COLORS["discarded"], "circle", 8)  # fmt: skip
    _markers(fig, [t for t in discarded if t.idx in raced], RACED_TRACE, COLORS["discarded"],
             "circle-open", 8)  # fmt: skip
    _markers(fig, _search(rows, "keep"), KEPT_TRACE, COLORS["kept"], "star", 14)
    best_x, best_y = _incumbent(rows)
    if best_x:
        fig.add_trace(
            go.Scatter(
                x=best_x,
                y=best_y,
                name=BEST_TRACE,
                mode="lines",
                line={"color": COLORS["best"], "shape": "hv", "width": 2},
                hovertemplate="best after #%{x}: %{y:.4f}<extra></extra>",
            )
        )
    _failed_markers(fig, rows)
    return fig


def _pick(session: SessionRecord, rows: list[TrialRecord]) -> dict[str, float | int] | None:
    """Finalize's pick (its index and objective), or None before finalize."""
    if session.final is None or session.best_trial_id is None:
        return None
    pick = next((t for t in rows if t.id == session.best_trial_id), None)
    if pick is None or pick.objective is None:
        return None
    return {"idx": pick.idx, "objective": pick.objective}


def _search(rows: list[TrialRecord], status: str) -> list[TrialRecord]:
    """The scored search trials of one status."""
    return [
        t for t in rows if t.kind == "search" and t.status == status and t.objective is not None
    ]


def _baseline_lines(
    fig: go.Figure, span: tuple[float, float], base_mean: float, floor: float | None
) -> None:
    """The noise band (the baseline mean +- twice the seed spread) and the baseline mean,
    across ``span``."""
    lo, hi = span
    if floor is not None:
        fig.add_trace(
            go.Scatter(
                x=[lo, hi, hi, lo, lo],
                y=[base_mean - 2 * floor] * 2
                + [base_mean + 2 * floor] * 2
                + [base_mean - 2 * floor],
                name=NOISE_BAND_TRACE,
                mode="lines",
                fill="toself",
                fillcolor=COLORS["band"],
                line={"width": 0},
                hoverinfo="skip",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=[lo, hi],
            y=[base_mean, base_mean],
            name=BASELINE_MEAN_TRACE,
            mode="lines",
            line={"color": COLORS["baseline"], "dash": "dot", "width": 1},
            hovertemplate="baseline mean %{y:.4f}<extra></extra>",
        )
    )


def _failed_markers(fig: go.Figure, rows: list[TrialRecord]) -> None:
    """Crashed, timed-out and invalid trials as crosses just below the lowest objective."""
    failed = [t for t in rows if t.status in FAILED_STATUSES]
    if not failed:
        return
    scored = [t.objective for t in rows if t.objective is not None]
    bottom = min(scored) - 0.08 * ((max(scored) - min(scored)) or 1.0) if scored else 0.0
    fig.add_trace(
        go.Scatter(
            x=[t.idx for t in failed],
            y=[bottom] * len(failed),
            name=FAILED_TRACE,
            mode="markers",
            marker={"color": COLORS["failed"], "symbol": "x", "size": 10},
            customdata=[[t.id, str(t.status), (t.error or "")[:160], str(t.kind)] for t in failed],
            hovertemplate="trial #%{x} %{customdata[1]}<br>%{customdata[2]}<extra></extra>",
        )
    )


def _incumbent(rows: list[TrialRecord]) -> tuple[list[int], list[float]]:
    """The step line: after each search trial, the bar the next one had to beat, the session's
    best as the loop ranked it then (:mod:`alphaloop.journal.ranking`): the best kept score so
    far (a confirmed trial's mean over its seeds), or the baseline mean while none is kept."""
    ranking = Ranking().add(t for t in rows if t.kind == TrialKind.baseline)
    best = ranking.best
    xs = [ranking.baselines[-1].idx] if best else []
    ys = [best.score] if best else []
    for t in rows:
        if t.kind != TrialKind.search:
            continue
        ranking = ranking.add([t])
        if (best := ranking.best) is not None:
            xs.append(t.idx)
            ys.append(best.score)
    return xs, ys


def ratio_curve(trials: Sequence[TrialRecord], sessions: Sequence[SessionRecord]) -> go.Figure:
    """Every completed trial of every session and manual run, ranked by validation Sharpe (bars,
    best first), with its max drawdown overlaid on a second axis. ``trials`` holds full scores
    only (a raced-out trial's first folds do not rank against them: see
    ``TrialRankings.completed``).

    Raises:
        InvalidRequest: no completed trial in the journal.
    """
    by_id = {s.id: s for s in sessions}
    rows = _ranked(trials)
    ranks = list(range(1, len(rows) + 1))
    manual = [s.manual if (s := by_id.get(t.session_id)) else False for t in rows]
    info = [
        [
            t.session_id,
            t.idx,
            str(t.kind),
            "manual run" if m else getattr(by_id.get(t.session_id), "mode", ""),
            (t.finished_at or "")[:19],
        ]
        for t, m in zip(rows, manual, strict=True)
    ]
    note = ", manual runs in orange" if any(manual) else ""
    fig = new_figure(
        "ratio_curve",
        f"Every completed trial ranked by validation Sharpe "
        f"({len(rows)} trials, {len({t.session_id for t in rows})} runs{note})",
        "rank by validation Sharpe",
        "Sharpe (validation)",
        {"sessions": sorted({t.session_id for t in rows})},
    )
    fig.add_trace(
        go.Bar(
            x=ranks,
            y=[t.metrics["sharpe"] for t in rows],
            name=SHARPE_TRACE,
            marker={"color": [COLORS["manual"] if m else COLORS["strategy"] for m in manual]},
            customdata=info,
            hovertemplate="#%{x}: Sharpe %{y:.3f}<br>%{customdata[0]} trial #%{customdata[1]} "
            "(%{customdata[2]}, %{customdata[3]})<br>finished %{customdata[4]}<extra></extra>",
        )
    )
    _drawdown_axis(fig, ranks, rows, info)
    return fig


def _ranked(trials: Sequence[TrialRecord]) -> list[TrialRecord]:
    """Trials with a finite validation Sharpe, best first (ties: earliest finished first)."""
    rows = [
        t
        for t in trials
        if t.metrics
        and isinstance(t.metrics.get("sharpe"), float)
        and math.isfinite(t.metrics["sharpe"])
    ]
    if not rows:
        raise InvalidRequest("the journal has no completed trial to rank yet")
    rows.sort(key=lambda t: (-t.metrics["sharpe"], t.finished_at or "", t.id))
    return rows


def _drawdown_axis(
    fig: go.Figure, ranks: list[int], rows: list[TrialRecord], info: list[list[object]]
) -> None:
    """Each ranked trial's max drawdown, on a right-hand axis of its own."""
    fig.add_trace(
        go.Scatter(
            x=ranks,
            y=[t.metrics.get("max_drawdown") for t in rows],
            name=DRAWDOWN_TRACE,
            yaxis="y2",
            mode="lines+markers",
            line={"color": COLORS["drawdown"], "width": 1},
            marker={"size": 5},
            customdata=info,
            hovertemplate="#%{x}: max drawdown %{y:.1%}<br>%{customdata[0]} trial "
            "#%{customdata[1]}<extra></extra>",
        )
    )
    fig.update_layout(
        yaxis2={
            "title": {"text": "max drawdown"},
            "overlaying": "y",
            "side": "right",
            "tickformat": ".0%",
            "rangemode": "tozero",
            "showgrid": False,
        },
        bargap=0.15,
    )
