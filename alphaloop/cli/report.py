"""``alphaloop report``: a session's, a policy's or a walk's tear sheet as one HTML file, or
PNGs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from alphaloop.cli._app import JsonFlag, choice, console, fail, guarded
from alphaloop.ops.requests import WALK_ID
from alphaloop.settings import Settings, get_settings

FORMATS = ("html", "png")


def report(
    session: Annotated[
        str | None,
        typer.Argument(help="the session id or walk id (or give --policy)", show_default=False),
    ] = None,
    policy: Annotated[
        int | None, typer.Option(help="a library policy's id, instead of a session")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="the file: FILE.html, or FILE.png for --format png (one FILE-<figure>.png "
            "per figure); default <home>/charts/tearsheet-<id>.<format>"
        ),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            **choice(FORMATS, "format"),
            help="html: one self-contained file; png: each figure rendered by kaleido",
        ),
    ] = "html",
    as_json: JsonFlag = False,
) -> None:
    """Write a tear sheet: the pick against the default and 1/N on TEST, in one HTML file.

    Equity, drawdown, monthly returns and rolling Sharpe of the pick, the default config and
    1/N on the sealed TEST window, the pick's turnover and weights over time, the go/no-go
    gates with the test that decided each, how the search went (trials, kept, why the pick is
    the pick) and the notes. Plotly is inlined: the file opens offline. --policy ID writes the
    sheet of a library policy (its session, with its trial as the pick). A walk's id writes the
    walk's sheet: its out-of-sample record against the default and 1/N, the pick of each epoch,
    each rule's record and the verdict with the edge it could detect.

    Example: alphaloop report s-20260101-120000-ab12 --out report.html
    """
    from alphaloop.ops.tearsheet import build_tearsheet, check_output, write_tearsheet

    if (session is None) == (policy is None):
        raise fail("give a SESSION or WALK id, or --policy ID (one of the two)", 2)
    settings = get_settings()
    guarded(check_output, out, fmt)
    if session is not None and re.match(WALK_ID, session):
        _walk(settings, session, out, fmt, as_json)
        return
    if as_json:
        drawn = guarded(build_tearsheet, settings, session, policy_id=policy)
    else:
        with console.status("replaying TEST and drawing the tear sheet...", spinner="dots"):
            drawn = guarded(build_tearsheet, settings, session, policy_id=policy)
    written = guarded(write_tearsheet, drawn, settings, out=out, fmt=fmt)
    if as_json:
        typer.echo(json.dumps(_report_json(drawn, written)))
        return
    for path in written.paths:
        console.print(f"tear sheet written to {escape(str(path))}")
    if drawn.sheet.gates_summary:
        console.print(escape(drawn.sheet.gates_summary))


def _report_json(drawn: Any, written: Any) -> dict[str, Any]:
    sheet = drawn.sheet
    return {
        "session_id": sheet.session_id,
        "policy_id": sheet.policy_id,
        "format": written.format,
        "paths": [str(p) for p in written.paths],
        "figures": list(drawn.figures),
        "gates_passed": sheet.gates.passed if sheet.gates is not None else None,
        "gates_summary": sheet.gates_summary,
    }


def _walk(settings: Settings, walk_id: str, out: Path | None, fmt: str, as_json: bool) -> None:
    from alphaloop.ops.tearsheet import write_tearsheet
    from alphaloop.ops.walk_sheet import build_walk_sheet

    drawn = guarded(build_walk_sheet, settings, walk_id)
    written = guarded(write_tearsheet, drawn, settings, out=out, fmt=fmt)
    report = drawn.sheet.report
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "walk_id": walk_id,
                    "format": written.format,
                    "paths": [str(p) for p in written.paths],
                    "figures": list(drawn.figures),
                    "go": report.go,
                    "verdict": report.verdict,
                }
            )
        )
        return
    for path in written.paths:
        console.print(f"tear sheet written to {escape(str(path))}")
    console.print(escape(report.verdict))
