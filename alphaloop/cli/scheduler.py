"""``alphaloop scheduler``: list the jobs, run one now, or start the clock."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import typer
from rich.markup import escape

from alphaloop import ops
from alphaloop.cli._app import JsonFlag, console, fail, guarded
from alphaloop.cli.views import FitTable
from alphaloop.exceptions import Conflict, exit_code_of
from alphaloop.settings import get_settings

scheduler_app = typer.Typer(
    no_args_is_help=True,
    help="The scheduler: nightly preference extract, DPO check, weekly retrain, daily tick.",
)


def _minute(stamp: str) -> str:
    """An ISO time in UTC to the minute, as the title says UTC: 2026-11-30 22:00."""
    return datetime.fromisoformat(stamp).astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def _jobs_table(jobs: list[ops.schedule.JobInfo]) -> FitTable:
    table = FitTable(title="scheduled jobs (UTC)")
    for col in ("job", "cron", "next run", "last run", "outcome"):
        # a cron expression and a time read whole or not at all
        table.add_column(col, no_wrap=col in ("cron", "next run", "last run"))
    for j in jobs:
        last = j.last_run
        table.add_row(
            j.name,
            j.cron,
            _minute(j.next_run) if j.next_run else "-",
            _minute(last.started_at) if last else "never",
            last.outcome.value if last else "-",
        )
    return table


@scheduler_app.command("list")
def scheduler_list(as_json: JsonFlag = False) -> None:
    """List the jobs with their cron, next run time and last run.

    Cron expressions are settings: ALPHALOOP_CRON_PREFS_EXTRACT, ALPHALOOP_CRON_DPO_CHECK,
    ALPHALOOP_CRON_RETRAIN, ALPHALOOP_CRON_PM_TICK (five fields, UTC); the daily tick ticks
    ALPHALOOP_PM_BOOKS on the trading days of ALPHALOOP_PM_CALENDAR.

    Example: alphaloop scheduler list --json
    """
    settings = get_settings()
    jobs = guarded(ops.schedule.list_jobs, settings)
    holder = ops.schedule.scheduler_holder(settings)
    if as_json:
        typer.echo(
            json.dumps({"scheduler_pid": holder, "jobs": [j.model_dump(mode="json") for j in jobs]})
        )
        return
    console.print(_jobs_table(jobs))
    console.print(
        f"scheduler running (pid {holder})"
        if holder
        else "no scheduler running for this home; start one with `alphaloop scheduler start`"
    )


@scheduler_app.command("run-now")
def scheduler_run_now(
    job: str = typer.Argument(..., help="prefs_extract, dpo_check, retrain or pm_tick"),
    as_json: JsonFlag = False,
) -> None:
    """Run one job now, in this process; the run is journaled with trigger manual.

    Exit 1 when the job failed (its error is journaled too).

    Example: alphaloop scheduler run-now prefs_extract
    """
    settings = get_settings()
    guarded(ops.schedule.job_spec, job)
    run = guarded(ops.schedule.run_job, settings, job)
    if as_json:
        typer.echo(json.dumps(run.model_dump(mode="json")))
    else:
        console.print(
            f"{run.job}: {run.outcome.value}" + (f" ({escape(run.summary)})" if run.summary else "")
        )
        if run.error:
            console.print(escape(run.error.splitlines()[0]))
    if run.outcome == "failed":
        raise typer.Exit(1)


@scheduler_app.command("start")
def scheduler_start(as_json: JsonFlag = False) -> None:
    """Run the jobs on their clock until stopped (Ctrl-C or SIGTERM).

    One scheduler per alphaloop home: a second start exits 2 naming the running one's pid.
    With --json the jobs are printed once, as one JSON document, when the clock starts.

    Example: alphaloop scheduler start
    """
    from alphaloop.scheduler import run_scheduler

    settings = get_settings()
    jobs = guarded(ops.schedule.list_jobs, settings)

    def on_start(_scheduler) -> None:  # type: ignore[no-untyped-def]
        if as_json:
            typer.echo(
                json.dumps({"pid": _pid(), "jobs": [j.model_dump(mode="json") for j in jobs]})
            )
        else:
            console.print(_jobs_table(jobs))
            console.print(f"scheduler running (pid {_pid()}); Ctrl-C stops it")

    try:
        run_scheduler(settings, on_start=on_start)
    except Conflict as err:  # not guarded: it would hold every warning until exit
        raise fail(str(err), exit_code_of(err)) from None
    except KeyboardInterrupt:
        pass


def _pid() -> int:
    import os

    return os.getpid()
