"""Library entries of each kind for the portfolio manager's tests, on the synthetic data."""

from __future__ import annotations

from typing import Any

from alphaloop import library
from alphaloop.journal import Journal, PolicyRecord
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.market import load_market
from alphaloop.rl_engine import save_policy, train_ppo
from alphaloop.settings import Settings
from tests.library.helpers import session_and_trial

DATA = "synthetic:3"
SYMBOLS = ["A00", "A01", "A02", "A03", "A04", "A05"]
# Tiny PPO (2 envs x 64 steps, 2 rollouts) and few scenarios: seconds per kind.
CONFIG = TrialConfig(
    n_scenarios=1000,
    cufolio_hold_days=7,
    rebal_freq=3,
    n_steps=64,
    batch_size=32,
    lookback=10,
    max_position_pct=0.25,
)
BUDGET = {"total_timesteps": 256, "n_envs": 2, "eval_cost_bps": 10.0}
MODES = {"mean_cvar": "cufolio_only", "ppo": "ppo_only", "unified": "unified"}


def add_policy(journal: Journal, settings: Settings, kind: str, seed: int = 5) -> PolicyRecord:
    """A library entry of ``kind`` (PPO ones trained for real on TRAIN, copied into the library
    with their sha256)."""
    trial = session_and_trial(journal, mode=MODES[kind])
    fields: dict[str, Any] = {}
    if kind != "mean_cvar":
        data = load_market(DATA)
        trained = train_ppo(data.returns[data.train], CONFIG, 256, 2, seed)
        raw = save_policy(trained.model, settings.home / "scratch" / f"{kind}.zip")
        path, sha = library.copy_into_library(raw, settings.policies_dir)
        fields = {"path": str(path), "sha256": sha}
    return journal.policies.add(
        kind=kind,
        source="manual",
        session_id=trial.session_id,
        trial_id=trial.id,
        mode=MODES[kind],
        config=CONFIG.model_dump(),
        config_hash=config_hash(CONFIG),
        seed=seed,
        symbols=SYMBOLS,
        data_spec={"data": DATA},
        trial_budget=BUDGET,
        objective={"metric": "sharpe"},
        **fields,
    )
