"""``alphaloop frontier``: the Mean-CVaR efficient frontier of the embedded S&P 500 set."""

from __future__ import annotations

import json

import typer
from rich.markup import escape

from alphaloop import ops
from alphaloop.cli import views
from alphaloop.cli._app import JsonFlag, console, guarded
from alphaloop.cli._options import request_command
from alphaloop.ops.frontier import FrontierRequest

# Holdings shown per point in the table (the JSON has every weight).
TOP_HOLDINGS = 3


@request_command(FrontierRequest)
def frontier(request: FrontierRequest, as_json: JsonFlag = False) -> None:
    """Trace the Mean-CVaR efficient frontier of the S&P 500 set, each point certified optimal.

    From minimum CVaR to the largest return, each point the minimum-CVaR portfolio for its
    target return, on 21-day returns bootstrapped from the two years that end with VALIDATION
    (TEST stays sealed), at the default CVaR level (95%) and position cap (25%).

    Example: alphaloop frontier --assets 20 --points 10 --scenarios 10000
    """
    if as_json:
        run = guarded(ops.frontier.trace_frontier, request)
        typer.echo(json.dumps(run.model_dump(mode="json")))
        return
    with console.status("tracing the efficient frontier...", spinner="dots"):
        run = guarded(ops.frontier.trace_frontier, request)
    _print_frontier(run)


def _print_frontier(run: ops.frontier.FrontierRun) -> None:
    title = (
        f"Mean-CVaR efficient frontier: {len(run.symbols)} assets, {run.scenarios:,} scenarios "
        f"({run.distinct_scenarios:,} distinct) of {run.horizon_days}-day returns, "
        f"CVaR {run.alpha:.0%}, cap {run.max_weight:.0%}"
    )
    table = views.FitTable(title=title)
    for col in ("#", "return", "CVaR", "certificate", "status", "largest weights"):
        table.add_column(col, justify="right" if col in ("#", "return", "CVaR") else "left")
    for k, p in enumerate(run.points, start=1):
        top = sorted(p.weights.items(), key=lambda kv: -kv[1])[:TOP_HOLDINGS]
        table.add_row(
            str(k),
            f"{p.expected_return:.2%}",
            f"{p.cvar:.2%}",
            f"{p.certificate_gap:.0e}",
            p.status,
            " ".join(f"{escape(s)}:{w:.0%}" for s, w in top if w >= 0.005),
        )
    console.print(table)
    console.print(
        f"data: {run.data}, scenarios drawn from {run.window[0]}..{run.window[1]} "
        f"(seed {run.seed}); traced in {run.solve_seconds:.2f} s"
    )
