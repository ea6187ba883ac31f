"""Reading the journal: ``alphaloop sessions``, ``status`` and ``journal``."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.markup import escape

from alphaloop.cli import views
from alphaloop.cli._app import console, read_journal
from alphaloop.journal import Journal, SessionRecord, pid_alive
from alphaloop.settings import Settings, get_settings

# The proposer of manual training runs (``alphaloop.meta_agent.manual.MANUAL_PROPOSER``, not
# imported here: that module loads torch, and reading the journal should not).
_MANUAL = "manual"
_START = 'start one with `alphaloop research "GOAL"`'


def resume_command(s: SessionRecord) -> str | None:
    """The command that continues an interrupted research session (a crash, a kill -9), or None
    when there is nothing to resume (or, for a manual training run, no way to)."""
    if s.status != "interrupted" or s.proposer == _MANUAL:
        return None
    return f"alphaloop research resume {s.id}"


def sessions(as_json: bool = typer.Option(False, "--json")) -> None:
    """List research sessions, newest first.

    A session whose process died (a kill -9) is shown interrupted, with how to resume it.

    Example: alphaloop sessions
    """
    settings = get_settings()

    def read(j: Journal):
        rows = j.list_sessions()
        return rows, {s.id: j.counted_trials(s.id) for s in rows}

    # No journal yet (a first session still loading its data) is no sessions, not an error.
    rows, counts = read_journal(settings, read) if settings.journal_path.exists() else ([], {})
    if as_json:
        typer.echo(
            json.dumps(
                [
                    {
                        **s.model_dump(mode="json"),
                        "counted_trials": counts[s.id],
                        "resume": resume_command(s),
                    }
                    for s in rows
                ]
            )
        )
        return
    if not rows:
        console.print(f"no sessions yet in {escape(str(settings.home))}; {_START}")
        return
    console.print(views.sessions_table(rows, counts))
    for s in rows:
        if command := resume_command(s):
            console.print(f"{s.id} was interrupted; resume it with `{command}`")


def status(
    session: str = typer.Argument(None, help="session id (default: the newest)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Show where a session is: status, trials done, best so far, the last trials.

    A trial still training shows its live curve: how many points, and the latest.

    A session whose process died shows as interrupted, with the command that resumes it.

    Example: alphaloop status
    """
    settings = get_settings()

    def read(j: Journal):
        sid = session
        if sid is None:
            rows = j.list_sessions()
            if not rows:
                return None
            sid = rows[0].id
        return j.get_session(sid), j.trials(sid), j.counted_trials(sid), j.leaderboard(sid, 1)

    # Without an id, no journal or an empty one means no session has started yet (a first one
    # may be loading its data): that is an answer, not an error.
    exists = session is not None or settings.journal_path.exists()
    found = read_journal(settings, read) if exists else None
    if found is None:
        if as_json:
            none = {"session": None, "counted_trials": 0, "best": None, "running": []}
            typer.echo(json.dumps({**none, "resume": None}))
        else:
            console.print(f"no sessions yet in {escape(str(settings.home))}; {_START}")
        return
    s, trials, counted, top = found
    running = [t for t in trials if t.status == "running"]
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "session": s.model_dump(mode="json"),
                    "counted_trials": counted,
                    "best": top[0].model_dump(mode="json") if top else None,
                    "running": [_live(t) for t in running],
                    "resume": resume_command(s),
                }
            )
        )
        return
    console.print(views.session_header(s))
    console.print(f"trials: {counted}/{s.budget} counted, {len(trials)} rows")
    console.print(views.trials_table(trials[-10:], title="last trials"))
    for t in running:
        console.print(views.live_curve_text(t, alive=pid_alive(t.owner_pid)))
    if command := resume_command(s):
        console.print(f"{escape(s.error or 'interrupted')}; resume it with `{command}`")


def _live(trial: Any) -> dict[str, Any]:
    """A running trial and where its training curve is."""
    curve = trial.curve or []
    return {
        "id": trial.id,
        "idx": trial.idx,
        "kind": trial.kind,
        "started_at": trial.started_at,
        "curve_points": len(curve),
        "latest": curve[-1] if curve else None,
        # A run killed hard leaves its row running; say so rather than show it as live.
        "process_alive": pid_alive(trial.owner_pid),
    }


def review(session_id: str, settings: Settings, as_json: bool) -> None:
    def read(j: Journal):
        s = j.get_session(session_id)
        clips = j.session_clips(session_id)
        by_trial: dict[int, list[Any]] = {}
        for c in clips:
            by_trial.setdefault(c.trial_id, []).append(c)
        return (
            s,
            j.trials(session_id),
            j.leaderboard(session_id, 10),
            by_trial,
            j.counted_trials(session_id),
            j.chart_reads(session_id),
        )

    s, trials, board, clips, counted, reads = read_journal(settings, read)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "session": s.model_dump(mode="json"),
                    "counted_trials": counted,
                    "leaderboard": [t.model_dump(mode="json") for t in board],
                    "trials": [
                        {
                            **t.model_dump(mode="json"),
                            "clips": [c.model_dump(mode="json") for c in clips.get(t.id, [])],
                        }
                        for t in trials
                    ],
                    "final": s.final,
                    "chart_reads": [r.model_dump(mode="json") for r in reads],
                }
            )
        )
        return
    console.print(views.session_header(s))
    console.print(views.trials_table(board, clips, title="leaderboard (validation)"))
    console.print(views.trials_table(trials, clips, title="every trial"))
    if s.final:
        console.print(views.final_panel(s))
    if reads:
        console.print(views.chart_reads_table(reads))


def journal(
    session: str = typer.Argument(..., help="session id"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Review a session: leaderboard, every trial with its delta and clips, the test result.

    The readings of the session's charts (`alphaloop chart ... --interpret`) are listed last.

    Example: alphaloop journal s-20260101-120000-ab12 --json
    """
    review(session, get_settings(), as_json)
