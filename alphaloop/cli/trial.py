"""``alphaloop trial`` and ``alphaloop knobs``: one trial by hand, and the edit space."""

from __future__ import annotations

import json
from contextlib import nullcontext

import typer
from rich.markup import escape

from alphaloop.cli import views
from alphaloop.cli._app import (
    DATA_HELP,
    FILLS,
    check_choice,
    check_seed,
    console,
    guarded,
    parse_sets,
    parse_symbols,
    trial_budget,
)
from alphaloop.knobs import KNOBS, MODES, SEED_MAX, TrialConfig, clip
from alphaloop.market import load_market
from alphaloop.metrics import OBJECTIVE_METRICS
from alphaloop.settings import get_settings


def trial(
    mode: str = typer.Option("cufolio_only", help="ppo_only, cufolio_only or unified"),
    set_: list[str] = typer.Option([], "--set", help="knob=value (repeatable)"),
    data: str = typer.Option("sp500", help=DATA_HELP),
    fill: str = typer.Option("none", help="missing prices: none (refuse) or ffill"),
    date_format: str = typer.Option(
        None, help="strptime format for the date column, e.g. %d/%m/%Y"
    ),
    symbols: str = typer.Option(None, help="comma-separated subset of the data's columns"),
    seed: int = typer.Option(0),
    total_timesteps: int = typer.Option(None, help="PPO env steps (session setting)"),
    metric: str = typer.Option("sharpe", help="objective: sharpe, sortino, calmar, return"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Run one trial by hand and print its validation metrics next to the baselines.

    Example: alphaloop trial --mode cufolio_only --set cvar_alpha=0.97 --set max_position_pct=0.5
    """
    from alphaloop.trials import run_trial

    check_seed(seed, SEED_MAX)
    check_choice(mode, MODES, "mode")
    check_choice(metric, OBJECTIVE_METRICS, "metric")
    check_choice(fill, FILLS, "fill policy")
    delta = parse_sets(set_)
    market = guarded(
        load_market, data, fill=fill, symbols=parse_symbols(symbols), date_format=date_format
    )
    budget = trial_budget(total_timesteps)
    config, clips = clip(TrialConfig(), delta, market.n_assets, budget.n_envs)
    settings = get_settings()
    busy = console.status(f"running a {mode} trial on {market.source}...", spinner="dots")
    with busy if not as_json else nullcontext():
        result = guarded(
            run_trial,
            mode,
            config,
            market,
            budget,
            seed,
            metric=metric,
            policy_dir=settings.policies_dir / "manual",
        )
    if as_json:
        payload = result.model_dump(mode="json")
        payload["config"] = config.model_dump()
        payload["clips"] = [c.model_dump() for c in clips]
        payload["data"] = market.describe()
        payload["total_timesteps"] = budget.total_timesteps
        payload["env_steps"] = result.timesteps
        typer.echo(json.dumps(payload))
        return
    if clips:
        console.print(views.clips_table(clips))
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
    note = views.steps_note(result.timesteps, budget.total_timesteps, config.n_steps, budget.n_envs)
    if note:
        console.print(note)
    console.print(f"data: {escape(market.source)}: {market.windows_text()}")
    if result.policy_path:
        console.print(f"policy saved to {escape(result.policy_path)}")


def knobs(as_json: bool = typer.Option(False, "--json")) -> None:
    """List the 16 knobs with their bounds, scale, default and meaning.

    Example: alphaloop knobs
    """
    if as_json:
        typer.echo(json.dumps([k.__dict__ for k in KNOBS.values()]))
        return
    from rich.table import Table

    table = Table(title="knobs")
    for col in ("group", "knob", "low", "high", "scale", "default", "meaning"):
        table.add_column(col)
    for k in KNOBS.values():
        table.add_row(
            k.group, k.name, f"{k.low:g}", f"{k.high:g}", k.scale, f"{k.default:g}", k.doc
        )
    console.print(table)
