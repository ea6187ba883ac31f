"""A PPO trial's default training budget, apart from the trainer that spends it, and the env's
gymnasium id, apart from the env (``import alphaloop`` registers it by name, importing nothing).

The evaluator's session settings (``trials.TrialBudget``) default to these numbers, and a
session that runs no PPO (``cufolio_only``) still builds that model: so they live in a module
that imports nothing, not in :mod:`~alphaloop.rl_engine.ppo`, whose import loads torch and
stable-baselines3 (seconds of each worker process's start).
"""

from __future__ import annotations

__all__ = ["DEFAULT_N_ENVS", "DEFAULT_TOTAL_TIMESTEPS", "ENV_ID"]

ENV_ID = "alphaloop/PortfolioCVaR-v0"

# Measured with the default knobs on 20 assets x 6,800 days, lookback 20, on a shared 2-core
# CPU: 4 envs x 2 rollouts of 2,048 steps (2 PPO updates of 10 epochs x 128 minibatches) train
# in 5.4-6.7 s, within a 10 s trial budget with room for load. 2 envs took 3.7 s but give each
# update half the data; 8 envs took 12.4 s. Minibatch updates dominate, not env stepping.
# (Those times are SB3's own loops; NumpyPPO trains the same policy in about a third of it.)
DEFAULT_N_ENVS = 4
DEFAULT_TOTAL_TIMESTEPS = 16_384
