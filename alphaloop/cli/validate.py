"""``alphaloop validate``: the validation suite of a session (PBO, deflated Sharpe, walk-forward,
stress, go/no-go gates), journaled and shown."""

from __future__ import annotations

import json
from contextlib import nullcontext
from typing import get_args

import typer

from alphaloop import ops
from alphaloop.cli import views
from alphaloop.cli._app import JsonFlag, console, fail, guarded
from alphaloop.cli._options import Cli, pairs, request_command
from alphaloop.ops.requests import GateName, ValidateRequest
from alphaloop.settings import get_settings


def _gate(name: str, value: str) -> float | None:
    if value.lower() == "off":
        return None
    try:
        return float(value)
    except ValueError:
        raise fail(f"--gate {name} takes a number or 'off', got {value!r}", 2) from None


# The gates' thresholds on the command line, for validate and research alike.
GATES_CLI = Cli(
    flag="--gate",
    type=list[str],
    parse=pairs("--gate", _gate),
    default=[],
    metavar="NAME=VALUE",
    help="a gate threshold, NAME=VALUE or NAME=off (repeatable): " + ", ".join(get_args(GateName)),
)
VALIDATE_CLI = {
    "blocks": Cli(flag="--blocks"),
    "windows": Cli(flag="--windows"),
    "gates": GATES_CLI,
    "oos_start": Cli(flag="--oos-start"),
}


@request_command(ValidateRequest, cli=VALIDATE_CLI)
def validate(
    request: ValidateRequest,
    session: str = typer.Argument(..., help="session id"),
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
    gates = request.gate_thresholds() if request.gates else None
    settings = get_settings()
    spinner = console.status("validating...", spinner="dots") if not as_json else nullcontext()
    with spinner as status:

        def on_step(name: str) -> None:
            if status is not None:
                status.update(f"validating: {name}...")

        report = guarded(
            ops.validate.validate_session,
            settings,
            session,
            n_blocks=request.blocks,
            n_windows=request.windows,
            gates=gates,
            on_step=on_step,
            oos_start=None if request.oos_start is None else request.oos_start.isoformat(),
        )
    if as_json:
        typer.echo(json.dumps(report.journaled()))
        return
    console.print(views.validation_panel(report))
