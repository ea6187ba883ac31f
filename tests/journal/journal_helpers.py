"""Row factories and a subprocess runner shared by the journal tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from alphaloop.journal import Journal, TrialRecord
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.spec import Objective, SessionSpec, TrialBudget

REPO = Path(__file__).resolve().parents[2]


def new_session(journal: Journal, **overrides: Any) -> str:
    values: dict[str, Any] = dict(
        goal="maximise Sharpe, max drawdown under 15%",
        mode="cufolio_only",
        objective={"metric": "sharpe", "max_drawdown": 0.15},
        proposer="tpe",
        budget=5,
        seed=7,
        data_source="synthetic",
        data_fingerprint="fp-123",
        settings={
            "spec": SessionSpec(
                goal="maximise Sharpe, max drawdown under 15%",
                objective=Objective(max_drawdown=0.15),
                proposer="tpe",
                budget=5,
                seed=7,
                data="synthetic",
                train_end="2020-12-31",
                val_end="2022-12-31",
                trial_budget=TrialBudget(n_envs=4, total_timesteps=2048),
                folds=1,
            ).model_dump(mode="json")
        },
        baseline_config=TrialConfig().model_dump(),
    )
    return journal.sessions.create(**{**values, **overrides})


def store_settings(journal: Journal, session_id: str, settings: dict[str, Any]) -> None:
    """Writes a session's ``settings`` column as given, unchecked: a row another alphaloop (an
    older one, or one with other bounds) wrote."""
    with journal._write() as conn:
        conn.execute(
            "UPDATE sessions SET settings = ? WHERE id = ?", (json.dumps(settings), session_id)
        )


def new_trial(journal: Journal, session_id: str, **overrides: Any) -> TrialRecord:
    config = TrialConfig(lookback=30)
    values: dict[str, Any] = dict(
        kind="search",
        config=config.model_dump(),
        config_hash=config_hash(config),
        delta={"changes": {"lookback": 30}, "rationale": "longer memory"},
        parent_id=None,
        seed=7,
        rationale="longer memory",
        proposer="tpe",
    )
    return journal.trials.start(session_id, **{**values, **overrides})


def run_python(code: str, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    """Runs ``code`` in a fresh interpreter that imports this checkout of alphaloop."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
        ),
    }
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=REPO,
        check=False,
    )
