"""``alphaloop validate``: the validation suite of a session (PBO, deflated Sharpe, walk-forward,
stress, go/no-go gates), journaled and shown."""

from __future__ import annotations

import json
from contextlib import nullcontext
from typing import Any

import typer
from pydantic import ValidationError

from alphaloop import ops
from alphaloop.cli import views
from alphaloop.cli._app import JsonFlag, console, fail, guarded
from alphaloop.settings import get_settings

GATE_FIELDS = (
    "min_sharpe",
    "max_drawdown",
    "min_hit_rate",
    "min_profit_factor",
    "min_deflated_sharpe",
    "max_pbo",
    "max_excess_p_value",
    "min_excess_deflated_sharpe",
    "min_walk_forward_share",
)


def parse_gates(items: list[str]) -> Any:
    """``--gate min_sharpe=1.0 --gate max_pbo=off`` as the gates' thresholds, or exit 2."""
    values: dict[str, float | None] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in GATE_FIELDS:
            raise fail(f"--gate takes NAME=VALUE with NAME one of {', '.join(GATE_FIELDS)}", 2)
        if value.strip().lower() == "off":
            values[key] = None
            continue
        try:
            values[key] = float(value)
        except ValueError:
            raise fail(f"--gate {key} takes a number or 'off', got {value!r}", 2) from None
    try:
        return ops.Gates(**values)
    except ValidationError as err:
        first = err.errors()[0]
        raise fail(f"--gate {first['loc'][0]}: {first['msg']}", 2) from None


def validate(
    session: str = typer.Argument(..., help="session id"),
    blocks: int = typer.Option(16, "--blocks", help="CSCV blocks S (even), 12,870 splits at 16"),
    windows: int = typer.Option(4, "--windows", min=1, help="walk-forward windows per scheme"),
    gate: list[str] = typer.Option(
        [], "--gate", help="a gate threshold, NAME=VALUE or NAME=off (repeatable)"
    ),
    oos_start: str | None = typer.Option(
        None, "--oos-start", help="walk-forward and stress from this date (unseen data)"
    ),
    as_json: JsonFlag = False,
) -> None:
    """Validate a session: PBO, deflated Sharpe, walk-forward, stress and the go/no-go gates.

    PBO by CSCV over its search trials, the deflated Sharpe (N and N effective), walk-forward
    of the reported config (anchored and rolling windows) and stress (+50% cost, crisis
    windows) on days the search never scored, next to equal weight, and pass/fail per go/no-go
    gate, the pick's excess over the default and 1/N included.

    Unseen data starts at TEST, or at --oos-start (say, the first of prices appended to the
    session's data file since). The report is journaled; `alphaloop journal` and `alphaloop
    chart validation` show it.

    Example: alphaloop validate s-20260101-120000-ab12 --gate min_sharpe=1.0 --json
    """
    if blocks < 2 or blocks % 2:
        raise fail(f"--blocks takes an even number >= 2 (CSCV halves the blocks), got {blocks}", 2)
    gates = parse_gates(gate)
    settings = get_settings()
    spinner = console.status("validating...", spinner="dots") if not as_json else nullcontext()
    with spinner as status:

        def on_step(name: str) -> None:
            if status is not None:
                status.update(f"validating: {name}...")

        report = guarded(
            ops.validate_session,
            settings,
            session,
            n_blocks=blocks,
            n_windows=windows,
            gates=gates,
            on_step=on_step,
            oos_start=oos_start,
        )
    if as_json:
        typer.echo(json.dumps(report.journaled()))
        return
    console.print(views.validation_panel(report))
