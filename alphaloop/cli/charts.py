"""``alphaloop train`` (one manual PPO run with a live curve) and ``alphaloop chart``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from alphaloop.cli import views
from alphaloop.cli._app import (
    DATA_HELP,
    FILLS,
    check_choice,
    check_seed,
    console,
    err_console,
    fail,
    guarded,
    parse_sets,
    parse_symbols,
    trial_budget,
)
from alphaloop.journal import Journal, JournalError, SessionNotFound, TrialNotFound
from alphaloop.knobs import SEED_MAX
from alphaloop.metrics import OBJECTIVE_METRICS
from alphaloop.settings import get_settings

T = TypeVar("T")
KIND_HELP = "training_curve, research_progress, ratio_curve, equity_curves or weights"


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]PPO"),
        BarColumn(),
        TextColumn("{task.completed:,}/{task.total:,} steps"),
        TextColumn("reward {task.fields[reward]}"),
        TimeElapsedColumn(),
        console=console,
    )


def train(
    symbols: str = typer.Option(None, help="comma-separated subset of the data's columns"),
    total_timesteps: int = typer.Option(None, help="PPO env steps (default 16,384)"),
    set_: list[str] = typer.Option([], "--set", help="knob=value (repeatable)"),
    data: str = typer.Option("sp500", help=DATA_HELP),
    fill: str = typer.Option("none", help="missing prices: none (refuse) or ffill"),
    date_format: str = typer.Option(
        None, help="strptime format for the date column, e.g. %d/%m/%Y"
    ),
    seed: int = typer.Option(0),
    n_envs: int = typer.Option(None, help="parallel training environments (default 4)"),
    metric: str = typer.Option("sharpe", help="objective: sharpe, sortino, calmar, return"),
    as_json: bool = typer.Option(False, "--json", help="no progress bar; print the run as JSON"),
) -> None:
    """Train PPO once, outside any research session; the run is journaled like a session.

    Its reward curve is journaled as it trains (200 points at most): `alphaloop status` shows it.

    Example: alphaloop train --symbols AAPL,MSFT,JPM,XOM --total-timesteps 32768
    """
    from alphaloop.meta_agent.manual import ManualRunSpec, train_manual

    check_seed(seed, SEED_MAX)
    check_choice(metric, OBJECTIVE_METRICS, "metric")
    check_choice(fill, FILLS, "fill policy")
    delta = parse_sets(set_)
    spec = ManualRunSpec(
        data=data,
        fill=fill,
        date_format=date_format,
        symbols=parse_symbols(symbols),
        changes=dict(delta.changes),
        seed=seed,
        metric=metric,
        trial_budget=trial_budget(total_timesteps, n_envs),
    )
    settings = get_settings()
    progress = _progress() if not as_json else None
    task: dict[str, Any] = {}

    def on_start(trial: Any, planned: int) -> None:
        if progress is not None:
            progress.console.print(
                f"manual run [bold]{trial.session_id}[/bold] (trial #{trial.idx}) on "
                f"{escape(data)}: {planned:,} env steps"
            )
            task["id"] = progress.add_task("train", total=planned, reward="-")

    def on_update(timestep: int, reward: float) -> None:
        if progress is not None and "id" in task:
            progress.update(task["id"], completed=timestep, reward=f"{reward:.4f}")

    with progress if progress is not None else nullcontext():
        run = guarded(train_manual, spec, settings, on_start=on_start, on_update=on_update)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "session": run.session.model_dump(mode="json"),
                    "trial": run.trial.model_dump(mode="json"),
                    "clips": [c.model_dump(mode="json") for c in run.clips],
                    "total_timesteps": spec.trial_budget.total_timesteps,
                    "env_steps": run.trial.env_steps,
                }
            )
        )
        return
    t = run.trial
    if run.clips:
        console.print(views.clips_table(run.clips))
    console.print(
        views.metrics_table(
            f"validation: {metric} {t.objective:.4f} ({t.elapsed_s:.1f} s)",
            {"trial": t.metrics, **(t.baselines or {})},
        )
    )
    note = views.steps_note(
        t.env_steps,
        spec.trial_budget.total_timesteps,
        int(t.config["n_steps"]),
        spec.trial_budget.n_envs,
    )
    if note:
        console.print(note)
    if t.policy_path:
        console.print(f"policy saved to {escape(t.policy_path)}")
    console.print(
        f"{len(t.curve or [])} curve points journaled; see them with "
        f"`alphaloop chart training_curve --session {run.session.id}`"
    )


@contextmanager
def _chart_errors() -> Iterator[None]:
    """Chart and journal errors as a message and an exit code (2: bad input, 1: failure)."""
    from alphaloop.charts import (
        ChartDataError,
        ChartError,
        ChromiumNotFound,
        UnknownChartKind,
    )

    try:
        yield
    except (UnknownChartKind, ChartDataError, SessionNotFound, TrialNotFound) as err:
        raise fail(str(err), 2) from None
    except ChromiumNotFound as err:
        raise fail(str(err), 1) from None
    except (ChartError, JournalError) as err:
        raise fail(str(err), 1) from None
    except OSError as err:
        raise fail(f"cannot write the chart: {err}", 1) from None


def _checked(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    with _chart_errors():
        return fn(*args, **kwargs)


def chart(
    kind: str = typer.Argument(..., help=KIND_HELP),
    session: str = typer.Option(None, "--session", help="session id (default: the newest)"),
    trial: int = typer.Option(
        None,
        "--trial",
        help="trial index within the session, the # column of `alphaloop journal` "
        "(default: the session's best trial, or its trial with a curve)",
    ),
    out: Path = typer.Option(
        None, "--out", help="FILE.html or FILE.png (default: <home>/charts/<chart>.html)"
    ),
    width: int = typer.Option(None, help="PNG width in pixels (default 1100)"),
    height: int = typer.Option(None, help="PNG height in pixels (default 620)"),
    interpret: bool = typer.Option(
        False,
        "--interpret",
        help="read the chart in 4-6 bullets: the vision model of ALPHALOOP_VLM_MODEL if set, "
        "else the embedded data-grounded reader; the read is journaled",
    ),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Draw a chart of the journal as HTML or PNG, and optionally read it in 4-6 bullets.

    PNG needs a Chromium (`apt-get install chromium`); HTML does not.

    Example: alphaloop chart research_progress --session s-20260101-120000-ab12 --out p.png
    """
    from alphaloop.charts import (
        DEFAULT_HEIGHT,
        DEFAULT_WIDTH,
        ChartExportError,
        build_chart,
        chart_kind,
        check_size,
        check_suffix,
        export_figure,
        find_chromium,
        interpret_chart,
        render_png,
    )

    name = _checked(chart_kind, kind)
    fmt = "html"
    size = (width or DEFAULT_WIDTH, height or DEFAULT_HEIGHT)
    try:
        if out is not None:
            fmt = check_suffix(out)
        if fmt == "png" or width or height:
            check_size(*size)
    except ChartExportError as err:
        raise fail(str(err), 2) from None
    # An --out in a folder that does not exist is most likely a typo: refuse it rather than
    # create folders nobody asked for. The default folder under the home is ours to create.
    if out is not None and not out.parent.is_dir():
        raise fail(
            f"cannot write {out}: the folder {out.parent} does not exist; "
            "create it first or choose another --out",
            2,
        )
    settings = get_settings()
    if not settings.journal_path.exists():
        raise fail(
            f"no journal at {settings.journal_path}; run `alphaloop research` or "
            "`alphaloop train` first (or set ALPHALOOP_HOME)",
            2,
        )
    with _chart_errors(), Journal(settings.journal_path) as journal:
        busy = console.status(f"drawing {name}...", spinner="dots")
        with busy if not as_json else nullcontext():
            drawn = build_chart(name, journal, session_id=session, trial_idx=trial)
        target = out or settings.charts_dir / f"{drawn.name}.html"
        png = None
        if fmt == "png":
            png = render_png(
                drawn.figure,
                width=size[0],
                height=size[1],
                chromium=find_chromium(settings.chromium),
            )
        written = export_figure(drawn.figure, target, png=png)
        read = None
        if interpret:

            def warn(message: str) -> None:
                err_console.print(f"[yellow]warning:[/yellow] {escape(message)}")

            reading = console.status("reading the chart...", spinner="dots")
            with reading if not as_json else nullcontext():
                read = interpret_chart(drawn, settings, journal, png=png, on_warning=warn)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "kind": name,
                    "session_id": drawn.session_id,
                    "trial_id": drawn.trial_id,
                    "trial_idx": drawn.trial_idx,
                    "out": str(written),
                    "format": fmt,
                    "traces": [
                        {"name": t.name, "points": len(t.y) if t.y is not None else 0}
                        for t in drawn.figure.data
                    ],
                    "read": read.model_dump(mode="json") if read else None,
                }
            )
        )
        return
    console.print(f"{name} written to {escape(str(written))}")
    if read is not None:
        console.print(views.chart_read_panel(read))
