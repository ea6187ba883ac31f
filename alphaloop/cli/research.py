"""``alphaloop research`` (start, resume, stop) with its live view."""

from __future__ import annotations

import json
from collections import deque
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Group
from rich.live import Live
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from alphaloop import ops
from alphaloop.cli import views
from alphaloop.cli._app import (
    JsonFlag,
    console,
    err_console,
    fail,
    guarded,
    parse_duration,
    parse_symbols,
    training_note,
)
from alphaloop.cli._options import Cli, request_command
from alphaloop.cli.review import review
from alphaloop.cli.validate import GATES_CLI
from alphaloop.ops import rows as ops_rows
from alphaloop.ops.requests import FILES, ResearchRequest, ResumeRequest
from alphaloop.ops.research import (
    check_proposer,
    folds_note,
    noise_seeds_note,
    session_spec,
)
from alphaloop.settings import Settings, get_settings

if TYPE_CHECKING:
    from alphaloop.ops.research import LoopEvent


class _DefaultToStart(typer.core.TyperGroup):
    """``alphaloop research "GOAL" ...`` runs ``start``; ``resume`` / ``stop`` are subcommands."""

    def parse_args(self, ctx, args):  # type: ignore[no-untyped-def]
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["start", *args]
        return super().parse_args(ctx, args)


research_app = typer.Typer(
    cls=_DefaultToStart, no_args_is_help=True, help="Run, resume or stop a research session."
)


def _live_view(budget: int):
    progress = Progress(
        TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()
    )
    task = progress.add_task("trials", total=budget)
    recent: deque[Any] = deque(maxlen=8)
    state: dict[str, Any] = {"running": "", "shown": {}}

    def render() -> Group:
        table = views.trials_table(list(recent), title="last trials", shown=state["shown"])
        return Group(progress, table, state["running"])

    live = Live(render(), console=console, refresh_per_second=4, transient=False)

    def on_event(event: LoopEvent) -> None:
        if event.name == "trial_started":
            changes = views.describe_changes(event.proposal.changes if event.proposal else None)
            state["running"] = f"running trial {event.idx} ({event.kind}): {changes}"
        elif event.name == "trial_finished":
            recent.append(event.trial)
            state["shown"].update(ops_rows.shown_statuses(get_settings(), [event.trial]))
            if event.trial.kind == "search" and event.trial.counted:
                progress.advance(task)
            state["running"] = ""
        elif event.name == "finalized":
            state["running"] = "finalized"
        live.update(render())

    return live, on_event, progress, task


def _run_session_view(
    session_id: str, settings: Settings, as_json: bool, move: ResumeRequest | None = None
) -> None:
    found = guarded(ops.sessions.session_status, settings, session_id)
    if found is None:  # only when no id is given; kept for the type checker
        raise fail(f"no session {session_id!r}", 2)
    session, done = found.session, found.counted_trials
    if as_json:
        guarded(ops.research.run_session, session_id, settings, **_place(move))
    else:
        console.print(f"session [bold]{session_id}[/bold]: {escape(session.goal)}")
        live, on_event, progress, task = _live_view(session.budget)
        progress.update(task, completed=done)
        with live:
            guarded(ops.research.run_session, session_id, settings, on_event, **_place(move))
        # Off a terminal, Live leaves its last frame without a line break.
        console.line()
    # The live view showed the trials as they ran: the end shows the leaderboard and the result.
    review(session_id, settings, as_json, every_trial=False)


def _place(move: ResumeRequest | None) -> dict[str, Any]:
    """Where a resume runs the session's trials from now on (nothing: where they ran)."""
    return {} if move is None else {"workers": move.workers, "ray_address": move.ray_address}


def _duration(text: str) -> float | None:
    return parse_duration(text)


# How the research request's fields read on the command line (the rest: --field-name VALUE).
RESEARCH_CLI = {
    "goal": Cli(argument=True),
    "time_budget_s": Cli(
        flag="--time-budget",
        type=str,
        parse=_duration,
        help="stop after this much trial time, with a unit (90s, 10m, 1h30m)",
    ),
    "symbols": Cli(
        type=str, parse=parse_symbols, help="comma-separated subset of the data's columns"
    ),
    "gates": GATES_CLI,
}


@research_app.command("start")
@request_command(ResearchRequest, cli=RESEARCH_CLI, context={FILES: True})
def research_start(request: ResearchRequest, as_json: JsonFlag = False) -> None:
    """Start a research session.

    With --json there is no live view: the review is printed as JSON at the end. With
    --workers N, N trials run at once; verdicts are still given in trial order.

    The limits written in the goal are read as their flags would set them ("max drawdown
    under 15%" as --max-drawdown 0.15, "turnover below 2" as --max-turnover 2, "Sharpe above
    1" as --gate min_sharpe=1, "maximise Sortino" as --metric sortino); a flag given wins, and
    a phrase that looks like a limit but is not understood is named back.

    Example: alphaloop research "maximise Sharpe, max drawdown under 15%" --mode cufolio_only
    --budget 20 --folds 3 --workers 2
    """
    settings = get_settings()
    guarded(check_proposer, request.proposer, settings)
    request, understood = guarded(ops.goal.understand_goal, request, settings)
    spec = guarded(session_spec, request)
    # What the goal set, on stderr with --json (stdout holds the one JSON document).
    for line in understood.lines():
        (err_console if as_json else console).print(escape(line))
    for note in (noise_seeds_note(spec.noise_seeds), folds_note(spec.folds)):
        if note:
            err_console.print(escape(f"warning: {note}"))
    session_id = guarded(ops.research.start_session, spec, settings, understood)
    training = training_note(spec.trial_budget) if request.mode != "cufolio_only" else None
    if training and not as_json:
        console.print(training)
    _run_session_view(session_id, settings, as_json)


@research_app.command("resume")
@request_command(ResumeRequest, cli={"session_id": Cli(argument=True)})
def research_resume(request: ResumeRequest, as_json: JsonFlag = False) -> None:
    """Continue a session after a crash, a kill or a stop, from its next trial.

    A stopped session runs the rest of its budget, then is finalized again. With --ray-address
    and --workers the rest runs elsewhere: on another Ray cluster, or here (local).

    Example: alphaloop research resume s-20260101-120000-ab12 --ray-address local --workers 2
    """
    settings = get_settings()
    guarded(ops.research.check_resume, request.session_id, settings)
    _run_session_view(request.session_id, settings, as_json, request)


@research_app.command("stop")
def research_stop(
    session: str = typer.Argument(..., help="session id"),
    as_json: JsonFlag = False,
) -> None:
    """Ask a running session to stop after its current trial (finalize still runs).

    A session whose process is gone (finished, or killed) is not running: exit 2.
    With --json it prints {"session", "status"}.

    Example: alphaloop research stop s-20260101-120000-ab12
    """

    settings = get_settings()
    stopped = guarded(ops.research.stop_session, session, settings)
    if as_json:
        typer.echo(json.dumps({"session": session, "status": stopped.status.value}))
        return
    console.print(f"stop requested for {session}; it ends after its current trial")
