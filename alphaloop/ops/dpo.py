"""DPO runs on the preference pairs: ``train_dpo`` (one run, journaled in ``dpo_runs``),
``dpo_check`` (train only when enough new labelled pairs exist, else journal why not) and
``list_dpo_runs`` (``running_dpo_runs``: those still running).

Training runs in this process; a server runs it in a worker process by calling these (or the
command line) there.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import EXIT_USAGE, AlphaloopError, Conflict, InvalidRequest
from alphaloop.flywheel.dpo import DpoOptions, check_model_dir, go_offline, train_pairs
from alphaloop.flywheel.heldout import check_heldout, split_pairs
from alphaloop.flywheel.lengths import resolve_max_length
from alphaloop.journal import Journal, pid_alive
from alphaloop.journal.preferences import DpoRunRecord, DpoStatus
from alphaloop.ops._journal import open_journal
from alphaloop.settings import Settings
from alphaloop.telemetry import set_attributes, span

# How a run trains, for the front ends that start one.
__all__ = [
    "MIN_PAIRS",
    "DpoOptions",
    "DpoRunRecord",
    "check_dpo_free",
    "dpo_check",
    "list_dpo_runs",
    "served_model",
    "train_dpo",
]

# DPO compares a chosen answer with a rejected one and measures the run on held-out pairs: one
# pair leaves nothing to hold out.
MIN_PAIRS = 2

logger = logging.getLogger(__name__)


class DpoCheck(BaseModel):
    """What a check decided: the run it journaled (trained or skipped) and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    trained: bool
    new_pairs: int
    min_pairs: int
    run: DpoRunRecord


def _check_out_dir(out_dir: Path, model_dir: Path) -> None:
    if out_dir.resolve() == model_dir.resolve():
        raise InvalidRequest("--out must differ from --model: the base model stays as it is")
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise InvalidRequest(f"output directory {out_dir} exists and is not empty; pick a new one")


def _train_journaled(
    journal: Journal,
    run_id: int,
    prefs: list,
    dirs: tuple[Path, Path],
    options: DpoOptions,
    on_log: Callable[[dict[str, Any]], None] | None = None,
) -> Any:
    """Trains on ``prefs``; a failure is journaled as the run's end and raised as
    :class:`AlphaloopError`, or as itself when it is bad usage (a bad model directory, pairs too
    long for ``max_length``): exit 2, not a failure of the run."""
    try:
        return train_pairs(prefs, *dirs, options, on_log=on_log)
    except Exception as err:
        journal.preferences.finish_dpo_run(
            run_id,
            status=DpoStatus.failed,
            error=f"{err!r}\n{traceback.format_exc(limit=-3)}",
        )
        if isinstance(err, AlphaloopError) and err.exit_code == EXIT_USAGE:
            raise
        raise AlphaloopError(f"DPO run {run_id} failed: {err}") from err


# What a trained run's span carries of its outcome.
_TRACED = ("accuracy_before", "accuracy_after", "n_train", "n_heldout")


