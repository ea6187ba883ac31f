"""``alphaloop export``: a session in another tool's format (``export optuna``: an Optuna
study)."""

from __future__ import annotations

import json
import shlex
from typing import Annotated

import typer
from rich.markup import escape

from alphaloop.cli._app import JsonFlag, console, guarded
from alphaloop.settings import get_settings

export_app = typer.Typer(
    no_args_is_help=True,
    help="Export a session in another tool's format: an Optuna study.",
)


@export_app.command("optuna")
def optuna(
    session: Annotated[str, typer.Argument(help="the session id")],
    storage: Annotated[
        str,
        typer.Option(
            help="an Optuna journal file (study.log: a path) or an RDB URL Optuna accepts "
            "(sqlite:///study.db, postgresql://user@host/db...)"
        ),
    ],
    study_name: Annotated[
        str | None, typer.Option(help="the study's name (default: the session id)")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Write a session as an Optuna study, for optuna-dashboard and optuna.visualization.

    One Optuna trial per trial the search ran (baseline, search, confirmation), with the knobs
    as params on their bounds (log scales as log) and the objective as the value of a
    maximising study. Kept and discarded trials are COMPLETE, raced-out ones PRUNED (each
    fold's objective is an intermediate value), crashed, timed-out and invalid ones FAIL. Kind,
    status, proposer and reason are user attrs; the TEST results are user attrs of the trial
    they evaluated, the pick and the gates user attrs of the study. Running it again updates
    the study instead of adding a copy.

    A path is an Optuna journal file, written whole or not at all; a URL is a database, written
    a trial at a time by Optuna's add_trials (much slower: a commit per trial).

    Example: alphaloop export optuna s-20260101-120000-ab12 --storage study.log
    (then: optuna-dashboard study.log)
    """
    from alphaloop.ops.export import export_optuna

    done = guarded(export_optuna, get_settings(), session, storage, study_name)
    if as_json:
        typer.echo(json.dumps(done.model_dump(mode="json")))
        return
    states = ", ".join(f"{n} {s.lower()}" for s, n in sorted(done.states.items()))
    console.print(
        f"study {escape(done.study_name)} in {escape(done.storage)}: {done.n_trials} trials "
        f"({states})"
    )
    if done.rewritten:
        console.print("  written again whole: a trial exported before no longer matched")
    else:
        console.print(
            f"  {done.added} added, {done.completed} completed since the last export, "
            f"{done.unchanged} unchanged"
        )
    console.print(f"open it: optuna-dashboard {escape(shlex.quote(done.storage))}")
