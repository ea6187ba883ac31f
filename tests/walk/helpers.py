"""A tiny walk on synthetic data, run through the command line into a home of its own: four
quarterly epochs whose picks differ (the best rule), in seconds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.settings import Settings, get_settings

# The request: what the API and the chat tool are asked for the same walk.
TINY: dict[str, object] = {
    "goal": "maximise Sharpe",
    "data": "synthetic",
    "mode": "cufolio_only",
    "budget": 4,
    "noise_seeds": 2,
    "folds": 1,
    "fold_days": 126,
    "cadence": "quarterly",
    "rule": "best",
    "proposer": "tpe",
    "start": "2014-10-01",
}


def tiny_args() -> list[str]:
    """``TINY`` as the command line takes it."""
    args = ["walk", str(TINY["goal"])]
    for name, value in TINY.items():
        if name != "goal":
            args += ["--" + name.replace("_", "-"), str(value)]
    return args


def tiny_walk(home: Path) -> tuple[Settings, str]:
    """Runs ``TINY`` with ``alphaloop walk`` in ``home``; its settings and the walk's id."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ALPHALOOP_HOME", str(home))
        for name in ("ALPHALOOP_LLM_BASE_URL", "ALPHALOOP_LLM_MODEL"):
            mp.delenv(name, raising=False)
        result = CliRunner().invoke(app, [*tiny_args(), "--json"])
        assert result.exit_code == 0, result.output
        return get_settings(), json.loads(result.stdout)["walk"]["id"]
