"""Reading the journal: ``alphaloop sessions``, ``status`` and ``journal``."""

from __future__ import annotations

import json

import typer
from rich.markup import escape

from alphaloop import ops
from alphaloop.cli import views
from alphaloop.cli._app import JsonFlag, console, guarded
from alphaloop.ops import rows as ops_rows
from alphaloop.settings import Settings, get_settings

_START = 'start one with `alphaloop research "GOAL"`'


def sessions(as_json: JsonFlag = False) -> None:
    """List research sessions, newest first.

    "best" is the session's pick on validation, as the page says it: the search trial that
    beat the default config, or the default's run when none did ("default"); while a session
    runs, its incumbent ("so far"). A session whose process died (a kill -9) is shown
    interrupted, with how to resume it.

    Example: alphaloop sessions
    """
    settings = get_settings()
    rows = guarded(ops.sessions.list_sessions, settings, with_best=True)
    best = {r.session.id: r.best for r in rows}
    if as_json:
        typer.echo(
            json.dumps(
                [
                    {
                        **r.session.model_dump(mode="json"),
                        "counted_trials": r.counted_trials,
                        "resume": r.resume,
                        "best": (b := best[r.session.id]) and b.model_dump(mode="json"),
                    }
                    for r in rows
                ]
            )
        )
        return
    if not rows:
        console.print(f"no sessions yet in {escape(str(settings.home))}; {_START}")
        return
    counts = {r.session.id: r.counted_trials for r in rows}
    console.print(views.sessions_table([r.session for r in rows], counts, best))
    for r in rows:
        if r.resume:
            console.print(views.resume_line(r.session, r.counted_trials, r.resume))


def status(
    session: str = typer.Argument(None, help="session id (default: the newest)"),
    as_json: JsonFlag = False,
) -> None:
    """Show where a session is: status, trials done, best so far, the last trials.

    A trial still training shows its live curve: how many points, and the latest.

    A session whose process died shows as interrupted, with the command that resumes it.

    Example: alphaloop status
    """
    settings = get_settings()
    found = guarded(ops.sessions.session_status, settings, session)
    if found is None:
        if as_json:
            none = {"session": None, "counted_trials": 0, "best": None, "running": []}
            typer.echo(json.dumps({**none, "resume": None}))
        else:
            console.print(f"no sessions yet in {escape(str(settings.home))}; {_START}")
        return
    s = found.session
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "session": s.model_dump(mode="json"),
                    "counted_trials": found.counted_trials,
                    "best": found.best.model_dump(mode="json") if found.best else None,
                    "running": [r.model_dump(mode="json") for r in found.running],
                    "resume": found.resume,
                    "llm_mode": found.llm_mode,
                }
            )
        )
        return
    console.print(views.session_header(s))
    console.print(f"trials: {found.counted_trials}/{s.budget} counted, {len(found.trials)} rows")
    if found.llm_mode:
        console.print(f"LLM proposals asked as: {LLM_MODES.get(found.llm_mode, found.llm_mode)}")
    last = found.trials[-10:]
    shown = ops_rows.shown_statuses(settings, last)
    console.print(views.trials_table(last, title="last trials", shown=shown))
    for r in found.running:
        console.print(views.live_curve_text(r.trial, alive=r.process_alive))
    if found.resume:
        console.print(views.resume_line(s, found.counted_trials, found.resume))


LLM_MODES = {
    "tools": "tools (a forced propose_config_delta call)",
    "json_schema": "json_schema (JSON in the text under response_format; tool calls were "
    "refused or ignored)",
    "json_text": "json_text (plain JSON instructions; tools and json_schema were refused or "
    "ignored)",
}


def review(session_id: str, settings: Settings, as_json: bool, every_trial: bool = True) -> None:
    """Prints a session's review: leaderboard, every trial with its clips (or, without
    ``every_trial``, the command that lists them), the test result with the deflated Sharpe, PBO
    and gates, and the newest `alphaloop validate` report."""
    r = guarded(ops.sessions.session_review, settings, session_id)
    validation = guarded(ops.validate.latest_validation, settings, session_id)
    understood = guarded(ops.goal.session_understood, settings, session_id)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "session": r.session.model_dump(mode="json"),
                    "counted_trials": r.counted_trials,
                    "leaderboard": [t.model_dump(mode="json") for t in r.leaderboard],
                    "trials": [
                        {
                            **t.model_dump(mode="json"),
                            "clips": [c.model_dump(mode="json") for c in r.clips.get(t.id, [])],
                        }
                        for t in r.trials
                    ],
                    "final": r.session.final.journaled() if r.session.final else None,
                    "chart_reads": [c.model_dump(mode="json") for c in r.chart_reads],
                    "validation": validation.journaled() if validation else None,
                    "understood": understood.model_dump(mode="json") if understood else None,
                }
            )
        )
        return
    console.print(views.session_header(r.session))
    for line in understood.lines() if understood else ():
        console.print(escape(line))
    shown = ops_rows.shown_statuses(settings, [*r.leaderboard, *r.trials])
    console.print(
        views.trials_table(r.leaderboard, r.clips, title="leaderboard (validation)", shown=shown)
    )
    if every_trial:
        console.print(views.trials_table(r.trials, r.clips, title="every trial", shown=shown))
    else:
        console.print(f"every trial: `alphaloop journal {session_id}`")
    if r.session.final:
        console.print(views.final_panel(r.session))
    if validation:
        console.print(views.validation_panel(validation))
    if r.chart_reads:
        console.print(views.chart_reads_table(r.chart_reads))


def journal(
    session: str = typer.Argument(..., help="session id"),
    as_json: JsonFlag = False,
) -> None:
    """Review a session: leaderboard, every trial with its delta and clips, the test result.

    The test result comes with the deflated Sharpe (N and N effective), PBO and pass/fail per
    go/no-go gate; the newest `alphaloop validate` report follows, and the readings of the
    session's charts (`alphaloop chart ... --interpret`) are listed last.

    Example: alphaloop journal s-20260101-120000-ab12 --json
    """
    review(session, get_settings(), as_json)
