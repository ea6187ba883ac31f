"""A session with one trial row of every fate, journaled row by row, and the exported study read
back through Optuna's own readers: what the export tests share."""

from __future__ import annotations

from typing import Any

import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend

from alphaloop.journal import Journal
from alphaloop.knobs import TrialConfig, config_hash
from tests.server.helpers import new_session

N_FOLDS = 3


def session(j: Journal, mode: str = "cufolio_only") -> str:
    return new_session(j, mode=mode, budget=10)


def start(j: Journal, sid: str, kind: str = "search", parent: int | None = None, **knobs: Any):
    config = TrialConfig(**knobs)
    return j.trials.start(
        sid,
        kind=kind,
        config=config.model_dump(),
        config_hash=config_hash(config),
        delta={"changes": knobs, "rationale": "r"},
        parent_id=parent,
        seed=1,
        rationale="r",
        proposer="tpe" if kind == "search" else kind,
    )


def folds(j: Journal, trial_id: int, objectives: dict[int, float]) -> None:
    for fold, objective in objectives.items():
        j.folds.add(
            trial_id,
            fold=fold,
            n_folds=N_FOLDS,
            start_date="2020-01-01",
            end_date="2020-06-30",
            objective=objective,
            metrics={"sharpe": objective},
            result={},
            returns=[0.001, -0.002],
            elapsed_s=0.1,
        )


def fates(j: Journal) -> dict[str, Any]:
    """A session with one row of every fate: a baseline, a kept trial, a raced-out one (its most
    recent fold only), a crash, an invalid proposal and a trial still running."""
    sid = session(j)
    base = start(j, sid, "baseline")
    folds(j, base.id, {0: 0.4, 1: 0.5, 2: 0.6})
    j.trials.finish(base.id, status="keep", objective=0.5, metrics={"sharpe": 0.5})
    kept = start(j, sid, cvar_alpha=0.9, n_scenarios=2000)
    folds(j, kept.id, {0: 0.7, 1: 0.8, 2: 0.9})
    j.trials.finish(kept.id, status="keep", objective=0.8, reason="beats the incumbent")
    raced = start(j, sid, cvar_alpha=0.86, max_position_pct=0.03)
    folds(j, raced.id, {2: -0.4})
    j.trials.finish(raced.id, status="discard", objective=-0.4, reason="raced out on fold 3")
    crash = start(j, sid, cufolio_hold_days=7)
    j.trials.finish(crash.id, status="crash", error="SolverError('no solution')")
    invalid = j.trials.record_invalid(sid, proposer="llm", delta_raw="{}", error="unknown knob")
    running = start(j, sid, cvar_alpha=0.97)
    folds(j, running.id, {2: 0.3})
    return {"sid": sid, "base": base, "kept": kept, "raced": raced, "crash": crash,
            "invalid": invalid, "running": running}  # fmt: skip


def opened(storage: str) -> Any:
    """``storage`` as Optuna opens it: a URL by itself, a path with its journal storage reader
    (as optuna-dashboard opens a journal file)."""
    return storage if "://" in storage else JournalStorage(JournalFileBackend(storage))


def study(storage: str, name: str) -> optuna.Study:
    return optuna.load_study(study_name=name, storage=opened(storage))
