"""A tear sheet as one self-contained HTML file: plotly.js inlined once, every figure drawn
from its JSON, the tables as HTML, system fonts. It loads nothing from the network, so it opens
offline, attached to an email or in an air-gapped browser."""

from __future__ import annotations

from html import escape

import plotly.graph_objects as go
import plotly.io as pio

from alphaloop.charts.tearsheet import TearSheet
from alphaloop.evidence import GateReport

# The TEST metrics the sheet's table shows, with their formats.
METRICS: dict[str, tuple[str, str]] = {
    "sharpe": ("Sharpe", "{:.3f}"),
    "sortino": ("Sortino", "{:.3f}"),
    "calmar": ("Calmar", "{:.3f}"),
    "annual_return": ("annual return", "{:.2%}"),
    "total_return": ("total return", "{:.2%}"),
    "volatility": ("volatility", "{:.2%}"),
    "max_drawdown": ("max drawdown", "{:.2%}"),
    "cvar_95": ("CVaR 95% (daily)", "{:.2%}"),
    "annual_turnover": ("annual turnover", "{:.2f}"),
    "hit_rate": ("hit rate", "{:.1%}"),
    "profit_factor": ("profit factor", "{:.3f}"),
}
_PLOT_CONFIG = {"displaylogo": False, "responsive": True}
CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
       color: #222; background: #fafafa; }
main { max-width: 1180px; margin: 0 auto; padding: 24px; }
h1 { font-size: 1.5rem; margin: 0 0 4px; } h2 { font-size: 1.15rem; margin: 28px 0 8px; }
.muted { color: #666; } .verdict { padding: 10px 14px; border-radius: 6px; margin: 16px 0;
  font-weight: 600; } .go { background: #e6f4ea; } .nogo { background: #fdecea; }
table { border-collapse: collapse; background: #fff; } td, th { padding: 4px 10px;
  border-bottom: 1px solid #e3e3e3; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.pass { color: #1e7d34; font-weight: 600; } .fail { color: #b3261e; font-weight: 600; }
.fig { background: #fff; margin: 12px 0; min-height: 420px; }
.scroll { overflow-x: auto; max-width: 100%; }
.note { white-space: pre-wrap; background: #fff; padding: 10px 14px; border-left: 3px solid #bbb; }
"""


def tearsheet_html(sheet: TearSheet, figures: dict[str, go.Figure]) -> str:
    """The sheet and its figures as one HTML document (nothing referenced outside it)."""
    parts = [
        _header(sheet),
        "<h2>On TEST</h2>",
        _metrics_table(sheet),
        *(figure_html(name, fig) for name, fig in figures.items()),
        "<h2>Go/no-go gates</h2>",
        gates_table(sheet.gates) if sheet.gates else "<p class=muted>no gates were checked</p>",
        "<h2>The search</h2>",
        _search(sheet),
        "<h2>Notes</h2>",
        "".join(f"<div class=note>{escape(n)}</div>" for n in sheet.notes)
        or "<p class=muted>no notes</p>",
    ]
    return page_html(sheet.title, parts)


def page_html(title: str, parts: list[str]) -> str:
    """One HTML document of ``parts``, plotly.js inlined once: it opens offline."""
    from plotly.offline import get_plotlyjs

    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>{escape(title)}</title><style>{CSS}</style>"
        f"<script>{get_plotlyjs()}</script></head><body><main>{''.join(parts)}</main></body>"
        "</html>\n"
    )


def _header(sheet: TearSheet) -> str:
    window = f"{sheet.dates[0]} .. {sheet.dates[-1]}" if sheet.dates else "-"
    verdict = ""
    if sheet.gates_summary:
        cls = "go" if sheet.gates is not None and sheet.gates.passed else "nogo"
        verdict = f"<div class='verdict {cls}'>{escape(sheet.gates_summary)}</div>"
    if sheet.outside_limits is not None:  # as the review leads with it
        verdict = (
            f"<div class='verdict nogo' id=outside-limits>NOT WITHIN THE LIMITS: "
            f"{escape(sheet.outside_limits)}</div>{verdict}"
        )
    elif sheet.limits:
        verdict += f"<div class=muted>limits: {escape(sheet.limits)}, met</div>"
    return (
        f"<h1>{escape(sheet.title)}</h1>"
        f"<div class=muted>goal: {escape(sheet.goal)} &middot; mode: {escape(sheet.mode)} "
        f"&middot; data: {escape(sheet.data)} &middot; TEST {escape(window)} "
        f"({len(sheet.dates)} days, evaluated once)</div>{verdict}"
    )


def _metrics_table(sheet: TearSheet) -> str:
    head = "".join(f"<th class=num>{escape(line.label)}</th>" for line in sheet.lines)
    rows = []
    for key, (label, fmt) in METRICS.items():
        cells = "".join(
            f"<td class=num>{_fmt(fmt, line.metrics.get(key))}</td>" for line in sheet.lines
        )
        rows.append(f"<tr><td>{escape(label)}</td>{cells}</tr>")
    return f"<table><tr><th>metric</th>{head}</tr>{''.join(rows)}</table>"


def _fmt(fmt: str, value: float | None) -> str:
    return "-" if value is None else escape(fmt.format(value))


def figure_html(name: str, fig: go.Figure) -> str:
    # a figure of its own height (a timeline of a few rows) takes that, not the box's minimum
    tall = f" style='min-height: {int(fig.layout.height)}px'" if fig.layout.height else ""
    return (
        f"<div class=fig{tall}>"
        + pio.to_html(
            fig,
            include_plotlyjs=False,
            full_html=False,
            div_id=f"figure-{name}",
            config=_PLOT_CONFIG,
        )
        + "</div>"
    )


def gates_table(gates: GateReport) -> str:
    rows = []
    for g in gates.results:
        verdict = "<span class=pass>pass</span>" if g.passed else "<span class=fail>FAIL</span>"
        value = "-" if g.value is None else f"{g.value:.4g}"
        rows.append(
            f"<tr><td>{escape(g.gate)}</td><td>{verdict}</td>"
            f"<td class=num>{escape(value)} {escape(g.comparison)} {g.threshold:.4g}</td>"
            f"<td>{escape(g.reason)}</td></tr>"
        )
    return (
        "<table><tr><th>gate</th><th>verdict</th><th class=num>value</th>"
        f"<th>the test that decided it</th></tr>{''.join(rows)}</table>"
    )


def _search(sheet: TearSheet) -> str:
    s = sheet.search
    items = [
        ("proposer", s.proposer),
        ("search trials", f"{s.n_trials} counted ({s.n_kept} kept, {s.n_discarded} discarded, "
                          f"{s.n_failed} crashed or timed out), {s.n_invalid} invalid proposals"),
        ("folds", "-" if s.n_folds is None else str(s.n_folds)),
        ("stopped", s.stop_reason),
        ("pick", f"{s.pick or '-'}: trial #{s.pick_trial_idx}"),
        ("why", s.pick_reason or "-"),
    ]  # fmt: skip
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in items)
    return f"<table>{rows}</table>"
