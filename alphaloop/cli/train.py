"""``alphaloop train``: one manual PPO run with a live curve, journaled like a session."""

from __future__ import annotations

import json
from contextlib import nullcontext
from typing import Any

import typer
from rich.markup import escape

from alphaloop import ops
from alphaloop.cli import views
from alphaloop.cli._app import (
    JsonFlag,
    console,
    guarded,
    parse_symbols,
    step_progress,
    training_note,
)
from alphaloop.cli._options import Cli, pairs, request_command
from alphaloop.ops.requests import FILES, TrainRequest
from alphaloop.ops.train import manual_spec
from alphaloop.settings import get_settings

TRAIN_CLI = {
    "symbols": Cli(
        type=str, parse=parse_symbols, help="comma-separated subset of the data's columns"
    ),
    "knobs": Cli(
        flag="--set",
        type=list[str],
        parse=pairs("--set"),
        default=[],
        metavar="KNOB=VALUE",
        help="knob=value (repeatable)",
    ),
}


@request_command(TrainRequest, cli=TRAIN_CLI, context={FILES: True})
def train(request: TrainRequest, as_json: JsonFlag = False) -> None:
    """Train PPO once, outside any research session; the run is journaled like a session.

    Its reward curve is journaled as it trains (200 points at most): `alphaloop status` shows it.
    With --json there is no progress bar: the run is printed as JSON.

    Example: alphaloop train --symbols AAPL,MSFT,JPM,XOM --total-timesteps 32768

    Example: alphaloop train --advantage reinforce_pp --truncate-drawdown 0.2 --stop-properly 0.5
    """
    spec = guarded(manual_spec, request)
    progress = step_progress("PPO", "steps", "reward") if not as_json else None
    task: dict[str, Any] = {}

    def on_start(trial: Any, planned: int) -> None:
        if progress is not None:
            progress.console.print(
                f"manual run [bold]{trial.session_id}[/bold] (trial #{trial.idx}) on "
                f"{escape(request.data)}: {planned:,} env steps"
            )
            training = training_note(spec.trial_budget)
            if training:
                progress.console.print(training)
            task["id"] = progress.add_task("train", total=planned, reward="-")

    def on_update(timestep: int, reward: float) -> None:
        if progress is not None and "id" in task:
            progress.update(task["id"], completed=timestep, reward=f"{reward:.4f}")

    with progress if progress is not None else nullcontext():
        run = guarded(ops.train.train, spec, get_settings(), on_start=on_start, on_update=on_update)
    if as_json:
        typer.echo(json.dumps(_run_json(run, spec)))
        return
    _print_run(run, spec, request.metric)


def _run_json(run: Any, spec: Any) -> dict[str, Any]:
    """A finished manual run as ``train --json`` prints it."""
    return {
        "session": run.session.model_dump(mode="json"),
        "trial": run.trial.model_dump(mode="json"),
        "clips": [c.model_dump(mode="json") for c in run.clips],
        "total_timesteps": spec.trial_budget.total_timesteps,
        "env_steps": run.trial.env_steps,
        **ops.trial.training_options(spec.trial_budget),
    }


def _print_run(run: Any, spec: Any, metric: str) -> None:
    t = run.trial
    if run.clips:
        console.print(views.clips_table(run.clips))
    console.print(
        views.metrics_table(
            f"validation: {metric} {t.objective:.4f} ({t.elapsed_s:.1f} s)",
            {"trial": t.metrics, **(t.baselines or {})},
        )
    )
    budget = spec.trial_budget
    note = views.steps_note(t.env_steps, budget.total_timesteps, budget.n_envs)
    if note:
        console.print(note)
    if t.policy_path:
        console.print(f"policy saved to {escape(t.policy_path)}")
    console.print(
        f"{len(t.curve or [])} curve points journaled; see them with "
        f"`alphaloop chart training_curve --session {run.session.id}`"
    )
