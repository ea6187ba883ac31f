"""``alphaloop trial`` and ``alphaloop knobs``: one trial by hand, and the edit space."""

from __future__ import annotations

import json
from contextlib import ExitStack

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
    ModeOption,
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
    training_note,
)
from alphaloop.settings import get_settings
from alphaloop.spec import SEED_MAX


def trial(
    mode: ModeOption = "cufolio_only",
    set_: SetOption = [],  # noqa: B006  (typer reads the default; it is never mutated)
    data: DataOption = "sp500",
    fill: FillOption = "none",
    date_format: DateFormatOption = None,
    symbols: SymbolsOption = None,
    seed: SeedOption = 0,
    total_timesteps: int = typer.Option(None, help="PPO env steps (session setting)"),
    truncate_drawdown: TruncateDrawdownOption = None,
    stop_properly: StopProperlyOption = None,
    advantage: AdvantageOption = "gae",
    metric: MetricOption = "sharpe",
    as_json: JsonFlag = False,
) -> None:
    """Run one trial by hand and print its validation metrics next to the baselines.

    Example: alphaloop trial --mode cufolio_only --set cvar_alpha=0.97 --set max_position_pct=0.5

    Example: alphaloop trial --mode ppo_only --advantage grpo --truncate-drawdown 0.2
    --stop-properly 0.5
    """
    check_seed(seed, SEED_MAX)
    delta = parse_sets(set_)
    request = ops.trial.TrialRequest(
        mode=mode,
        changes=dict(delta.changes),
        data=data,
        fill=fill,
        date_format=date_format,
        symbols=parse_symbols(symbols),
        seed=seed,
        metric=metric,
        total_timesteps=total_timesteps,
        truncate_drawdown=truncate_drawdown,
        stop_properly=stop_properly,
        advantage=advantage,
    )
    settings = get_settings()
    with ExitStack() as spinner:

        def on_start(text: str) -> None:  # the data is loaded: say what runs
            if not as_json:
                spinner.enter_context(console.status(f"{text}...", spinner="dots"))

        run = guarded(
            ops.trial.run_by_hand,
            request,
            settings,
            policy_dir=settings.policies_dir / "manual",
            on_start=on_start,
        )
    if as_json:
        typer.echo(json.dumps(_trial_json(run)))
        return
    _print_trial(run, mode, metric)


def _trial_json(run: ops.trial.TrialRun) -> dict:
    payload = run.result.model_dump(mode="json")
    payload["config"] = run.config.model_dump()
    payload["clips"] = [c.model_dump() for c in run.clips]
    payload["data"] = run.data
    payload["total_timesteps"] = run.budget.total_timesteps
    payload["env_steps"] = run.result.timesteps
    payload.update(ops.trial.training_options(run.budget))
    return payload


def _print_trial(run: ops.trial.TrialRun, mode: str, metric: str) -> None:
    result, budget = run.result, run.budget
    if run.clips:
        console.print(views.clips_table(run.clips))
    console.print(
        views.metrics_table(
            f"{mode} on validation {result.start_date}..{result.end_date} "
            f"(objective {metric} = {result.objective:.4f}, {result.elapsed_s:.1f} s)",
            {
                "trial": result.metrics.model_dump(),
                **{k: v.model_dump() for k, v in result.baselines.items()},
            },
        )
    )
    note = views.steps_note(result.timesteps, budget.total_timesteps, budget.n_envs)
    if note:
        console.print(note)
    training = training_note(budget) if mode != "cufolio_only" else None
    if training:
        console.print(training)
    console.print(f"data: {escape(run.source)}: {run.windows_text}")
    if result.policy_path:
        console.print(f"policy saved to {escape(result.policy_path)}")


def knobs(as_json: JsonFlag = False) -> None:
    """List the 16 knobs with their bounds, scale, default and meaning.

    Example: alphaloop knobs
    """
    rows = ops.knobs.list_knobs()
    if as_json:
        typer.echo(json.dumps([k.model_dump(exclude={"used_in_modes"}) for k in rows]))
        return

    table = views.FitTable(title="knobs")
    for col in ("group", "knob", "low", "high", "scale", "default", "meaning"):
        table.add_column(col)
    for k in rows:
        table.add_row(
            k.group, k.name, f"{k.low:g}", f"{k.high:g}", k.scale, f"{k.default:g}", k.doc
        )
    console.print(table)
