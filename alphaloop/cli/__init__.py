"""The ``alphaloop`` command line: a thin layer over the library.

Command modules define plain functions; they are registered here, in the order ``--help``
lists them. Exit codes: 0 ok, 1 the work failed, 2 bad usage (unknown session, bad flags...).
"""

from typing import Annotated

import typer
from pydantic import ValidationError

from alphaloop.cli import (
    charts,
    chat,
    frontier,
    pm,
    policies,
    replay,
    report,
    research,
    review,
    train,
    trial,
    validate,
    walk,
)
from alphaloop.cli import dpo as dpo_cli
from alphaloop.cli import export as export_cli
from alphaloop.cli import feedback as feedback_cli
from alphaloop.cli import prefs as prefs_cli
from alphaloop.cli import scheduler as scheduler_cli
from alphaloop.cli import serve as serve_cli
from alphaloop.cli._app import app, reflow_help
from alphaloop.cli._logging import configure_logging
from alphaloop.cli._stdio import reserve_stdout
from alphaloop.settings import get_settings


@app.callback()
def root(
    verbose: Annotated[
        int,
        typer.Option(
            "--verbose",
            "-v",
            count=True,
            help="log to stderr: -v what the work is doing, -vv debugging detail",
        ),
    ] = 0,
) -> None:
    """Goal-driven autoresearch on portfolio strategies."""
    configure_logging(verbose)


app.add_typer(research.research_app, name="research")
app.add_typer(walk.walk_app, name="walk")
# The verdicts on decisions live with the flywheel; people reach them as `pm review|decide`.
pm.pm_app.command("review")(feedback_cli.review)
pm.pm_app.command("decide")(feedback_cli.decide)
app.add_typer(pm.pm_app, name="pm")
app.add_typer(policies.policies_app, name="policies")
app.add_typer(prefs_cli.prefs_app, name="prefs")
app.add_typer(dpo_cli.dpo_app, name="dpo")
app.add_typer(scheduler_cli.scheduler_app, name="scheduler")
app.add_typer(export_cli.export_app, name="export")
for command in (
    review.sessions,
    review.status,
    review.journal,
    validate.validate,
    trial.trial,
    train.train,
    replay.replay,
    charts.chart,
    report.report,
    frontier.frontier,
    trial.knobs,
    chat.chat,
    serve_cli.serve,
):
    app.command()(command)
reflow_help(app)

__all__ = ["app", "main"]


def main() -> None:
    """The ``alphaloop`` command: stdout carries only what the command itself prints."""
    reserve_stdout()
    try:
        get_settings().confine_scratch()
    except ValidationError:
        pass  # a bad setting: the command reports it when it reads the settings
    app()
