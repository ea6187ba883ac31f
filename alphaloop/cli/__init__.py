"""The ``alphaloop`` command line: a thin layer over the library.

Command modules define plain functions; they are registered here, in the order ``--help``
lists them. Exit codes: 0 ok, 1 the work failed, 2 bad usage (unknown session, bad flags...).
"""

from alphaloop.cli import charts, chat, research, review, trial
from alphaloop.cli._app import app

app.add_typer(research.research_app, name="research")
for command in (
    review.sessions,
    review.status,
    review.journal,
    trial.trial,
    charts.train,
    charts.chart,
    trial.knobs,
    chat.chat,
):
    app.command()(command)

__all__ = ["app", "main"]


def main() -> None:
    app()
