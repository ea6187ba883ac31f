"""A tear sheet: a session's pick against the default config and 1/N on the sealed TEST window.

:class:`TearSheet` is the sheet's typed content (what the operations layer reads from the
journal and replays); :func:`tearsheet_figures` draws its figures, the equity and allocation
with the charts every trial has (:func:`~alphaloop.charts.portfolio.equity_curves`,
:func:`~alphaloop.charts.portfolio.weights`); :mod:`.tearsheet_html` renders content and
figures as one self-contained HTML file. A page draws the same figures from their JSON.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import plotly.graph_objects as go
from pydantic import BaseModel, ConfigDict

from alphaloop.charts._style import COLORS, new_figure
from alphaloop.charts.portfolio import equity_curves, weights
from alphaloop.charts.series import Allocation, WindowReturns
from alphaloop.evidence import GateReport
from alphaloop.journal import TrialRecord
from alphaloop.metrics import TRADING_DAYS, equity_curve

Role = Literal["pick", "default", "equal_weight"]
ROLE_COLORS: dict[str, str] = {
    "pick": COLORS["strategy"],
    "default": COLORS["default"],
    "equal_weight": COLORS["equal_weight"],
}
ROLLING_DAYS = 63  # a quarter of trading days: the rolling Sharpe's window
FIGURES = ("equity", "drawdown", "monthly_returns", "rolling_sharpe", "turnover", "weights")
_FROZEN = ConfigDict(frozen=True, extra="forbid")


class SheetLine(BaseModel):
    """One strategy on TEST: its daily net returns, its journaled TEST metrics and (when its
    book was replayed) the one-way turnover it traded each day."""

    model_config = _FROZEN

    role: Role
    label: str
    returns: list[float]
    metrics: dict[str, float]
    turnover: list[float] | None = None


class SearchSummary(BaseModel):
    """How the session searched: trials counted against the budget, how they ended, and why
    the pick is the pick."""

    model_config = _FROZEN

    proposer: str
    n_trials: int
    n_kept: int
    n_discarded: int
    n_failed: int  # crashed or timed out
    n_invalid: int  # proposals that never ran (not counted)
    n_folds: int | None
    stop_reason: str
    pick: str | None
    pick_reason: str | None
    pick_trial_idx: int


class TearSheet(BaseModel):
    """Everything a tear sheet shows, typed: who it is about, the TEST series of the pick, the
    default and 1/N (``lines``, the pick first), the pick's allocation, the gates, the search
    and the notes."""

    model_config = _FROZEN

    title: str
    session_id: str
    goal: str
    mode: str
    data: str
    policy_id: int | None = None
    start_date: str  # the close before TEST's first day: where every equity curve is 1.0
    dates: list[str]
    lines: list[SheetLine]
    allocation: Allocation | None = None
    gates: GateReport | None = None  # finalize's verdicts, as the final report types them
    gates_summary: str | None = None
    search: SearchSummary
    notes: list[str]
    # the user's limits in words ("max drawdown ≤ 15%"; empty: none), the drawdown limit the
    # drawdown chart draws, and why the reported result is outside them (None: it is within)
    limits: str = ""
    max_drawdown: float | None = None
    outside_limits: str | None = None


def tearsheet_figures(sheet: TearSheet, pick: TrialRecord) -> dict[str, go.Figure]:
    """The sheet's figures by name (:data:`FIGURES`; ``weights`` only when the allocation was
    replayed). ``pick`` is the trial the sheet is about (its ids label the charts)."""
    meta = {"session_id": sheet.session_id, "trial_id": pick.id}
    figures = {
        "equity": equity_curves(pick, [_window(sheet)]),
        "drawdown": drawdowns(sheet, meta),
        "monthly_returns": monthly_returns(sheet, meta),
        "rolling_sharpe": rolling_sharpe(sheet, meta),
        "turnover": turnover(sheet, meta),
    }
    if sheet.allocation is not None:
        figures["weights"] = weights(pick, sheet.allocation)
    return figures


def _window(sheet: TearSheet) -> WindowReturns:
    """The sheet's lines as the equity chart takes them: the pick, the others beside it."""
    pick, *others = sheet.lines
    return WindowReturns(
        window="test",
        start_date=sheet.start_date,
        dates=sheet.dates,
        strategy=pick.returns,
        baselines={line.role: line.returns for line in others},
    )


