"""Env-stepping and PPO throughput: ``python -m benchmarks.bench_env``.

Compares the batched VecEnv with SB3's ``DummyVecEnv`` of single envs on the same data and the
same random actions, then times one default-knob PPO training run. Reports numbers only; it
asserts nothing, since timings depend on the machine and its load.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from alphaloop.knobs import TrialConfig
from alphaloop.rl_engine import (
    DEFAULT_N_ENVS,
    DEFAULT_TOTAL_TIMESTEPS,
    BatchedPortfolioVecEnv,
    PortfolioEnv,
    train_ppo,
)

N_ENVS = 64
N_ASSETS = 20
N_DAYS = 6_800


def _returns(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(0.0003, 0.012, (N_DAYS, N_ASSETS))


def _steps_per_second(env: VecEnv, actions: np.ndarray, repeats: int = 3) -> float:
    env.seed(0)
    env.reset()
    best = float("inf")
    # Best of a few passes: on a shared machine the minimum is the least noisy estimate.
    for _ in range(repeats):
        began = time.perf_counter()
        for action in actions:
            env.step(action)
        best = min(best, time.perf_counter() - began)
    return actions.shape[0] * env.num_envs / best


def bench_stepping(n_steps: int = 300) -> dict[str, float]:
    """Env steps per second of both VecEnvs over ``n_steps`` identical random action batches."""
    returns = _returns()
    actions = np.random.default_rng(1).normal(0.0, 1.0, (n_steps, N_ENVS, N_ASSETS))
    actions = actions.astype(np.float32)
    make: Callable[[], PortfolioEnv] = lambda: PortfolioEnv(returns)  # noqa: E731
    batched = _steps_per_second(BatchedPortfolioVecEnv(returns, n_envs=N_ENVS), actions)
    dummy = _steps_per_second(DummyVecEnv([make] * N_ENVS), actions)
    return {"batched_steps_per_s": batched, "dummy_steps_per_s": dummy, "ratio": batched / dummy}


def bench_ppo() -> dict[str, float]:
    """One default-knob PPO run with the default number of envs and budget."""
    config = TrialConfig()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = train_ppo(_returns(2), config, seed=0)
    return {
        "ppo_n_envs": DEFAULT_N_ENVS,
        "ppo_timesteps": result.timesteps,
        "ppo_updates": len(result.curve),
        "ppo_seconds": result.seconds,
        "ppo_steps_per_s": result.timesteps / result.seconds,
    }


def main() -> dict[str, Any]:
    """Runs both benchmarks, prints a table and returns the numbers."""
    results: dict[str, Any] = {"n_envs": N_ENVS, "n_assets": N_ASSETS, "n_days": N_DAYS}
    results.update(bench_stepping())
    results.update(bench_ppo())
    rows = [
        (
            f"BatchedPortfolioVecEnv, {N_ENVS} envs",
            f"{results['batched_steps_per_s']:,.0f} steps/s",
        ),
        (f"DummyVecEnv of {N_ENVS} PortfolioEnv", f"{results['dummy_steps_per_s']:,.0f} steps/s"),
        ("speed-up (batched / dummy)", f"{results['ratio']:.1f}x"),
        (
            f"PPO learn, default knobs, {DEFAULT_N_ENVS} envs",
            f"{results['ppo_steps_per_s']:,.0f} steps/s",
        ),
        (
            f"PPO run ({DEFAULT_TOTAL_TIMESTEPS:,} step budget)",
            f"{results['ppo_timesteps']:,} steps, {results['ppo_updates']} updates, "
            f"{results['ppo_seconds']:.2f} s",
        ),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{N_ASSETS} assets x {N_DAYS:,} days, lookback/episode/rebalance at knob defaults")
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    return results


if __name__ == "__main__":
    main()
