"""``alphaloop train``: one manual PPO run with a live curve, journaled like a session."""

from __future__ import annotations

import json
from contextlib import nullcontext
from types import SimpleNamespace
from typing import Any

import typer
from rich.markup import escape

from alphaloop import ops
from alphaloop.cli import views
from alphaloop.cli._app import (
    AdvantageOption,
    DataOption,
    DateFormatOption,
    FillOption,
    JsonFlag,
    MetricOption,
    SeedOption,
    SetOption,
    StopProperlyOption,
    SymbolsOption,
    TruncateDrawdownOption,
    check_seed,
    console,
    guarded,
    parse_sets,
    parse_symbols,
    step_progress,
    training_note,
    trial_budget,
)
from alphaloop.knobs import SEED_MAX
from alphaloop.settings import get_settings


def train(
    symbols: SymbolsOption = None,
    total_timesteps: int = typer.Option(None, help="PPO env steps (default 16,384)"),
    set_: SetOption = [],  # noqa: B006  (typer reads the default; it is never mutated)
    data: DataOption = "sp500",
    fill: FillOption = "none",
    date_format: DateFormatOption = None,
    seed: SeedOption = 0,
    n_envs: int = typer.Option(None, help="parallel training environments (default 4)"),
    truncate_drawdown: TruncateDrawdownOption = None,
    stop_properly: StopProperlyOption = None,
    advantage: AdvantageOption = "gae",
    metric: MetricOption = "sharpe",
    as_json: JsonFlag = False,
) -> None:
    """Train PPO once, outside any research session; the run is journaled like a session.

    Its reward curve is journaled as it trains (200 points at most): `alphaloop status` shows it.
    With --json there is no progress bar: the run is printed as JSON.

    Example: alphaloop train --symbols AAPL,MSFT,JPM,XOM --total-timesteps 32768

    Example: alphaloop train --advantage reinforce_pp --truncate-drawdown 0.2 --stop-properly 0.5
    """
    spec = _manual_spec(SimpleNamespace(**locals()))
    progress = step_progress("PPO", "steps", "reward") if not as_json else None
    task: dict[str, Any] = {}

    def on_start(trial: Any, planned: int) -> None:
        if progress is not None:
            progress.console.print(
                f"manual run [bold]{trial.session_id}[/bold] (trial #{trial.idx}) on "
                f"{escape(data)}: {planned:,} env steps"
            )
            training = training_note(spec.trial_budget)
            if training:
                progress.console.print(training)
            task["id"] = progress.add_task("train", total=planned, reward="-")

    def on_update(timestep: int, reward: float) -> None:
        if progress is not None and "id" in task:
            progress.update(task["id"], completed=timestep, reward=f"{reward:.4f}")

    with progress if progress is not None else nullcontext():
        run = guarded(ops.train, spec, get_settings(), on_start=on_start, on_update=on_update)
    if as_json:
        typer.echo(json.dumps(_run_json(run, spec)))
        return
    _print_run(run, spec, metric)


def _manual_spec(f: SimpleNamespace) -> Any:
    """The manual run ``train``'s flags (``f``) ask for, or exit 2 naming the flag at fault."""
    check_seed(f.seed, SEED_MAX)
    delta = parse_sets(f.set_)
    return ops.ManualRunSpec(
        data=f.data,
        fill=f.fill,
        date_format=f.date_format,
        symbols=parse_symbols(f.symbols),
        changes=dict(delta.changes),
        seed=f.seed,
        metric=f.metric,
        trial_budget=trial_budget(
            f.total_timesteps,
            f.n_envs,
            truncate_drawdown=f.truncate_drawdown,
            stop_properly=f.stop_properly,
            advantage=f.advantage,
        ),
    )


def _run_json(run: Any, spec: Any) -> dict[str, Any]:
    """A finished manual run as ``train --json`` prints it."""
    return {
        "session": run.session.model_dump(mode="json"),
        "trial": run.trial.model_dump(mode="json"),
        "clips": [c.model_dump(mode="json") for c in run.clips],
        "total_timesteps": spec.trial_budget.total_timesteps,
        "env_steps": run.trial.env_steps,
        **ops.training_options(spec.trial_budget),
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
