"""A walk's sheet: its out-of-sample record against the default config and 1/N, the pick of
each epoch, and each period's Sharpe.

:class:`WalkSheet` is the sheet's typed content (the walk's report and the record's days, read
from the journal by the operations layer); :func:`walk_figures` draws its figures, which the
page draws from their JSON and :mod:`.walk_html` writes into one offline HTML file.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots
from pydantic import BaseModel, ConfigDict

from alphaloop.charts._style import COLORS, TEMPLATE
from alphaloop.charts.tearsheet import ROLE_COLORS
from alphaloop.journal import EpochLine, WalkReport
from alphaloop.metrics import equity_curve

WALK_FIGURES = ("equity", "picks", "epoch_sharpe")
_FROZEN = ConfigDict(frozen=True, extra="forbid")
_MS_PER_DAY = 86_400_000
_PICK_COLOR = COLORS["strategy"]
_DEFAULT_COLOR = COLORS["discarded"]


class WalkSheet(BaseModel):
    """Everything a walk's sheet shows, typed.

    Attributes:
        title, walk_id, goal, mode, data, proposer, budget: who it is about.
        start_date: the close before the first out-of-sample day (where every curve is 1.0).
        dates: every out-of-sample day, in order.
        pick, default, equal_weight: the daily returns, over ``dates``, of what the walk's
            rule traded, of the default config and of 1/N.
        report: the walk's report (every rule's record, the epochs, the verdict).
    """

    model_config = _FROZEN

    title: str
    walk_id: str
    goal: str
    mode: str
    data: str
    proposer: str
    budget: int
    start_date: str
    dates: list[str]
    pick: list[float]
    default: list[float]
    equal_weight: list[float]
    report: WalkReport


def _look(fig: go.Figure, sheet: WalkSheet, kind: str, title: str, **layout: Any) -> None:
    """The house look, the legend above the plot, and the metadata a reader relies on."""
    fig.update_layout(
        template=TEMPLATE,
        title={"text": title, "x": 0.01, "xanchor": "left"},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "left", "x": 0},
        margin={"l": 60, "r": 30, "t": 80, "b": 50},
        meta={"kind": kind, "walk_id": sheet.walk_id, "rule": sheet.report.rule},
        **layout,
    )


def _lines(sheet: WalkSheet) -> list[tuple[str, str, list[float], float]]:
    """(name, colour, returns, width) of the record and its two references."""
    return [
        (f"the walk ({sheet.report.rule} rule)", ROLE_COLORS["pick"], sheet.pick, 2.5),
        ("default config", ROLE_COLORS["default"], sheet.default, 1.5),
        ("1/N (equal weight)", ROLE_COLORS["equal_weight"], sheet.equal_weight, 1.5),
    ]


def equity(sheet: WalkSheet) -> go.Figure:
    """Growth of 1 over the out-of-sample record (above) and the fall below each line's
    running peak (below), on dates, the epochs' first days marked."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.68, 0.32],
                        vertical_spacing=0.06)  # fmt: skip
    x = [sheet.start_date, *sheet.dates]
    for name, color, returns, width in _lines(sheet):
        eq = equity_curve(returns)
        below = eq / np.maximum.accumulate(eq) - 1.0
        common = {"x": x, "mode": "lines", "legendgroup": name}
        fig.add_trace(
            go.Scatter(**common, y=eq.tolist(), name=name, line={"color": color, "width": width},
                       hovertemplate="%{x}: %{y:.3f}<extra>" + name + "</extra>"),
            row=1, col=1,
        )  # fmt: skip
        fig.add_trace(
            go.Scatter(**common, y=below.tolist(), name=f"{name} drawdown", showlegend=False,
                       line={"color": color, "width": 1},
                       hovertemplate="%{x}: %{y:.1%}<extra>" + name + "</extra>"),
            row=2, col=1,
        )  # fmt: skip
    for line in sheet.report.epochs[1:]:
        fig.add_vline(x=line.start, line={"color": "#b9c0cc", "width": 1, "dash": "dot"})
    _look(fig, sheet, "walk_equity", "The walk against the default and 1/N",
          hovermode="x unified")  # fmt: skip
    fig.update_xaxes(type="date")
    fig.update_xaxes(title_text="date", row=2, col=1)
    fig.update_yaxes(title_text="growth of 1", tickformat=".2f", row=1, col=1)
    fig.update_yaxes(title_text="drawdown", tickformat=".0%", row=2, col=1)
    return fig


def _letters(i: int) -> str:
    """0 -> A, 25 -> Z, 26 -> AA: spreadsheet column names."""
    name = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        name = chr(65 + r) + name
    return name


def config_names(epochs: Sequence[EpochLine]) -> dict[str, str]:
    """A short name for each searched config the walk traded, by hash: ``config A``, ``config
    B``... in the order they first traded (the page's walk view names them the same way)."""
    hashes = dict.fromkeys(e.config_hash for e in epochs if e.trial_id is not None)
    return {h: f"config {_letters(i)}" for i, h in enumerate(hashes)}


