"""Figures of one trial's portfolio: its equity against the baselines, and its weights over time.

They draw series from :mod:`alphaloop.charts.series` (journaled returns, replayed baselines and
allocations); trace names follow :func:`equity_trace_name` and the symbols.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go

from alphaloop.charts._style import COLORS, REFERENCE_NAMES, new_figure
from alphaloop.exceptions import InvalidRequest
from alphaloop.journal import TrialRecord
from alphaloop.metrics import equity_curve

if TYPE_CHECKING:  # the replay imports the evaluator (torch): only when a replay is drawn
    from alphaloop.charts.series import Allocation, WindowReturns


def equity_trace_name(label: str, window: str) -> str:
    """``"trial #3 (validation)"``, ``"min CVaR (test)"``..."""
    return f"{label} ({window})"


def equity_curves(trial: TrialRecord, windows: Sequence[WindowReturns]) -> go.Figure:
    """Growth of 1 invested in the trial and in the equal-weight and minimum-CVaR baselines, on
    the validation window and, once the session is finalized, on the test window (a tear
    sheet's window also holds the session's default config, under ``default``).

    Each window starts again at 1.0 at the close before its first day. Test-window lines are
    dashed: those numbers were seen once, at the end.

    Raises:
        InvalidRequest: no window to draw.
    """
    if not windows:
        raise InvalidRequest(f"trial #{trial.idx} has no evaluation window to draw")
    fig = new_figure(
        "equity_curves",
        f"Equity of trial #{trial.idx} vs the baselines",
        "date",
        "growth of 1",
        {
            "session_id": trial.session_id,
            "trial_id": trial.id,
            "trial_label": f"trial #{trial.idx}",
            "windows": [w.window for w in windows],
        },
    )
    for w in windows:
        x = [w.start_date, *w.dates]
        dash = "dash" if w.window == "test" else "solid"
        series = [(f"trial #{trial.idx}", w.strategy, COLORS["strategy"], 2.5)]
        series += [
            (REFERENCE_NAMES[k], v, COLORS[k], 1.5) for k, v in w.baselines.items() if k in COLORS
        ]
        for label, returns, color, width in series:
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=equity_curve(returns).tolist(),
                    name=equity_trace_name(label, w.window),
                    mode="lines",
                    line={"color": color, "width": width, "dash": dash},
                    hovertemplate="%{x}: %{y:.3f}<extra>" + label + "</extra>",
                )
            )
    fig.update_layout(hovermode="x unified")
    return fig


def weights(trial: TrialRecord, alloc: Allocation) -> go.Figure:
    """The trial's allocation over its window: one stacked area per asset, the weight held
    during each day (drifting between rebalances), summing to 1."""
    matrix = np.asarray(alloc.weights)
    fig = new_figure(
        "weights",
        f"Allocation of trial #{trial.idx} over the {alloc.window} window",
        "date",
        "weight",
        {
            "session_id": trial.session_id,
            "trial_id": trial.id,
            "window": alloc.window,
            "final_weights": dict(zip(alloc.symbols, alloc.final_weights, strict=True)),
        },
    )
    for j, symbol in enumerate(alloc.symbols):
        fig.add_trace(
            go.Scatter(
                x=alloc.dates,
                y=matrix[:, j].tolist(),
                name=symbol,
                mode="lines",
                stackgroup="weights",
                line={"width": 0.5},
                hovertemplate="%{x}: %{y:.1%}<extra>" + symbol + "</extra>",
            )
        )
    fig.update_layout(yaxis={"tickformat": ".0%", "range": [0, 1]}, hovermode="x unified")
    return fig
