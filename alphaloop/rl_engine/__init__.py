"""Reinforcement-learning engine: the ``alphaloop/PortfolioCVaR-v0`` env, a batched SB3 VecEnv and
PPO training by one trainer, :class:`~alphaloop.rl_engine.numpy_ppo.NumpyPPO` (SB3's PPO with its
loops in numpy; GAE, GRPO or REINFORCE++ advantages), walk-forward weights and policy save/load.

The env is registered with gymnasium as soon as gymnasium is imported (see ``alphaloop``), so
importing this package imports neither: a Mean-CVaR trial worker reads the engine's defaults and
threads without them. Every name loads on first use: the VecEnv and PPO pull in
stable-baselines3 and torch (seconds of import time), which a command that only needs the env,
or only lists things, should not pay for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from alphaloop._lazy import lazy_attributes

if TYPE_CHECKING:
    from alphaloop.rl_engine.advantages import ADVANTAGE_ESTIMATORS, AdvantageEstimator
    from alphaloop.rl_engine.defaults import DEFAULT_N_ENVS, DEFAULT_TOTAL_TIMESTEPS, ENV_ID
    from alphaloop.rl_engine.env import PortfolioEnv, default_returns
    from alphaloop.rl_engine.numpy_ppo import NumpyPPO
    from alphaloop.rl_engine.policy import load_policy, policy_weights, save_policy
    from alphaloop.rl_engine.ppo import TrainResult, make_ppo, train_ppo
    from alphaloop.rl_engine.threads import (
        TRIAL_THREADS,
        set_worker_threads,
        threads_per_worker,
        trial_threads,
    )
    from alphaloop.rl_engine.vec_env import BatchedPortfolioVecEnv

__all__ = [
    "ADVANTAGE_ESTIMATORS",
    "DEFAULT_N_ENVS",
    "DEFAULT_TOTAL_TIMESTEPS",
    "ENV_ID",
    "TRIAL_THREADS",
    "AdvantageEstimator",
    "BatchedPortfolioVecEnv",
    "NumpyPPO",
    "PortfolioEnv",
    "TrainResult",
    "default_returns",
    "load_policy",
    "make_ppo",
    "policy_weights",
    "save_policy",
    "set_worker_threads",
    "threads_per_worker",
    "train_ppo",
    "trial_threads",
]

_LAZY = {
    "ADVANTAGE_ESTIMATORS": "alphaloop.rl_engine.advantages",
    "AdvantageEstimator": "alphaloop.rl_engine.advantages",
    "BatchedPortfolioVecEnv": "alphaloop.rl_engine.vec_env",
    "DEFAULT_N_ENVS": "alphaloop.rl_engine.defaults",
    "DEFAULT_TOTAL_TIMESTEPS": "alphaloop.rl_engine.defaults",
    "ENV_ID": "alphaloop.rl_engine.defaults",
    "PortfolioEnv": "alphaloop.rl_engine.env",
    "default_returns": "alphaloop.rl_engine.env",
    "NumpyPPO": "alphaloop.rl_engine.numpy_ppo",
    "TRIAL_THREADS": "alphaloop.rl_engine.threads",
    "TrainResult": "alphaloop.rl_engine.ppo",
    "load_policy": "alphaloop.rl_engine.policy",
    "make_ppo": "alphaloop.rl_engine.ppo",
    "policy_weights": "alphaloop.rl_engine.policy",
    "save_policy": "alphaloop.rl_engine.policy",
    "set_worker_threads": "alphaloop.rl_engine.threads",
    "threads_per_worker": "alphaloop.rl_engine.threads",
    "train_ppo": "alphaloop.rl_engine.ppo",
    "trial_threads": "alphaloop.rl_engine.threads",
}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
