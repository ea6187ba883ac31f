"""``alphaloop dpo``: train the proposer model on the preference pairs with TRL's DPO."""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import typer

from alphaloop import ops
from alphaloop.cli._app import JsonFlag, console, guarded, step_progress
from alphaloop.cli._options import Cli, request_command
from alphaloop.cli.views import FitTable
from alphaloop.ops.requests import DpoTrainRequest
from alphaloop.settings import get_settings

dpo_app = typer.Typer(
    no_args_is_help=True, help="DPO on the preference pairs (TRL), on a local model directory."
)


def _accuracy(run: ops.dpo.DpoRunRecord) -> str:
    """``before -> after [low, high]``: the after's 95% Wilson interval on the held-out pairs."""
    text = f"{run.accuracy_before:.2f} -> {run.accuracy_after:.2f}"
    if run.accuracy_after_low is not None and run.accuracy_after_high is not None:
        text += f" [{run.accuracy_after_low:.2f}, {run.accuracy_after_high:.2f}]"
    return text


def _print_run(run: ops.dpo.DpoRunRecord) -> None:
    if run.status == "skipped":
        console.print(f"DPO run {run.id} skipped: {run.reason}")
        return
    console.print(
        f"DPO run {run.id} {run.status} in {run.elapsed_s or 0:.1f} s: {run.n_train} train / "
        f"{run.n_heldout} held-out pairs; held-out preference accuracy {_accuracy(run)} "
        "(95% interval)"
    )
    if run.lengths and run.max_length:
        n = run.lengths
        console.print(
            f"prompts {n['prompt_min']:.0f}-{n['prompt_max']:.0f} tokens (median "
            f"{n['prompt_median']:.0f}), longest sequence {n['sequence_max']:.0f} of "
            f"max_length {run.max_length}; {n['pairs_cut']:.0f} prompt(s) had "
            f"{n['entries_cut']:.0f} older history entries cut to fit"
        )
    console.print(f"model written to {run.out_dir}; serve it with `vllm serve {run.out_dir}`")


@dpo_app.command()
@request_command(DpoTrainRequest, cli={"lora": Cli(flag="--lora")})
def train(
    request: DpoTrainRequest,
    model: Path = typer.Option(..., help="local causal LM directory (config, weights, tokenizer)"),
    out: Path = typer.Option(..., help="new directory for the trained model (or LoRA adapter)"),
    as_json: JsonFlag = False,
) -> None:
    """Run DPO on every labelled pair; a held-out fifth measures preference accuracy.

    A bar shows the optimizer steps and the latest loss as they happen (not with --json).

    Example: alphaloop dpo train --model ./models/base --out ./models/dpo-1 --max-steps 100
    """
    max_steps = request.max_steps
    progress = None if as_json else step_progress("DPO", "steps", "loss")
    task = None if progress is None else progress.add_task("dpo", total=max_steps, loss="-")

    def on_log(log: dict[str, Any]) -> None:
        if progress is not None and task is not None and "loss" in log:
            progress.update(task, completed=log["step"], loss=f"{log['loss']:.4f}")

    with progress if progress is not None else nullcontext():
        run = guarded(
            ops.dpo.train_dpo,
            get_settings(),
            model,
            out,
            ops.dpo.DpoOptions(
                lora=request.lora, max_steps=max_steps, max_length=request.max_length
            ),
            on_log=on_log,
        )
    if as_json:
        typer.echo(json.dumps(run.model_dump(mode="json")))
        return
    _print_run(run)


@dpo_app.command()
def check(
    model: Path = typer.Option(None, help="model directory (default: ALPHALOOP_DPO_MODEL)"),
    as_json: JsonFlag = False,
) -> None:
    """Train only when enough new labelled pairs exist, else journal a skipped run and why.

    "Enough" is ALPHALOOP_DPO_MIN_PAIRS new labelled pairs.

    Example: alphaloop dpo check --model ./models/base --json
    """
    result = guarded(ops.dpo.dpo_check, get_settings(), model)
    if as_json:
        typer.echo(json.dumps(result.model_dump(mode="json")))
        return
    _print_run(result.run)


@dpo_app.command()
def runs(as_json: JsonFlag = False) -> None:
    """List DPO runs and skipped checks, newest first.

    Example: alphaloop dpo runs
    """
    rows = guarded(ops.dpo.list_dpo_runs, get_settings())
    if as_json:
        typer.echo(json.dumps([r.model_dump(mode="json") for r in rows]))
        return
    table = FitTable("id", "status", "pairs", "accuracy", "started", "why")
    for r in rows:
        acc = _accuracy(r) if r.accuracy_after is not None else "-"
        pairs = "-" if r.n_train is None else f"{r.n_train}+{r.n_heldout}"
        table.add_row(str(r.id), r.status, pairs, acc, r.started_at, r.reason or r.error or "")
    console.print(table)