def train_dpo(
    settings: Settings,
    model_dir: Path,
    out_dir: Path,
    options: DpoOptions | None = None,
    *,
    on_log: Callable[[dict[str, Any]], None] | None = None,
) -> DpoRunRecord:
    """DPO of ``model_dir`` on every labelled pair, written (a model, or a LoRA adapter) to
    ``out_dir``, journaled from its start (a failure as ``failed``, raised as an
    :class:`AlphaloopError`). ``options`` say how it trains (TRL's defaults where they do not);
    their ``max_length`` (tokens of prompt + answer) defaults to ``settings.dpo_max_length``,
    else the model's context length, and the held-out minimum is
    ``settings.dpo_min_heldout``. ``on_log`` is handed each training log line.

    Raises:
        InvalidRequest: not a model, ``out_dir`` not empty, or ``max_length`` past its context;
            fewer held-out pairs than ``settings.dpo_min_heldout`` (no run journaled); pairs
            that do not fit even with their history cut (a failed run).
        Conflict: fewer than two labelled pairs.
    """
    model_dir, out_dir = Path(model_dir), Path(out_dir)
    check_model_dir(model_dir)
    _check_out_dir(out_dir, model_dir)
    given = options or DpoOptions()
    max_length = resolve_max_length(given.max_length or settings.dpo_max_length, model_dir)
    options = given.model_copy(
        update={"max_length": max_length, "min_heldout": settings.dpo_min_heldout}
    )
    lora, max_steps = options.lora, options.max_steps
    settings.confine_scratch()
    go_offline(settings.scratch_dir)
    with open_journal(settings) as journal:
        prefs, runs = _labelled_pairs(journal, options.min_heldout), journal.preferences
        run_id = runs.start_dpo_run(
            model_dir=str(model_dir),
            out_dir=str(out_dir),
            lora=lora,
            max_steps=max_steps,
            max_length=options.max_length,
            last_preference_id=prefs[-1].id,
        )
        attrs = {
            "dpo.run_id": run_id,
            "dpo.lora": lora,
            "dpo.max_steps": max_steps,
            "dpo.pairs": len(prefs),
            "dpo.model_dir": str(model_dir),
            "dpo.max_length": options.max_length,
        }
        with span("dpo.train", attrs) as current:
            outcome = _train_journaled(
                journal, run_id, prefs, (model_dir, out_dir), options, on_log
            )
            set_attributes(current, {f"dpo.{f}": getattr(outcome, f) for f in _TRACED})
        return runs.finish_dpo_run(run_id, status=DpoStatus.finished, **outcome.model_dump())


def _check_enough_pairs(labelled: int) -> None:
    """Raises Conflict when ``labelled`` pairs are too few to train on (:data:`MIN_PAIRS`)."""
    if labelled < MIN_PAIRS:
        raise Conflict(
            f"DPO needs at least {MIN_PAIRS} labelled preference pairs, the journal has "
            f"{labelled}: give verdicts on the manager's decisions, then extract the pairs "
            "(`alphaloop prefs extract`)"
        )


def _labelled_pairs(journal: Journal, min_heldout: int) -> list:
    """Every labelled pair, refused when there are too few to train and measure on.

    Raises:
        Conflict: fewer than two labelled pairs.
        InvalidRequest: fewer held-out pairs than ``min_heldout``.
    """
    prefs = journal.preferences.list(labelled=True)
    _check_enough_pairs(len(prefs))
    check_heldout(len(split_pairs(prefs)[1]), len(prefs), min_heldout)
    return prefs


def dpo_check(
    settings: Settings,
    model_dir: Path | None = None,
    out_dir: Path | None = None,
    *,
    lora: bool = False,
    max_steps: int = 50,
) -> DpoCheck:
    """Trains when at least ``settings.dpo_min_pairs`` labelled pairs are newer than the last
    finished run's and enough are held out (``settings.dpo_min_heldout``); otherwise journals a
    ``skipped`` run saying why.

    The model is ``model_dir`` or ``settings.dpo_model``; the output goes to ``out_dir`` or a
    new folder under ``<home>/dpo/``.
    """
    model = model_dir or settings.dpo_model
    with open_journal(settings) as journal:
        last = journal.preferences.last_trained_id()
        new = len(journal.preferences.list(labelled=True, after_id=last))
        reason = None
        if new < settings.dpo_min_pairs:
            reason = (
                f"{new} new labelled pair(s) since the last run, fewer than the "
                f"{settings.dpo_min_pairs} required (ALPHALOOP_DPO_MIN_PAIRS)"
            )
        elif model is None:
            reason = "no model directory: pass --model or set ALPHALOOP_DPO_MODEL"
        else:
            reason = _heldout_shortfall(journal, settings.dpo_min_heldout)
        if reason is not None:
            run_id = journal.preferences.start_dpo_run(
                status=DpoStatus.skipped,
                model_dir=str(model) if model else None,
                reason=reason,
                last_preference_id=last or None,
            )
            run = journal.preferences.get_dpo_run(run_id)
            return DpoCheck(trained=False, new_pairs=new, min_pairs=settings.dpo_min_pairs, run=run)
    assert model is not None
    if out_dir is None:
        out_dir = settings.home / "dpo" / f"run-{datetime.now(UTC):%Y%m%d-%H%M%S}"
    run = train_dpo(settings, Path(model), out_dir, DpoOptions(lora=lora, max_steps=max_steps))
    return DpoCheck(trained=True, new_pairs=new, min_pairs=settings.dpo_min_pairs, run=run)


