"""The look every chart shares: template, colours, and the metadata the reader relies on."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

TEMPLATE = "plotly_white"
# The evaluator's baselines, as charts name them.
BASELINE_NAMES = {"equal_weight": "equal weight", "min_cvar": "min CVaR"}
# What a comparison names beside the baselines: the session's default config.
REFERENCE_NAMES = {**BASELINE_NAMES, "default": "default config"}
COLORS = {
    "strategy": "#1f77b4",
    "baseline": "#1f77b4",
    "kept": "#2ca02c",
    "discarded": "#9e9e9e",
    "failed": "#d62728",
    "best": "#ff7f0e",
    "band": "rgba(31, 119, 180, 0.12)",
    "equal_weight": "#7f7f7f",
    "min_cvar": "#9467bd",
    "default": "#8c564b",
    "drawdown": "#d62728",
    "manual": "#ff7f0e",
}


def new_figure(
    kind: str, title: str, x_title: str, y_title: str, meta: dict[str, Any]
) -> go.Figure:
    """An empty figure with the house layout. ``meta`` travels with the figure (into the HTML
    too) and tells the embedded reader what the traces mean: kind, metric, ids."""
    fig = go.Figure()
    fig.update_layout(
        template=TEMPLATE,
        title={"text": title, "x": 0.01, "xanchor": "left"},
        xaxis_title=x_title,
        yaxis_title=y_title,
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "right", "x": 1.0},
        margin={"l": 60, "r": 30, "t": 80, "b": 50},
        hovermode="closest",
        meta={"kind": kind, **meta},
    )
    return fig


def trace(fig: go.Figure, name: str) -> Any:
    """The trace called ``name``, or None."""
    for t in fig.data:
        if t.name == name:
            return t
    return None
