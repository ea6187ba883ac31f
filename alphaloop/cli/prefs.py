"""``alphaloop prefs``: preference pairs from portfolio decisions and the research journal."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from alphaloop import ops
from alphaloop.cli._app import JsonFlag, choice, console, guarded
from alphaloop.cli.views import FitTable
from alphaloop.settings import get_settings

prefs_app = typer.Typer(
    no_args_is_help=True,
    help="Preference pairs: label decisions at T+5, extract research pairs, stats, export.",
)


@prefs_app.command()
def extract(
    data: str = typer.Option(
        None, help="price data for the T+5 labels (default: each decision's policy's data)"
    ),
    as_json: JsonFlag = False,
) -> None:
    """Label due T+5 decision outcomes and extract research pairs (idempotent).

    Running it twice adds nothing.

    Example: alphaloop prefs extract --data prices.csv --json
    """
    result = guarded(ops.prefs.extract_preferences, get_settings(), data)
    if as_json:
        typer.echo(json.dumps(result.model_dump(mode="json")))
        return
    for source in ("pm", "research"):
        console.print(
            f"{source}: {result.added[source]} new pair(s), {result.labelled[source]} labelled"
        )
    if result.pending:
        console.print(
            f"{len(result.pending)} decision(s) wait for five trading days of prices: "
            + ", ".join(map(str, result.pending))
        )
    for decision_id, why in result.skipped.items():
        console.print(f"[yellow]decision {decision_id} not labelled:[/yellow] {why}")


@prefs_app.command()
def stats(as_json: JsonFlag = False) -> None:
    """Pairs per source, labelled or not, and how many no DPO run has trained on.

    Example: alphaloop prefs stats
    """
    result = guarded(ops.prefs.preference_stats, get_settings())
    if as_json:
        typer.echo(json.dumps(result.model_dump(mode="json")))
        return
    table = FitTable("source", "labelled", "unlabelled")
    for source, c in result.counts.items():
        table.add_row(source, str(c["labelled"]), str(c["unlabelled"]))
    console.print(table)
    console.print(f"{result.new_since_training} labelled pair(s) since the last DPO run")


@prefs_app.command()
def export(
    out: Path = typer.Option(..., help="the JSON lines file to write (prompt/chosen/rejected)"),
    source: str = typer.Option(
        None, **choice(("pm", "research"), "source"), help="only pairs of this source"
    ),
    rule: str = typer.Option(
        "current",
        **choice(("current", "all"), "rule"),
        help="current: skip research pairs an older labelling rule made; all: write them too",
    ),
    as_json: JsonFlag = False,
) -> None:
    """Write the labelled pairs in TRL's standard preference format (one JSON object a line).

    Example: alphaloop prefs export --out ops.prefs.jsonl --source research --rule current
    """
    result = guarded(ops.prefs.export_preferences, get_settings(), out, source, rule)
    if as_json:
        typer.echo(json.dumps(result.model_dump(mode="json")))
        return
    console.print(f"{result.rows} pair(s) written to {result.path}")
    if result.skipped_old_rule:
        console.print(
            f"{result.skipped_old_rule} research pair(s) labelled by an older rule left out "
            "(--rule all writes them)"
        )
