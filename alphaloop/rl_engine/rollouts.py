"""How PPO spends its env-step budget, and the rollout buffer of the critic-free estimators.

A trial trains for a fixed env-step budget (a session setting, not a knob), so a proposer cannot
buy a better score with more compute: SB3 only stops at whole rollouts, so :func:`rollout_plan`
fits the rollouts to the budget instead of letting ``n_steps`` decide how far past it a run
goes, and :func:`learn_plan` runs them.
"""

from __future__ import annotations

import math
from typing import Any

from stable_baselines3 import PPO
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback

from alphaloop.rl_engine.advantages import AdvantageEstimator
from alphaloop.rl_engine.numpy_buffer import NumpyRolloutBuffer


def rollout_plan(total_timesteps: int, n_steps: int, n_envs: int) -> list[tuple[int, int]]:
    """How many rollouts of how many steps per env fill an env-step budget exactly.

    SB3 collects whole rollouts of ``n_steps * n_envs`` steps and stops at the first boundary at
    or past its budget, so left alone ``n_steps`` decides the compute: at a 256-step budget
    with one env, ``n_steps=255`` trains 510 steps and ``n_steps=256`` trains 256. Instead each
    env copy takes ``total_timesteps // n_envs`` steps, split into ``k = round(per_env /
    n_steps)`` rollouts (at least one) whose lengths differ by at most one step. Every rollout
    is trained on; none is cut short or dropped. So the budget is a hard cap (exact when
    ``n_envs`` divides it), ``n_steps`` keeps its meaning up to that rounding (a rollout is
    within a factor 1.5 of it, or the whole budget when ``n_steps`` exceeds it), and knobs
    that round to the same plan (``n_steps`` 4,095 and 4,096 at the default budget) train the
    same way.

    Args:
        total_timesteps: env-step budget.
        n_steps: the knob, steps per env per rollout.
        n_envs: parallel env copies.

    Returns:
        ``[(steps per env, number of rollouts), ...]``: one group, or two when the lengths
        differ (the longer rollouts first).

    Raises:
        ValueError: a budget too small for two env steps, or non-positive sizes.
    """
    if n_steps < 1 or n_envs < 1:
        raise ValueError(f"n_steps and n_envs must be >= 1, got {n_steps} and {n_envs}")
    per_env = int(total_timesteps) // n_envs
    if per_env * n_envs < 2:
        raise ValueError(
            f"total_timesteps={total_timesteps} with n_envs={n_envs} leaves fewer than 2 env "
            "steps to train on; PPO needs at least 2 (at least one step per env copy)"
        )
    k = max(1, math.floor(per_env / n_steps + 0.5))
    short, longer = divmod(per_env, k)
    plan = [(short + 1, longer), (short, k - longer)]
    return [(length, count) for length, count in plan if count > 0]


def learn_plan(model: PPO, plan: list[tuple[int, int]], callback: BaseCallback) -> None:
    """Runs ``plan``'s rollouts: one ``learn`` per rollout length, continuing the same episodes.

    The model then holds a fresh, empty rollout buffer: the last rollout's samples (275 MB of
    observations at 400 assets) are not kept through the evaluation that follows.
    """
    for group, (length, count) in enumerate(plan):
        if model.n_steps != length:
            model.n_steps = length
            model.rollout_buffer = _empty_buffer(model)
        model.learn(
            total_timesteps=length * model.n_envs * count,
            callback=callback,
            reset_num_timesteps=group == 0,
        )
    model.rollout_buffer = _empty_buffer(model)


def _empty_buffer(model: PPO) -> RolloutBuffer | NumpyRolloutBuffer:
    """A rollout buffer of ``model.n_steps`` steps; its arrays take memory once written."""
    return model.rollout_buffer_class(
        model.n_steps,
        model.observation_space,
        model.action_space,
        device=model.device,
        gamma=model.gamma,
        gae_lambda=model.gae_lambda,
        n_envs=model.n_envs,
        **model.rollout_buffer_kwargs,
    )


class CriticFreeRolloutBuffer(NumpyRolloutBuffer):
    """The rollout buffer with GRPO or REINFORCE++ advantages in place of GAE.

    Used with ``vf_coef=0`` and a value head fixed at zero (see ``ppo.make_ppo``): the value
    predictions stored, and the time-limit bootstrap ``gamma * V(terminal)`` SB3 adds to a
    truncated step's reward, are then zero, so the advantages come from rewards alone.
    ``returns`` holds the undiscounted (GRPO) or discounted (REINFORCE++) returns-to-go; with
    no value loss they are only reported. (Saved policies trained with these estimators name
    this class, so it keeps its name.)

    Args:
        *args: as for :class:`~alphaloop.rl_engine.numpy_buffer.NumpyRolloutBuffer`.
        advantage: ``grpo`` or ``reinforce_pp`` (see :mod:`alphaloop.rl_engine.advantages`).
        **kwargs: as for :class:`~alphaloop.rl_engine.numpy_buffer.NumpyRolloutBuffer`.
    """

    def __init__(self, *args: Any, advantage: AdvantageEstimator = "grpo", **kwargs: Any) -> None:
        if advantage not in ("grpo", "reinforce_pp"):
            raise ValueError(f"advantage must be grpo or reinforce_pp here, got {advantage!r}")
        super().__init__(*args, advantage=advantage, **kwargs)
