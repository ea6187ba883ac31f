"""A PPO trial's default training budget, apart from the trainer that spends it, and the env's
gymnasium id, apart from the env (``import alphaloop`` registers it by name, importing nothing
of the engine).

The budget's defaults are declared with the budget itself (:class:`alphaloop.spec.TrialBudget`,
which a session that runs no PPO builds too); the trainer reads them from here, not from
:mod:`~alphaloop.rl_engine.ppo`, whose import loads torch and stable-baselines3 (seconds of
each worker process's start).
"""

from __future__ import annotations

from alphaloop.spec import DEFAULT_N_ENVS, DEFAULT_TOTAL_TIMESTEPS

__all__ = ["DEFAULT_N_ENVS", "DEFAULT_TOTAL_TIMESTEPS", "ENV_ID"]

ENV_ID = "alphaloop/PortfolioCVaR-v0"
