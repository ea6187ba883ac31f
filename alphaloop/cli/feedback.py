"""People's verdicts on portfolio decisions: ``alphaloop pm review`` and ``alphaloop pm decide``.

A verdict is recorded once. Five trading days later ``alphaloop prefs extract`` labels the
decision by its outcome: the proposed weights against the alternative the verdict names.
"""

from __future__ import annotations

import json

import typer

from alphaloop import ops
from alphaloop.cli._app import JsonFlag, console, guarded
from alphaloop.cli._options import Cli, request_command
from alphaloop.cli.views import FitTable
from alphaloop.ops.requests import VerdictRequest
from alphaloop.settings import get_settings


def _weights(weights: dict[str, float]) -> str:
    """The positions a person can see (0.1% and up), largest first; the rest is cash."""
    shown = sorted(((w, s) for s, w in weights.items() if abs(w) >= 0.0005), reverse=True)
    return ", ".join(f"{s} {w:.1%}" for w, s in shown) or "cash"


def review(as_json: JsonFlag = False) -> None:
    """List portfolio decisions awaiting a verdict, oldest first.

    Example: alphaloop pm review --json
    """
    items = guarded(ops.prefs.review_decisions, get_settings())
    if as_json:
        typer.echo(json.dumps([i.model_dump(mode="json") for i in items]))
        return
    if not items:
        console.print("no decision awaits a verdict")
        return
    table = FitTable("id", "book", "date", "policy", "held before", "proposed")
    for i in items:
        table.add_row(
            str(i.id),
            i.book,
            i.date,
            "-" if i.policy_id is None else f"#{i.policy_id}",
            _weights(i.pre_weights),
            _weights(i.target_weights),
        )
    console.print(table)
    console.print("record a verdict with `alphaloop pm decide ID approve|reject|override`")


def _weights_arg(text: str) -> dict[str, float]:
    return guarded(ops.prefs.parse_weights, text)


@request_command(
    VerdictRequest,
    cli={
        "verdict": Cli(argument=True),
        "weights": Cli(
            type=str,
            parse=_weights_arg,
            help="the weights to hold instead, with override: AAPL=0.3,MSFT=0.2 (rest cash)",
        ),
    },
)
def decide(
    request: VerdictRequest,
    decision_id: int = typer.Argument(..., help="the decision's id (see `alphaloop pm review`)"),
    as_json: JsonFlag = False,
) -> None:
    """Record a verdict on a portfolio decision: approve, reject or override it.

    Override weights must name the decision's symbols only, be non-negative and sum to at most 1.

    Example: alphaloop pm decide 12 override --weights AAPL=0.3,MSFT=0.2 --note "too much tech"
    """
    decision = guarded(
        ops.prefs.decide,
        get_settings(),
        decision_id,
        request.verdict,
        request.weights,
        request.note,
    )
    if as_json:
        typer.echo(json.dumps(decision.model_dump(mode="json")))
        return
    console.print(f"decision {decision.id}: {decision.verdict.value} recorded")
