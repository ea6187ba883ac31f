"""NumpyPPO's rollout buffer: SB3's rollout buffer interface, with its own storage.

:class:`NumpyRolloutBuffer` keeps what a rollout collects and hands it out in minibatches in
the order SB3's ``RolloutBuffer`` does: each env copy's steps in turn (env-major), shuffled by
one ``np.random.permutation`` per pass from numpy's global generator. It stores every array
env-major from the start, so that order is a free reshape rather than the copy SB3's buffer
makes of each array before its first minibatch; at 400 assets the observations alone are
275 MB a rollout. The arrays are made once and reused by every rollout. Advantages are SB3's
GAE, computed as SB3 computes them (the tests check it against SB3's buffer, bit for bit), or
the critic-free estimators of :mod:`~alphaloop.rl_engine.advantages`.

It is also a drop-in rollout buffer for SB3's own ``PPO`` (``add`` takes its tensors and
:meth:`NumpyRolloutBuffer.get` yields SB3's ``RolloutBufferSamples``), which is how the tests
train SB3's PPO, the reference, with the critic-free estimators.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.type_aliases import RolloutBufferSamples

from alphaloop.rl_engine.advantages import (
    ADVANTAGE_ESTIMATORS,
    AdvantageEstimator,
    episode_ends,
    grpo_advantages,
    reinforce_pp_advantages,
    returns_to_go,
)

__all__ = ["NumpyRolloutBuffer"]

# The per-step columns, each (n_envs, buffer_size).
_SCALARS = ("rewards", "episode_starts", "values", "log_probs", "advantages", "returns")


class NumpyRolloutBuffer:
    """A rollout of ``buffer_size`` steps of ``n_envs`` env copies, with its advantages.

    Args:
        buffer_size: steps per env copy.
        observation_space: a ``Box``.
        action_space: a ``Box``.
        device: accepted for SB3's signature; the buffer lives on the CPU.
        gae_lambda: GAE's lambda.
        gamma: the discount.
        n_envs: env copies.
        advantage: ``gae`` (SB3's), ``grpo`` or ``reinforce_pp`` (see
            :mod:`~alphaloop.rl_engine.advantages`).

    Raises:
        ValueError: spaces other than boxes, or an unknown estimator.
    """

    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    episode_starts: np.ndarray
    values: np.ndarray
    log_probs: np.ndarray
    advantages: np.ndarray
    returns: np.ndarray

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        device: torch.device | str = "auto",
        gae_lambda: float = 1,
        gamma: float = 0.99,
        n_envs: int = 1,
        advantage: AdvantageEstimator = "gae",
    ) -> None:
        if not isinstance(observation_space, spaces.Box) or not isinstance(
            action_space, spaces.Box
        ):
            raise ValueError("NumpyRolloutBuffer holds Box observations and Box actions only")
        if advantage not in ADVANTAGE_ESTIMATORS:
            raise ValueError(
                f"unknown advantage estimator {advantage!r}; choose one of "
                f"{', '.join(ADVANTAGE_ESTIMATORS)}"
            )
        del device
        self.buffer_size, self.n_envs = int(buffer_size), int(n_envs)
        self.gae_lambda, self.gamma = gae_lambda, gamma
        self.advantage = advantage
        self.observation_space, self.action_space = observation_space, action_space
        self.obs_shape = observation_space.shape
        self.action_dim = int(np.prod(action_space.shape))
        rows = (self.n_envs, self.buffer_size)
        # Written row by row before a rollout is read, so never cleared.
        self.observations = np.zeros((*rows, *self.obs_shape), dtype=observation_space.dtype)
        self.actions = np.zeros((*rows, self.action_dim), dtype=action_space.dtype)
        for name in _SCALARS:
            setattr(self, name, np.zeros(rows, dtype=np.float32))
        self.pos = 0
        self.full = False

    def reset(self) -> None:
        """Starts a rollout (the storage is kept and overwritten)."""
        for name in _SCALARS:
            getattr(self, name)[:] = 0.0
        self.pos = 0
        self.full = False

    def add(
        self,
        obs: np.ndarray,
        action: np.ndarray,
        reward: np.ndarray,
        episode_start: np.ndarray,
        value: np.ndarray | torch.Tensor,
        log_prob: np.ndarray | torch.Tensor,
    ) -> None:
        """Stores one step of every env copy (SB3's ``RolloutBuffer.add``; the value and the
        log-probability as numpy or as SB3's tensors).

        Raises:
            ValueError: the rollout is already full.
        """
        if self.full:
            raise ValueError(f"the rollout buffer already holds {self.buffer_size} steps")
        t = self.pos
        self.observations[:, t] = obs
        self.actions[:, t] = np.asarray(action).reshape(self.n_envs, self.action_dim)
        self.rewards[:, t] = reward
        self.episode_starts[:, t] = episode_start
        self.values[:, t] = _numpy(value).reshape(-1)
        self.log_probs[:, t] = _numpy(log_prob).reshape(-1)
        self.pos += 1
        self.full = self.pos == self.buffer_size

    def compute_returns_and_advantage(
        self, last_values: np.ndarray | torch.Tensor, dones: np.ndarray
    ) -> None:
        """Fills ``advantages`` and ``returns`` once the rollout is full: GAE with the value of
        the last observations, or the critic-free estimators from the rewards alone."""
        if self.advantage == "gae":
            self._gae(_numpy(last_values).reshape(-1), dones)
            return
        # The estimators work on SB3's (steps, copies) layout, on arrays laid out in it.
        rewards = np.ascontiguousarray(self.rewards.T)
        ends = episode_ends(self.episode_starts.T, dones)
        if self.advantage == "grpo":
            self.advantages.T[:] = grpo_advantages(rewards, ends)
            self.returns.T[:] = returns_to_go(rewards, ends, 1.0)
        else:
            advantages, to_go = reinforce_pp_advantages(rewards, ends, self.gamma)
            self.advantages.T[:] = advantages
            self.returns.T[:] = to_go

    def _gae(self, last_values: np.ndarray, dones: np.ndarray) -> None:
        """SB3's GAE, step by step backwards, in its float32 arithmetic and order."""
        last_gae_lam: Any = 0
        for step in reversed(range(self.buffer_size)):
            if step == self.buffer_size - 1:
                next_non_terminal = 1.0 - dones.astype(np.float32)
                next_values = last_values
            else:
                next_non_terminal = 1.0 - self.episode_starts[:, step + 1]
                next_values = self.values[:, step + 1]
            delta = (
                self.rewards[:, step]
                + self.gamma * next_values * next_non_terminal
                - self.values[:, step]
            )
            last_gae_lam = delta + self.gamma * self.gae_lambda * next_non_terminal * last_gae_lam
            self.advantages[:, step] = last_gae_lam
        self.returns = self.advantages + self.values

    def columns(self) -> tuple[np.ndarray, ...]:
        """Every stored sample, one a row in SB3's order (env-major): observations, actions,
        values, log-probabilities, advantages and returns (views, no copy)."""
        size = self.buffer_size * self.n_envs
        return (
            self.observations.reshape(size, *self.obs_shape),
            self.actions.reshape(size, self.action_dim),
            *(getattr(self, name).reshape(size) for name in _SCALARS[2:]),
        )

    def minibatches(self, batch_size: int | None = None) -> Iterator[tuple[np.ndarray, ...]]:
        """One pass over the rollout in a fresh random order, in minibatches of ``batch_size``
        rows (the whole rollout when None) laid out as :meth:`columns`.

        Raises:
            ValueError: the rollout is not full.
        """
        if not self.full:
            raise ValueError("the rollout buffer is read once it holds a whole rollout")
        size = self.buffer_size * self.n_envs
        # SB3's order: one permutation a pass from numpy's global generator.
        order = np.random.permutation(size)
        columns = self.columns()
        step = size if batch_size is None else batch_size
        for start in range(0, size, step):
            rows = order[start : start + step]
            yield tuple(column[rows] for column in columns)

    def get(self, batch_size: int | None = None) -> Iterator[RolloutBufferSamples]:
        """:meth:`minibatches` as SB3's ``RolloutBuffer.get`` yields them, as tensors."""
        for batch in self.minibatches(batch_size):
            yield RolloutBufferSamples(*(torch.tensor(column) for column in batch))


def _numpy(values: np.ndarray | torch.Tensor) -> np.ndarray:
    return values.detach().numpy() if isinstance(values, torch.Tensor) else np.asarray(values)
