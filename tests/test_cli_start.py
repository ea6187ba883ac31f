"""Start-up of the command line and of ``import alphaloop``: what a fresh interpreter loads.

Listing commands or reading the journal must not load the research loop, the evaluator or the
engines (torch alone is seconds and hundreds of MB); each case runs in a new interpreter, since
this test process has loaded all of them long ago. ``benchmarks/bench_cli_start.py`` measures
the time and memory; this checks the cause.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from alphaloop.journal import Journal
from alphaloop.knobs import TrialConfig, config_hash

REPO = Path(__file__).resolve().parents[1]

# Modules a command that lists or reads must not load. numpy is here too: it is ~20 MB and a
# tenth of a second of every start, and nothing that only reads the journal needs it.
HEAVY = (
    "torch",
    "stable_baselines3",
    "pandas",
    "numpy",
    "openai",
    "plotly",
    "trl",
    "scipy",
    "cvxpy",
    "sklearn",
    "skfolio",
    "gymnasium",
    "langgraph",
    "langchain_core",
    "optuna",
    "fastapi",
    "uvicorn",
    "ray",
    "transformers",
    "sqlite_utils",  # the journal writes rows with it; reads need plain sqlite3 only
)

# Runs the CLI as the ``alphaloop`` script does, then reports the heavy modules loaded, on
# stderr's last line (stdout is the command's).
_RUN_CLI = """
import json, sys
sys.argv = ["alphaloop", *sys.argv[1:]]
from alphaloop.cli import main
try:
    main()
except SystemExit as stop:
    code = stop.code or 0
else:
    code = 0
print(json.dumps({{"code": code, "heavy": [m for m in {heavy!r} if m in sys.modules]}}),
      file=sys.stderr)
"""


def _fresh(code: str, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ALPHALOOP_HOME": str(home), "COLUMNS": "80"}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _populate(home: Path) -> None:
    """A session with finished trials and one whose process died while it ran."""
    config = TrialConfig()
    with Journal(home / "journal.db") as journal:
        sid = journal.sessions.create(
            goal="maximise validation Sharpe", mode="cufolio_only",
            objective={"metric": "sharpe"}, proposer="tpe", budget=5, seed=0,
            data_source="synthetic", data_fingerprint=None, settings={},
            baseline_config=config.model_dump(),
        )  # fmt: skip
        for i in range(3):
            row = journal.trials.start(
                sid, kind="search", config=config.model_dump(), config_hash=config_hash(config),
                delta={"changes": {}}, parent_id=None, seed=i, rationale="", proposer="tpe",
            )  # fmt: skip
            if i < 2:
                journal.trials.finish(
                    row.id, status="discard", objective=0.1 * i, metrics={"sharpe": 0.1 * i},
                    val_returns=[0.001, -0.002, 0.003], elapsed_s=0.4,
                )  # fmt: skip


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    empty = tmp_path_factory.mktemp("empty-home")
    populated = tmp_path_factory.mktemp("populated-home")
    _populate(populated)
    return {"empty": empty, "populated": populated}


@pytest.mark.parametrize(
    "argv",
    [
        ("--help",),
        ("sessions", "--json"),
        ("status", "--json"),
        ("sessions",),
        ("status",),
        ("pm", "--help"),
        ("research", "--help"),
    ],
    ids=" ".join,
)
@pytest.mark.parametrize("home", ["empty", "populated"])
def test_listing_and_reading_load_no_heavy_module(
    argv: tuple[str, ...], home: str, homes: dict[str, Path]
) -> None:
    done = _fresh(_RUN_CLI.format(heavy=HEAVY), *argv, home=homes[home])
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, done.stderr
    assert report["heavy"] == [], f"`alphaloop {' '.join(argv)}` loaded {report['heavy']}"
    if argv[-1] == "--json":
        json.loads(done.stdout)  # the command still did its work


def test_json_reads_are_the_same_on_a_populated_home(homes: dict[str, Path]) -> None:
    done = _fresh(_RUN_CLI.format(heavy=HEAVY), "status", "--json", home=homes["populated"])
    status = json.loads(done.stdout)
    assert status["session"]["goal"] == "maximise validation Sharpe"
    assert status["counted_trials"] == 2


def test_import_alphaloop_registers_the_env_without_torch(tmp_path: Path) -> None:
    code = """
import sys
import typing
import alphaloop
before = sorted(m for m in ("gymnasium", "torch", "stable_baselines3") if m in sys.modules)
import gymnasium as gym
import numpy as np
returns = np.random.default_rng(0).normal(0.0005, 0.01, (200, 4))
env = gym.make("alphaloop/PortfolioCVaR-v0", returns=returns, lookback=10, episode_len=20)
obs, _ = env.reset(seed=0)
env.step(env.action_space.sample())
print(before, "torch" in sys.modules, env.unwrapped.__class__.__name__)
"""
    done = _fresh(code, home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "[] False PortfolioEnv"


def test_the_env_registers_when_gymnasium_came_first(tmp_path: Path) -> None:
    code = (
        "import gymnasium as gym, alphaloop; "
        "print(gym.spec('alphaloop/PortfolioCVaR-v0').entry_point)"
    )
    done = _fresh(code, home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "alphaloop.rl_engine.env:PortfolioEnv"


def test_the_metric_flag_help_names_every_objective_metric() -> None:
    # The choices are read on parsing (their module loads numpy); the help text names them.
    from alphaloop.cli._app import MetricOption
    from alphaloop.vocabulary import METRICS

    help_text = typing.get_args(MetricOption)[1].help
    assert all(metric in help_text for metric in METRICS), help_text