def _heldout_shortfall(journal: Journal, min_heldout: int) -> str | None:
    """Why the labelled pairs are too few to measure a run on, or None when they are not."""
    prefs = journal.preferences.list(labelled=True)
    try:
        check_heldout(len(split_pairs(prefs)[1]) if len(prefs) >= 2 else 0, len(prefs), min_heldout)
    except InvalidRequest as err:
        return str(err)
    return None


def list_dpo_runs(settings: Settings) -> list[DpoRunRecord]:
    """Every DPO run and skipped check, newest first."""
    with open_journal(settings) as journal:
        return journal.preferences.dpo_runs()


def running_dpo_runs(settings: Settings) -> list[DpoRunRecord]:
    """DPO runs journaled ``running`` whose process is still alive, oldest first. A run whose
    process is gone (a kill -9) stays ``running`` in the journal but is not listed: it will
    never finish, and must not stop a new run from starting."""
    if not settings.journal_path.exists():
        return []
    with open_journal(settings) as j:
        rows = j.preferences.dpo_runs()
    return sorted(
        (r for r in rows if r.status == DpoStatus.running and pid_alive(r.owner_pid)),
        key=lambda r: r.id,
    )


def served_model(settings: Settings, model_id: str | None = None) -> Path:
    """The model a DPO run started by a client trains: the configured one
    (``ALPHALOOP_DPO_MODEL``), never a folder the client names; ``model_id``, if given, must
    be its name.

    Raises:
        InvalidRequest: no model is configured, or ``model_id`` names another.
    """
    model = settings.dpo_model
    if model is None:
        raise InvalidRequest(
            "no DPO model is configured: set ALPHALOOP_DPO_MODEL to a local model directory "
            "(config, weights, tokenizer), and restart the server that starts runs"
        )
    if model_id is not None and model_id != model.name:
        raise InvalidRequest(
            f"unknown model_id {model_id!r}: the model trained here is {model.name!r} "
            "(ALPHALOOP_DPO_MODEL); leave model_id out or send that name"
        )
    return Path(model).absolute()


def check_dpo_free(settings: Settings, run: str) -> Path:
    """The output folder of a new DPO run named ``run`` (``<home>/dpo/<run>``), once nothing
    stops it from starting: one run at a time, a new name, enough labelled pairs. A caller
    that starts runs from several threads holds its own lock from this check to the start.

    Raises:
        Conflict: a run is going on (a queued ``dpo`` job or a live journaled run), the name
            is taken, or fewer than two labelled pairs.
    """
    out = (settings.home / "dpo" / run).absolute()
    if not settings.journal_path.exists():
        busy: list[int | None] = []
        labelled = 0
    else:
        with open_journal(settings) as journal:
            busy = [j.pid for j in journal.jobs.live("dpo")]
            labelled = len(journal.preferences.list(labelled=True))
        busy = busy or [r.owner_pid for r in running_dpo_runs(settings)]
    if busy:
        raise Conflict(
            f"a DPO run is already running (process {busy[0]}); wait for it to finish and "
            "start again (the list of DPO runs shows when it does)"
        )
    if out.exists():
        raise Conflict(f"a DPO run named {run!r} exists already; pick a new run name")
    _check_enough_pairs(labelled)
    return out
