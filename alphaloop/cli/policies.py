"""``alphaloop policies``: the policy library (list, show, activate, verify)."""

from __future__ import annotations

import json
from typing import Annotated, Any, TypeVar

import typer
from rich.markup import escape

from alphaloop import ops
from alphaloop.cli import views
from alphaloop.cli._app import JsonFlag, console, err_console, guarded
from alphaloop.cli._options import Cli, request_command
from alphaloop.exceptions import ActivePolicyError
from alphaloop.ops.requests import ActivateRequest
from alphaloop.settings import get_settings

T = TypeVar("T")

policies_app = typer.Typer(
    no_args_is_help=True,
    help="The policy library: every strategy a person might deploy, and the active one.\n\n"
    "Example: alphaloop policies list; alphaloop policies activate 3",
)
PolicyId = Annotated[int, typer.Argument(help="a library id (`alphaloop policies list`)")]


def _metric(record: Any, which: str) -> str:
    metrics = getattr(record, which) or {}
    name = record.objective.metric
    value = metrics.get(name)
    return "-" if value is None else f"{value:.3f}"


def _active_id(settings: Any) -> int | None:
    """The active id; a garbled pointer is reported on stderr and listed as none active."""
    try:
        return ops.policies.active_policy_id(settings)
    except ActivePolicyError as err:
        err_console.print(f"[yellow]warning:[/yellow] {escape(str(err))}")
        return None


@policies_app.command("list")
def list_(as_json: JsonFlag = False) -> None:
    """List the library, newest first; the active entry is marked.

    Example: alphaloop policies list --json
    """
    settings = get_settings()
    rows = guarded(ops.policies.list_policies, settings)
    active = _active_id(settings)
    overrides = guarded(ops.policies.activation_overrides, settings)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "active_policy_id": active,
                    "policies": [r.model_dump(mode="json") for r in rows],
                    # Entries activated without a GO from their gates: id -> the reason given.
                    "overrides": {str(k): v for k, v in overrides.items()},
                }
            )
        )
        return
    if not rows:
        console.print(
            "the library is empty: a finished research session or `alphaloop train` adds entries"
        )
        return
    table = views.FitTable(title="policy library", title_justify="left")
    for col in ("id", "kind", "source", "session", "objective", "validation", "test", "gates"):
        table.add_column(col, no_wrap=col == "session")
    for r in rows:
        table.add_row(
            f"{r.id}{' *' if r.id == active else ''}",
            r.kind.value,
            r.source.value,
            r.session_id,
            r.objective.metric,
            views.fmt(r.val_objective, "{:.3f}"),  # the figure its session ranked it by
            _metric(r, "test_metrics"),
            {True: "pass", False: "fail", None: "-"}[r.gates_passed]
            + (f" (overridden: {escape(overrides[r.id])})" if r.id in overrides else ""),
        )
    console.print(table)
    if active is not None:
        console.print(f"* active policy: {active}")


@policies_app.command()
def show(policy_id: PolicyId, as_json: JsonFlag = False) -> None:
    """Show one library entry: its config, data, metrics, file and replays.

    Example: alphaloop policies show 3 --json
    """
    detail = guarded(ops.policies.show_policy, get_settings(), policy_id)
    if as_json:
        typer.echo(json.dumps(detail.model_dump(mode="json")))
        return
    p = detail.policy
    console.print(
        f"[bold]policy {p.id}[/bold] ({p.kind.value}, {p.source.value} run "
        f"{p.session_id}, trial #{detail.trial_idx})"
        + (" [green]active[/green]" if detail.active else "")
    )
    data = ", ".join(f"{k}={v}" for k, v in p.data_spec.model_dump().items() if v is not None)
    console.print(f"config {p.config_hash[:12]}, seed {p.seed}; data {escape(data)}")
    console.print(f"symbols: {escape(', '.join(p.symbols))}")
    gates = {True: "passed", False: "failed", None: "not evaluated"}[p.gates_passed]
    metric = p.objective.metric
    console.print(f"objective {metric}; go/no-go gates {gates}")
    if p.val_objective is not None:
        console.print(
            f"validation objective {p.val_objective:.4f}: its {metric} on each fold, their mean "
            "less one standard error (over its seeds when confirmed); the validation metrics "
            "below pool every fold day"
        )
    if detail.override:
        console.print(f"[yellow]activated over its gates:[/yellow] {escape(detail.override)}")
    console.print(
        views.metrics_table("metrics", {"validation": p.val_metrics, "test": p.test_metrics})
    )
    if p.path:
        console.print(f"file {escape(p.path)}\nsha256 {p.sha256}")
    for r in detail.replays:
        console.print(
            f"replay {r.id}: {r.start}..{r.end} sharpe {r.metrics.get('sharpe', float('nan')):.3f}"
            + (" (in-sample warning)" if r.warning else "")
        )


@policies_app.command()
@request_command(
    ActivateRequest,
    cli={"force": Cli(flag="--force"), "reason": Cli(flag="--reason")},
)
def activate(request: ActivateRequest, policy_id: PolicyId, as_json: JsonFlag = False) -> None:
    """Make a library entry the active policy (by id only; its file is checked first).

    An entry without a GO from its gates is refused (exit 2) unless overridden with --force
    --reason TEXT; the override is journaled and shown beside the entry.

    Example: alphaloop policies activate 3
    """
    record = guarded(
        ops.policies.activate_policy,
        get_settings(),
        policy_id,
        force=request.force,
        reason=request.reason,
    )
    if as_json:
        typer.echo(
            json.dumps({"active_policy_id": record.id, "policy": record.model_dump(mode="json")})
        )
        return
    console.print(f"policy {record.id} ({record.kind.value}) is now active")


@policies_app.command()
def verify(as_json: JsonFlag = False) -> None:
    """Check every entry's file against the sha256 the library journaled.

    Exit 1 when a file differs or is gone; nothing is unpickled.

    Example: alphaloop policies verify --json
    """
    checks = guarded(ops.policies.verify_policies, get_settings())
    bad = [c for c in checks if not c.ok]
    if as_json:
        typer.echo(
            json.dumps({"ok": not bad, "checks": [c.model_dump(mode="json") for c in checks]})
        )
    else:
        for c in checks:
            mark = "[green]ok[/green]" if c.ok else "[red]TAMPERED[/red]"
            console.print(f"policy {c.policy_id} ({c.kind.value}): {mark} {escape(c.detail)}")
        if not checks:
            console.print("the library is empty: nothing to verify")
    if bad:
        raise typer.Exit(1)