def _line(fig: go.Figure, line: SheetLine, x: list[str], y: list[float], fmt: str) -> None:
    fig.add_trace(
        go.Scatter(
            x=x,
            y=y,
            name=line.label,
            mode="lines",
            line={"color": ROLE_COLORS[line.role], "width": 2.5 if line.role == "pick" else 1.5},
            hovertemplate="%{x}: %{y:" + fmt + "}<extra>" + line.label + "</extra>",
        )
    )


def drawdowns(sheet: TearSheet, meta: dict) -> go.Figure:
    """Each line's fall below its running peak on TEST, from 0 down."""
    fig = new_figure("drawdown", "Drawdown on TEST", "date", "below the peak", meta)
    x = [sheet.start_date, *sheet.dates]
    for line in sheet.lines:
        eq = equity_curve(line.returns)
        _line(fig, line, x, (eq / np.maximum.accumulate(eq) - 1.0).tolist(), ".1%")
    fig.update_layout(yaxis={"tickformat": ".0%"}, hovermode="x unified")
    if sheet.max_drawdown is not None:
        fig.add_hline(
            y=-sheet.max_drawdown,
            line={"color": "#a4262c", "dash": "dash", "width": 1},
            annotation_text=f"the limit: {100 * sheet.max_drawdown:.4g}%",
            annotation_position="bottom left",
        )
    if sheet.outside_limits is not None:
        fig.update_layout(title={"text": "Drawdown on TEST (the pick is outside the limits)"})
    return fig


def month_returns(dates: list[str], returns: list[float]) -> dict[str, float]:
    """Compounded return of each calendar month (``YYYY-MM``) the dates cover."""
    out: dict[str, float] = {}
    for day, r in zip(dates, returns, strict=True):
        month = day[:7]
        out[month] = (1.0 + out.get(month, 0.0)) * (1.0 + r) - 1.0
    return out


def monthly_returns(sheet: TearSheet, meta: dict) -> go.Figure:
    """Each calendar month's compounded return, the lines side by side."""
    fig = new_figure("monthly_returns", "Monthly returns on TEST", "month", "return", meta)
    for line in sheet.lines:
        months = month_returns(sheet.dates, line.returns)
        fig.add_trace(
            go.Bar(
                x=list(months),
                y=list(months.values()),
                name=line.label,
                marker={"color": ROLE_COLORS[line.role]},
                hovertemplate="%{x}: %{y:.2%}<extra>" + line.label + "</extra>",
            )
        )
    fig.update_layout(barmode="group", yaxis={"tickformat": ".0%"})
    return fig


def rolling_sharpe_of(returns: list[float], days: int) -> np.ndarray:
    """The annualised Sharpe of each trailing ``days``-day window (``len - days + 1`` values;
    0 where a window's returns do not vary)."""
    r = np.asarray(returns, dtype=float)
    windows = np.lib.stride_tricks.sliding_window_view(r, days)
    sd = windows.std(axis=1, ddof=1)
    mean = windows.mean(axis=1)
    safe = np.where(sd > 1e-15, sd, 1.0)
    return np.where(sd > 1e-15, mean / safe * np.sqrt(TRADING_DAYS), 0.0)


def rolling_sharpe(sheet: TearSheet, meta: dict) -> go.Figure:
    """Each line's Sharpe over the trailing :data:`ROLLING_DAYS` days (half of TEST when it is
    shorter than two such windows)."""
    days = max(min(ROLLING_DAYS, len(sheet.dates) // 2), 2)
    fig = new_figure(
        "rolling_sharpe",
        f"Rolling {days}-day Sharpe on TEST (annualised)",
        "date",
        "Sharpe",
        {**meta, "days": days},
    )
    for line in sheet.lines:
        if len(line.returns) >= days:
            sharpes = rolling_sharpe_of(line.returns, days).tolist()
            _line(fig, line, sheet.dates[days - 1 :], sharpes, ".2f")
    fig.update_layout(hovermode="x unified")
    return fig


def turnover(sheet: TearSheet, meta: dict) -> go.Figure:
    """Cumulative one-way turnover traded on TEST by each line whose book was replayed (the
    table beside it gives every line's annual turnover)."""
    fig = new_figure("turnover", "Cumulative turnover on TEST", "date", "one-way turnover", meta)
    for line in sheet.lines:
        if line.turnover is not None:
            _line(fig, line, sheet.dates, np.cumsum(line.turnover).tolist(), ".2f")
    fig.update_layout(hovermode="x unified")
    return fig


__all__ = [
    "FIGURES",
    "SearchSummary",
    "SheetLine",
    "TearSheet",
    "month_returns",
    "rolling_sharpe_of",
    "tearsheet_figures",
]