def traded_name(line: EpochLine, names: dict[str, str]) -> str:
    """What an epoch traded: ``default config`` or the config's short name."""
    return "default config" if line.trial_id is None else names[line.config_hash]


def _days(line: EpochLine) -> int:
    """Calendar days from the period's first day to the end of its last."""
    return (dt.date.fromisoformat(line.end) - dt.date.fromisoformat(line.start)).days + 1


def picks(sheet: WalkSheet) -> go.Figure:
    """What the walk's rule traded in each epoch, as a timeline: one row per config (the
    default first), a bar over each period, and a mark where the pick changed."""
    report = sheet.report
    names = config_names(report.epochs)

    def _traded(line: EpochLine) -> str:
        return traded_name(line, names)

    rows = ["default config", *names.values()]
    fig = go.Figure()
    for searched, color, name in ((False, _DEFAULT_COLOR, "default config"),
                                  (True, _PICK_COLOR, "a searched config")):  # fmt: skip
        lines = [e for e in report.epochs if (e.trial_id is not None) == searched]
        if not lines:
            continue
        fig.add_trace(
            go.Bar(
                orientation="h",
                base=[e.start for e in lines],
                x=[_days(e) * _MS_PER_DAY for e in lines],
                y=[_traded(e) for e in lines],
                name=name,
                marker={"color": color},
                customdata=[[e.epoch, e.start, e.end, _hover(e)] for e in lines],
                hovertemplate="epoch %{customdata[0]}: %{customdata[1]} to %{customdata[2]}"
                "<br>%{y}%{customdata[3]}<extra></extra>",
            )
        )
    moved = [e for e in report.epochs if e.changed]
    if moved:
        fig.add_trace(
            go.Scatter(
                x=[e.start for e in moved],
                y=[_traded(e) for e in moved],
                mode="markers",
                name="the pick changed",
                marker={"symbol": "triangle-right", "size": 12, "color": COLORS["best"],
                        "line": {"color": "#1d2330", "width": 1}},
                hovertemplate="%{x}: the pick changed to %{y}<extra></extra>",
            )
        )  # fmt: skip
    _look(
        fig, sheet, "walk_picks", f"The pick of each epoch ({report.rule} rule)",
        barmode="overlay", bargap=0.35, height=picks_height(len(rows)),
        xaxis={"type": "date", "title": {"text": "date"}},
        yaxis={"categoryorder": "array", "categoryarray": rows[::-1], "title": {"text": ""},
               "automargin": True},
    )  # fmt: skip
    return fig


def picks_height(n_rows: int) -> int:
    """The timeline's height in pixels for ``n_rows`` configs: a row of about 36 px each."""
    return 170 + 36 * n_rows


def _hover(line: EpochLine) -> str:
    def fmt(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    trial = "" if line.trial_id is None else f" (trial {line.trial_id}, {line.config_hash[:8]})"
    return (f"{trial}<br>Sharpe: pick {fmt(line.sharpe_pick)}, default "
            f"{fmt(line.sharpe_default)}, 1/N {fmt(line.sharpe_equal_weight)}")  # fmt: skip


def epoch_sharpe(sheet: WalkSheet) -> go.Figure:
    """Each period's annualised Sharpe: what the walk traded, the default and 1/N."""
    epochs = sheet.report.epochs
    x = [f"{e.epoch}: {e.start[:7]}" for e in epochs]
    fig = go.Figure()
    series = (
        ("the walk", ROLE_COLORS["pick"], [e.sharpe_pick for e in epochs]),
        ("default config", ROLE_COLORS["default"], [e.sharpe_default for e in epochs]),
        ("1/N", ROLE_COLORS["equal_weight"], [e.sharpe_equal_weight for e in epochs]),
    )
    for name, color, values in series:
        fig.add_trace(
            go.Bar(x=x, y=values, name=name, marker={"color": color},
                   hovertemplate="epoch %{x}: %{y:.2f}<extra>" + name + "</extra>")
        )  # fmt: skip
    _look(
        fig, sheet, "walk_epoch_sharpe", "Each period's Sharpe (annualised)", barmode="group",
        xaxis={"type": "category", "title": {"text": "epoch: first month"}},
        yaxis={"title": {"text": "Sharpe"}, "tickformat": ".2f"},
    )  # fmt: skip
    return fig


def walk_figures(sheet: WalkSheet) -> dict[str, go.Figure]:
    """The sheet's figures by name (:data:`WALK_FIGURES`)."""
    return {"equity": equity(sheet), "picks": picks(sheet), "epoch_sharpe": epoch_sharpe(sheet)}


__all__ = [
    "WALK_FIGURES",
    "WalkSheet",
    "config_names",
    "picks_height",
    "traded_name",
    "walk_figures",
]
