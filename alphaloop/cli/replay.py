"""``alphaloop replay``: a trial or a library policy re-run on a window of one's own."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from alphaloop import ops
from alphaloop.cli import views
from alphaloop.cli._app import JsonFlag, console, err_console, fail, guarded
from alphaloop.settings import get_settings


def replay(
    start: Annotated[str, typer.Option(help="first day of the window, YYYY-MM-DD")],
    end: Annotated[str, typer.Option(help="last day of the window, YYYY-MM-DD (inclusive)")],
    trial: Annotated[
        str | None, typer.Option(help="SESSION:IDX, a journaled trial (`alphaloop review`)")
    ] = None,
    policy: Annotated[
        int | None, typer.Option(help="a library id (`alphaloop policies list`)")
    ] = None,
    data: Annotated[
        str | None,
        typer.Option(help="other data with the same symbols (default: the data it was made on)"),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Re-run a trial or a library policy on a new window with the frozen evaluator.

    Nothing trains. The replay is journaled, pointing to its parent with the same config hash.

    A window outside the data, or without the history the strategy looks back on, is refused
    (exit 2). A window overlapping a PPO policy's training window is replayed with a warning.

    Example: alphaloop replay --policy 3 --start 2021-01-01 --end 2021-12-31 --json

    Example: alphaloop replay --trial s-20260101-120000-ab12:4 --start 2020-01-01 --end 2020-06-30
    """
    if (trial is None) == (policy is None):
        raise fail("give exactly one of --trial SESSION:IDX or --policy ID", 2)
    if trial is not None:
        try:
            ops.replay.parse_trial_ref(trial)
        except ValueError as err:
            raise fail(str(err), 2) from None
    request = ops.replay.ReplayRequest(
        trial=trial, policy_id=policy, start=start, end=end, data=data
    )
    run = guarded(ops.replay.replay, get_settings(), request)
    if run.warning:
        err_console.print(f"[yellow]warning:[/yellow] {escape(run.warning)}")
    if as_json:
        typer.echo(json.dumps(run.model_dump(mode="json")))
        return
    r = run.replay
    console.print(
        f"replay {r.id} of {escape(run.parent)} ({run.mode}, config {r.config_hash[:12]}) on "
        f"{r.start}..{r.end}, {run.n_days} days of {escape(r.data_source)}"
    )
    console.print(
        views.metrics_table(
            f"replay: {run.metric} {run.objective:.4f}",
            {
                "replay": run.metrics.model_dump(),
                **{k: v.model_dump() for k, v in run.baselines.items()},
            },
        )
    )
