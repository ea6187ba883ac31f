"""The validation chart of a session: the PBO logit histogram next to the walk-forward windows.

Drawn from a validation report (``alphaloop validate``'s), or, before any, from finalize's PBO
summary and gates in the session's ``final``: :func:`validation_drawn` says which as a model
(:class:`ValidationDrawn`), :func:`validation_figure` draws it, and the embedded reader reads
the model, not the figure's metadata. Trace names are fixed for the reader.
"""

from __future__ import annotations

import itertools

import plotly.graph_objects as go
from plotly.subplots import make_subplots
from pydantic import BaseModel, ConfigDict

from alphaloop.charts._style import COLORS, TEMPLATE
from alphaloop.evidence import GateReport, PBOSummary
from alphaloop.exceptions import InvalidRequest
from alphaloop.journal import SessionRecord
from alphaloop.validation.report import ValidationReport, WalkForward

LOGIT_TRACE = "PBO logits"
WINDOW_TRACE = "walk-forward Sharpe ({})"
EQUAL_WEIGHT_TRACE = "equal weight Sharpe"


_FROZEN = ConfigDict(frozen=True, extra="forbid")


class DsrShown(BaseModel):
    """The deflated Sharpe the chart states: under N search trials and under N effective."""

    model_config = _FROZEN

    dsr: float | None
    n_trials: float | None
    n_effective: float | None
    dsr_effective: float | None


class ValidationDrawn(BaseModel):
    """What the chart draws, from a validation report or from finalize's report."""

    model_config = _FROZEN

    session_id: str
    pbo: PBOSummary
    deflated_sharpe: DsrShown
    n_search_trials: int
    gates: GateReport | None
    walk_forward: WalkForward | None


def validation_drawn(session: SessionRecord, report: ValidationReport | None) -> ValidationDrawn:
    """What the chart draws: the newest validation report of ``session``, or, before any, the
    PBO summary and gates finalize stored (no walk-forward).

    Raises:
        InvalidRequest: neither exists (fewer than 2 search trials, or not finalized).
    """
    if report is not None:
        dsr = report.deflated_sharpe
        return ValidationDrawn(
            session_id=report.session_id,
            pbo=report.pbo,
            deflated_sharpe=DsrShown(
                dsr=dsr.dsr,
                n_trials=dsr.n_trials,
                n_effective=dsr.n_effective,
                dsr_effective=dsr.dsr_effective,
            ),
            n_search_trials=report.n_search_trials,
            gates=report.gates,
            walk_forward=report.walk_forward,
        )
    final = session.final
    if final is None or final.pbo_summary is None:
        why = (final.pbo_note if final else None) or "the session has no PBO yet"
        raise InvalidRequest(
            f"session {session.id} has no validation to draw ({why}); run "
            f"`alphaloop validate {session.id}`"
        )
    return ValidationDrawn(
        session_id=session.id,
        pbo=final.pbo_summary,
        deflated_sharpe=DsrShown(
            dsr=final.deflated_sharpe,
            n_trials=final.dsr_n_trials,
            n_effective=final.n_effective_trials,
            dsr_effective=final.deflated_sharpe_effective,
        ),
        n_search_trials=final.pbo_summary.n_trials,
        gates=final.gates,
        walk_forward=None,
    )


def _histogram(fig: go.Figure, pbo: PBOSummary) -> None:
    edges, counts = pbo.histogram_edges, pbo.histogram_counts
    mids = [(a + b) / 2 for a, b in itertools.pairwise(edges)]
    fig.add_trace(
        go.Bar(
            x=mids,
            y=counts,
            width=[b - a for a, b in itertools.pairwise(edges)],
            name=LOGIT_TRACE,
            marker={"color": COLORS["strategy"]},
            customdata=[[a, b] for a, b in itertools.pairwise(edges)],
            hovertemplate="logit %{customdata[0]:.2f}..%{customdata[1]:.2f}: %{y}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_vline(x=0.0, line={"color": COLORS["failed"], "dash": "dash"}, row=1, col=1)


def _windows(fig: go.Figure, wf: WalkForward) -> None:
    windows = wf.windows
    for scheme in dict.fromkeys(w.scheme for w in windows):
        rows = [w for w in windows if w.scheme == scheme]
        fig.add_trace(
            go.Bar(
                x=[f"{w.eval_start}..{w.eval_end}" for w in rows],
                y=[w.metrics.sharpe for w in rows],
                name=WINDOW_TRACE.format(scheme),
                customdata=[[w.index, w.train_start, w.train_end] for w in rows],
                hovertemplate="Sharpe %{y:.3f}<br>trained %{customdata[1]}..%{customdata[2]}"
                "<extra>" + scheme + "</extra>",
            ),
            row=1,
            col=2,
        )
    first = [w for w in windows if w.scheme == windows[0].scheme] if windows else []
    if first:
        equal_weight = [w.baselines.get("equal_weight") for w in first]
        fig.add_trace(
            go.Scatter(
                x=[f"{w.eval_start}..{w.eval_end}" for w in first],
                y=[m.sharpe if m is not None else None for m in equal_weight],
                name=EQUAL_WEIGHT_TRACE,
                mode="markers",
                marker={"color": COLORS["equal_weight"], "symbol": "diamond", "size": 10},
            ),
            row=1,
            col=2,
        )


def validation_figure(drawn: ValidationDrawn) -> go.Figure:
    """PBO logit histogram (left; the dashed line at 0 splits overfit from not) and the
    walk-forward windows' Sharpe next to equal weight (right), of ``drawn`` (see
    :func:`validation_drawn`)."""
    pbo, wf = drawn.pbo, drawn.walk_forward
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.45, 0.55],
        subplot_titles=(
            f"PBO {pbo.pbo:.2f}: logits of {pbo.n_combinations:,} CSCV splits",
            "walk-forward windows (annualised Sharpe)" if wf else "walk-forward: not run yet",
        ),
    )
    _histogram(fig, pbo)
    if wf:
        _windows(fig, wf)
    fig.update_layout(
        template=TEMPLATE,
        title={"text": f"Validation of {drawn.session_id}", "x": 0.01},
        barmode="group",
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.08, "xanchor": "right", "x": 1},
        margin={"l": 60, "r": 30, "t": 100, "b": 60},
        meta={"kind": "validation", "session_id": drawn.session_id},
    )
    fig.update_xaxes(title_text="logit of the IS winner's OOS rank", row=1, col=1)
    fig.update_yaxes(title_text="CSCV splits", row=1, col=1)
    fig.update_yaxes(title_text="Sharpe", row=1, col=2)
    return fig
