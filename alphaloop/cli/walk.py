"""``alphaloop walk`` (start, resume, show, list): the research loop replayed over history."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer
from rich import box
from rich.markup import escape
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from alphaloop import ops
from alphaloop.cli._app import JsonFlag, console, err_console, guarded
from alphaloop.cli._options import request_command
from alphaloop.cli.research import RESEARCH_CLI, _DefaultToStart
from alphaloop.ops.requests import FILES, WalkRequest
from alphaloop.ops.research import check_proposer, noise_seeds_note
from alphaloop.settings import Settings, get_settings

if TYPE_CHECKING:
    from alphaloop.ops.records import RuleRecord, WalkReport
    from alphaloop.ops.walk import WalkDetail, WalkEvent

walk_app = typer.Typer(
    cls=_DefaultToStart,
    no_args_is_help=True,
    help="Replay the research loop over history: its out-of-sample record.",
)


def _fmt(value: float | None, spec: str = "+.2f") -> str:
    return "-" if value is None else format(value, spec)


def _rules_table(report: WalkReport) -> Table:
    table = Table(
        title="records (each rule's periods end to end)", title_justify="left", box=box.SIMPLE_HEAD
    )
    for column in ("rule", "GO", "Sharpe", "p dflt", "edge", "p 1/N", "edge", "dflt", "moves"):
        table.add_column(column, justify="left" if column == "rule" else "right", no_wrap=True)
    for record in report.records:
        cells = [f"{record.rule}{'*' if record.rule == report.rule else ''}"]
        cells += ["GO" if record.go else "NO-GO", _fmt(record.metrics.get("sharpe"), ".2f")]
        for ref in ("default", "equal_weight"):
            evidence = record.excess[ref]
            p = getattr(getattr(evidence, "test", None), "p_value", None)
            cells += [_fmt(p, ".3f"), _fmt(record.detectable.get(ref))]
        cells += [str(record.n_default), str(record.n_changes)]
        table.add_row(*cells)
    table.caption = (
        "* decides the verdict; p: one-sided paired Sharpe test against the default (dflt) and "
        "1/N; edge: the Sharpe edge it detects with 80% power; dflt: epochs that traded the "
        "default; moves: epochs whose pick changed"
    )
    return table


def _epochs_table(report: WalkReport) -> Table:
    table = Table(
        title=f"epochs ({report.rule} rule), each period's Sharpe",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        show_edge=False,
    )
    widths = {"#": 2, "period": 17, "traded": 8, "pick": 5, "dflt": 5, "1/N": 5, "session": 22}
    for column, width in widths.items():
        right = column in ("pick", "dflt", "1/N")
        table.add_column(
            column, justify="right" if right else "left", no_wrap=True, min_width=width
        )
    for line in report.epochs:
        traded = "default" if line.trial_id is None else f"id {line.trial_id}"
        if line.changed:
            traded += "*"
        same_year = line.start[:4] == line.end[:4]
        table.add_row(
            str(line.epoch),
            f"{line.start}..{line.end[5:] if same_year else line.end}",
            traded,
            _fmt(line.sharpe_pick, ".2f"),
            _fmt(line.sharpe_default, ".2f"),
            _fmt(line.sharpe_equal_weight, ".2f"),
            line.session_id,
        )
    table.caption = "*: a new pick"
    return table


def _record_notes(record: RuleRecord) -> list[str]:
    return [f"{r.gate}: {r.reason}" for r in record.gates.failed]


def show_detail(detail: WalkDetail, as_json: bool) -> None:
    """Prints a walk: its report when it has one, else where it is."""
    walk = detail.walk
    if as_json:  # as the API answers GET /api/walks/{id}
        typer.echo(ops.walk.walk_view(detail).model_dump_json())
        return
    console.print(f"walk [bold]{walk.id}[/bold]: {escape(walk.goal)} ({walk.status.value})")
    report = walk.report
    if report is None:
        traded = sum(e.result is not None for e in detail.epochs)
        console.print(f"{len(detail.epochs)} epoch(s) begun, {traded} traded")
        if walk.error:
            console.print(f"error: {escape(walk.error)}")
        if detail.resume_command:
            console.print(f"resume it with `{detail.resume_command}`")
        return
    console.print(_epochs_table(report))
    console.print(_rules_table(report))
    own = report.record()
    lines = [
        f"out of sample: {report.first_day}..{report.last_day}, {report.n_days} days, "
        f"{len(report.epochs)} {report.cadence} epochs, each day looked at once",
        f"picks ({report.rule} rule): the default in {own.n_default} of {len(report.epochs)} "
        f"epochs; the pick changed {own.n_changes} time(s)",
        f"preference pairs labelled by the period after their epoch: {report.pairs.n_pairs}"
        + (
            f"; the period after that agreed on {report.pairs.n_agree} of {report.pairs.n_checked}"
            if report.pairs.n_checked
            else ""
        ),
        *_record_notes(own),
        report.verdict,
    ]
    console.print(Panel("\n".join(escape(x) for x in lines), title="walk verdict"))


def _progress_view(n_epochs: int):
    progress = Progress(
        TextColumn("[bold]epochs"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()
    )
    task = progress.add_task("epochs", total=n_epochs or None)

    def on_event(event: WalkEvent) -> None:
        if event.name == "epoch_begun":
            progress.update(task, total=event.n_epochs)
            progress.console.print(
                f"epoch {event.epoch}: {event.first_day}..{event.last_day} ({event.session_id})"
            )
        elif event.name == "epoch_traded":
            progress.update(task, total=event.n_epochs)
            progress.advance(task)

    return progress, on_event


def _run(walk_id: str, settings: Settings, as_json: bool) -> None:
    if as_json:
        guarded(ops.walk.run_walk, walk_id, settings)
    else:
        done = sum(e.result is not None for e in ops.walk.get_walk(walk_id, settings).epochs)
        progress, on_event = _progress_view(0)
        progress.update(progress.task_ids[0], completed=done)
        with progress:
            guarded(ops.walk.run_walk, walk_id, settings, on_event)
    show_detail(guarded(ops.walk.get_walk, walk_id, settings), as_json)


@walk_app.command("start")
@request_command(WalkRequest, cli=RESEARCH_CLI, context={FILES: True})
def walk_start(request: WalkRequest, as_json: JsonFlag = False) -> None:
    """Start a walk: a research session at each epoch, its pick traded over the next period.

    At each epoch a research session runs on the data cut there; its pick trades the period
    after it beside the default and 1/N, and the verdict tests those periods end to end and
    says how large an edge they could detect.

    A session answers "which config, on this window?"; a walk answers "had I run this loop
    since then, would it have beaten the default and 1/N?". With --workers N, N epochs run
    side by side. A killed walk resumes with `alphaloop walk resume WALK_ID`.

    Example: alphaloop walk "maximise Sharpe" --data sp500 --mode cufolio_only --budget 20
    --cadence yearly --workers 2
    """
    settings = get_settings()
    spec = guarded(ops.walk.check_walk, request)
    guarded(check_proposer, request.proposer, settings)
    note = noise_seeds_note(spec.session.noise_seeds)
    if note:
        err_console.print(escape(f"warning: {note}"))
    walk_id = guarded(ops.walk.start_walk, spec, settings)
    if not as_json:
        console.print(f"walk [bold]{walk_id}[/bold]: {escape(spec.session.goal)}")
    _run(walk_id, settings, as_json)


@walk_app.command("resume")
def walk_resume(
    walk: str = typer.Argument(..., help="walk id"),
    as_json: JsonFlag = False,
) -> None:
    """Continue a walk after a crash, a kill or an error; no epoch or trial runs twice.

    Epochs already traded are read back and an interrupted epoch's session resumes where its
    journal says.

    Example: alphaloop walk resume w-20260101-120000-ab12
    """
    settings = get_settings()
    guarded(ops.walk.check_resume, walk, settings)
    _run(walk, settings, as_json)


@walk_app.command("show")
def walk_show(
    walk: str = typer.Argument(..., help="walk id"),
    as_json: JsonFlag = False,
) -> None:
    """Show a walk: its epochs, each rule's record and the verdict.

    Each rule's record is tested against the default and 1/N; the verdict says the edge the
    record could detect.

    Example: alphaloop walk show w-20260101-120000-ab12 --json
    """
    show_detail(guarded(ops.walk.get_walk, walk, get_settings()), as_json)


@walk_app.command("list")
def walk_list(as_json: JsonFlag = False) -> None:
    """List the walks, newest first.

    Example: alphaloop walk list
    """
    walks = guarded(ops.walk.list_walks, get_settings())
    if as_json:
        typer.echo(json.dumps([w.model_dump(mode="json", exclude={"report"}) for w in walks]))
        return
    table = Table(title="walks", title_justify="left")
    for column in ("walk", "status", "goal", "verdict"):
        table.add_column(column)
    for w in walks:
        verdict = w.report.verdict.split(";")[0] if w.report else (w.error or "")
        table.add_row(w.id, w.status.value, escape(w.goal), escape(verdict))
    console.print(table)
