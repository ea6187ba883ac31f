"""Env-stepping and PPO throughput: ``python -m benchmarks.bench_env [--quick]``.

Compares the batched VecEnv with SB3's ``DummyVecEnv`` of single envs on the same data and the
same random actions, then times one default-knob PPO training run on the embedded S&P 500
training window (what a ``ppo_only`` trial trains on). Reports numbers only; it asserts
nothing, since timings depend on the machine and its load.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from alphaloop.knobs import TrialConfig
from alphaloop.market import load_market
from alphaloop.rl_engine import (
    DEFAULT_N_ENVS,
    DEFAULT_TOTAL_TIMESTEPS,
    BatchedPortfolioVecEnv,
    PortfolioEnv,
    train_ppo,
)
from benchmarks._report import SummaryRow, parse_quick, print_rows

N_ENVS = 64
N_ASSETS = 20
N_DAYS = 6_800
# Target: batched stepping at least this many times DummyVecEnv's rate.
TARGET_STEPPING_RATIO = 10.0


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


def bench_ppo(total_timesteps: int = DEFAULT_TOTAL_TIMESTEPS) -> dict[str, float]:
    """One default-knob PPO run on the embedded training window with the default envs."""
    data = load_market("sp500")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = train_ppo(data.returns[data.train], TrialConfig(), total_timesteps, seed=0)
    return {
        "ppo_n_envs": DEFAULT_N_ENVS,
        "ppo_train_days": data.train.stop - data.train.start,
        "ppo_timesteps": result.timesteps,
        "ppo_updates": len(result.curve),
        "ppo_seconds": result.seconds,
        "ppo_steps_per_s": result.timesteps / result.seconds,
    }


def summary(results: dict[str, Any]) -> list[SummaryRow]:
    return [
        (
            f"env stepping, batched / DummyVecEnv ({N_ENVS} envs)",
            f"{results['ratio']:.1f}x",
            f">= {TARGET_STEPPING_RATIO:g}x",
        ),
        (
            "PPO learn throughput, default knobs",
            f"{results['ppo_steps_per_s']:,.0f} steps/s",
            f"{results['ppo_timesteps']:,} steps in {results['ppo_seconds']:.1f} s",
        ),
    ]


def main(quick: bool = False) -> dict[str, Any]:
    """Runs both benchmarks, prints a table and returns the numbers."""
    results: dict[str, Any] = {"n_envs": N_ENVS, "n_assets": N_ASSETS, "n_days": N_DAYS}
    results.update(bench_stepping(100 if quick else 300))
    # Quick: one rollout of the default 2,048 steps x 4 envs instead of two.
    results.update(bench_ppo(DEFAULT_TOTAL_TIMESTEPS // 2 if quick else DEFAULT_TOTAL_TIMESTEPS))
    rows = [
        (
            f"BatchedPortfolioVecEnv, {N_ENVS} envs",
            f"{results['batched_steps_per_s']:,.0f} steps/s",
        ),
        (f"DummyVecEnv of {N_ENVS} PortfolioEnv", f"{results['dummy_steps_per_s']:,.0f} steps/s"),
        (
            "speed-up (batched / dummy)",
            f"{results['ratio']:.1f}x (target >= {TARGET_STEPPING_RATIO:g}x)",
        ),
        (
            f"PPO learn, default knobs, {DEFAULT_N_ENVS} envs",
            f"{results['ppo_steps_per_s']:,.0f} steps/s",
        ),
        (
            f"PPO run on {results['ppo_train_days']:,} training days",
            f"{results['ppo_timesteps']:,} steps, {results['ppo_updates']} updates, "
            f"{results['ppo_seconds']:.2f} s",
        ),
    ]
    print(
        f"env stepping: {N_ASSETS} assets x {N_DAYS:,} days; PPO: embedded S&P 500 training "
        "window; lookback/episode/rebalance at knob defaults"
    )
    print_rows(rows)
    results["summary"] = summary(results)
    return results


if __name__ == "__main__":
    main(parse_quick(__doc__.splitlines()[0]))
