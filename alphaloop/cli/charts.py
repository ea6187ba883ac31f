"""``alphaloop chart``: draw a chart of the journal as HTML or PNG, and optionally read it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from alphaloop import ops
from alphaloop.cli import views
from alphaloop.cli._app import JsonFlag, console, err_console, fail
from alphaloop.exceptions import AlphaloopError, exit_code_of
from alphaloop.settings import Settings, get_settings

KIND_HELP = "training_curve, research_progress, ratio_curve, equity_curves, weights or validation"


@contextmanager
def _chart_errors() -> Iterator[None]:
    """Our errors as a message and the exit code of the error table (2: bad input, 1:
    failure)."""
    try:
        yield
    except AlphaloopError as err:
        raise fail(str(err), exit_code_of(err)) from None


def _check_inputs(
    kind: str, out: Path | None, width: int | None, height: int | None, settings: Settings
) -> tuple[str, tuple[int, int]]:
    """The chart kind and PNG size, or exit 2 before anything is drawn."""
    with _chart_errors():
        name = ops.charts.chart_kind(kind)
        _, size = ops.charts.check_export(out, width, height)
    if not settings.journal_path.exists():
        raise fail(
            f"no journal at {settings.journal_path}; run `alphaloop research` or "
            "`alphaloop train` first (or set ALPHALOOP_HOME)",
            2,
        )
    return name, size


def _warn(message: str) -> None:
    err_console.print(f"[yellow]warning:[/yellow] {escape(message)}")


def chart(
    kind: str = typer.Argument(..., help=KIND_HELP),
    session: str = typer.Option(None, "--session", help="session id (default: the newest)"),
    trial: int = typer.Option(
        None,
        "--trial",
        help="trial index within the session, the # column of `alphaloop journal` "
        "(default: the session's best trial, or its trial with a curve)",
    ),
    out: Path = typer.Option(
        None, "--out", help="FILE.html or FILE.png (default: <home>/charts/<chart>.html)"
    ),
    width: int = typer.Option(None, help="PNG width in pixels (default 1100)"),
    height: int = typer.Option(None, help="PNG height in pixels (default 620)"),
    interpret: bool = typer.Option(
        False,
        "--interpret",
        help="read the chart in 4-6 bullets: the vision model of ALPHALOOP_VLM_MODEL if set, "
        "else the embedded data-grounded reader; the read is journaled",
    ),
    as_json: JsonFlag = False,
) -> None:
    """Draw a chart of the journal as HTML or PNG, and optionally read it in 4-6 bullets.

    PNG needs a Chromium (`apt-get install chromium`); HTML does not.

    Example: alphaloop chart research_progress --session s-20260101-120000-ab12 --out p.png
    """
    settings = get_settings()
    name, size = _check_inputs(kind, out, width, height, settings)

    def spinner(text: str) -> Any:
        return console.status(text, spinner="dots") if not as_json else nullcontext()

    with _chart_errors():
        with spinner(f"drawing {name}..."):
            drawn = ops.charts.build_chart(name, settings, session_id=session, trial_idx=trial)
        exported = ops.charts.export_chart(drawn, settings, out=out, size=size)
        read = None
        if interpret:
            with spinner("reading the chart..."):
                read = ops.charts.interpret_chart(
                    drawn, settings, png=exported.png, on_warning=_warn
                )
    if as_json:
        typer.echo(json.dumps(_chart_json(drawn, exported, read)))
        return
    console.print(f"{name} written to {escape(str(exported.path))}")
    if read is not None:
        console.print(views.chart_read_panel(read))


def _chart_json(drawn: Any, exported: ops.charts.ExportedChart, read: Any) -> dict[str, Any]:
    return {
        "kind": drawn.kind,
        "session_id": drawn.session_id,
        "trial_id": drawn.trial_id,
        "trial_idx": drawn.trial_idx,
        "out": str(exported.path),
        "format": exported.format,
        "traces": [
            {"name": t.name, "points": len(t.y) if t.y is not None else 0}
            for t in drawn.figure.data
        ],
        "read": read.model_dump(mode="json") if read else None,
    }
