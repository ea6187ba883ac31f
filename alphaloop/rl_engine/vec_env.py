"""A stable-baselines3 ``VecEnv`` that steps many :class:`PortfolioEnv` copies in one numpy call.

PPO spends most of a rollout in env stepping when each of its copies is a Python object stepped
in a loop (``DummyVecEnv``). Here the state of every copy is one row of a few arrays, and a step
is a handful of vectorised operations over all rows at once.

The batched env is a drop-in for ``DummyVecEnv`` of ``PortfolioEnv`` copies: every copy keeps
its own random generator, seeded exactly as gymnasium seeds a single env (``seed + i``), so the
same seeds give the same start days and hence, step for step, the same observations, rewards
and dones. Both run the kernels of ``env_core``, which keep each row's arithmetic independent of
the batch size, so "the same" means bit-identical.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)

from alphaloop.rl_engine.env_core import EpisodeRisk, PortfolioCore, knob_default

# Changing these would invalidate arrays precomputed from them; build a new env instead.
_STRUCTURAL = frozenset(
    {"returns", "lookback", "episode_len", "rebal_freq", "n_days", "n_assets", "truncate_drawdown"}
)


class BatchedPortfolioVecEnv(PortfolioCore, VecEnv):
    """``n_envs`` copies of :class:`~alphaloop.rl_engine.env.PortfolioEnv` stepped together.

    Same observation, action, reward and episode rules as the single env (see its docstring);
    same SB3 conventions as ``DummyVecEnv``: ``float32`` rewards, ``done = truncated``, and on
    the step that ends an episode ``infos[i]["terminal_observation"]`` holds the last
    observation, ``infos[i]["TimeLimit.truncated"]`` is True and the returned observation is
    already the first one of the next episode. An episode ended by the drawdown rule (see
    ``PortfolioEnv``) is such a truncation too, with ``infos[i]["drawdown_breach"]`` True.

    Seeding: ``seed(s)`` then ``reset()`` seeds copy ``i`` with ``s + i``; each later
    auto-reset draws the next start day from that copy's generator, as a seeded single env
    would. ``set_options([{"start_day": d}, ...])`` forces start days at the next ``reset()``.

    Attributes are shared by all copies: ``get_attr`` reports the one value for every index,
    ``set_attr`` changes it for all copies (only reward parameters such as ``vol_penalty``
    may change after construction) and ``env_method`` calls a method once.

    Args:
        returns: (T, N) simple daily returns (see ``PortfolioEnv``); defaults to the env's
            synthetic data.
        n_envs: number of copies.
        lookback, episode_len, rebal_freq, turnover_cost_bps, vol_penalty,
            truncate_drawdown, stop_properly: as for ``PortfolioEnv``.

    Raises:
        ValueError: unusable data or parameters.
    """

    def __init__(
        self,
        returns: np.ndarray | None = None,
        n_envs: int = 4,
        lookback: int = knob_default("lookback"),
        episode_len: int = knob_default("episode_len"),
        rebal_freq: int = knob_default("rebal_freq"),
        turnover_cost_bps: float = knob_default("turnover_cost_bps"),
        vol_penalty: float = knob_default("vol_penalty"),
        truncate_drawdown: float | None = None,
        stop_properly: float = 1.0,
    ) -> None:
        if isinstance(n_envs, bool) or int(n_envs) != n_envs or n_envs < 1:
            raise ValueError(f"n_envs must be a positive integer, got {n_envs!r}")
        self._setup(
            returns,
            lookback,
            episode_len,
            rebal_freq,
            turnover_cost_bps,
            vol_penalty,
            truncate_drawdown,
            stop_properly,
        )
        self.render_mode: str | None = None  # read by VecEnv.__init__ through get_attr
        n_envs = int(n_envs)
        super().__init__(n_envs, *self._spaces())
        self._rngs: list[np.random.Generator | None] = [None] * n_envs
        self._start = np.zeros(n_envs, dtype=np.int64)
        self._day = np.zeros(n_envs, dtype=np.int64)
        self._end = np.zeros(n_envs, dtype=np.int64)
        self._weights = np.full((n_envs, self.n_assets), 1.0 / self.n_assets)
        self._risk = EpisodeRisk.zeros(n_envs)
        self._actions: np.ndarray | None = None
        self._started = False

    @property
    def start_days(self) -> np.ndarray:
        """Start day of every copy's current episode (a copy)."""
        return self._start.copy()

    @property
    def days(self) -> np.ndarray:
        """Next day each copy will hold (a copy)."""
        return self._day.copy()

    @property
    def weights(self) -> np.ndarray:
        """Current drifted weights of every copy, (n_envs, N) (a copy)."""
        return self._weights.copy()

    def reset(self) -> VecEnvObs:
        """Starts a new episode in every copy, using pending seeds and options once."""
        starts = np.empty(self.num_envs, dtype=np.int64)
        for i in range(self.num_envs):
            if self._seeds[i] is not None:
                self._rngs[i] = seeding.np_random(self._seeds[i])[0]
            forced = self._options[i].get("start_day")
            if forced is not None:
                starts[i] = self._checked_start(forced, f" (env {i})")
            else:
                starts[i] = self._draw_start(i)
        self._begin(np.arange(self.num_envs), starts)
        self._reset_seeds()
        self._reset_options()
        self._started = True
        return self._observe(self._day, self._weights)

    def step_async(self, actions: np.ndarray) -> None:
        """Stores the (n_envs, N) logits for :meth:`step_wait`."""
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        """Rebalances every copy and holds it for up to ``rebal_freq`` days, all at once."""
        if not self._started or self._actions is None:
            raise RuntimeError("call reset() and step_async() before step_wait()")
        logits = np.asarray(self._actions, dtype=np.float64).reshape(self.num_envs, self.n_assets)
        self._actions = None
        if not np.isfinite(logits).all():
            raise ValueError("actions must be finite logits; got NaN or inf")
        step = self._step(logits, self._weights, self._day, self._end)
        self._weights = step.drifted
        self._day = step.day
        reward = step.reward
        dones = self._day >= self._end
        breached = None
        if self.truncate_drawdown is not None:
            reward, breached, self._risk = self._risk_step(step, self._risk)
            dones |= breached
        obs = self._observe(self._day, self._weights)
        # SB3 wants one info dict per copy; building them is the only per-copy Python work of
        # an ordinary step.
        infos: list[dict[str, Any]] = [
            {"weights": w, "turnover": t, "gross_return": g, "TimeLimit.truncated": d}
            for w, t, g, d in zip(
                step.target,
                step.turnover.tolist(),
                step.gross_return.tolist(),
                dones.tolist(),
                strict=True,
            )
        ]
        if breached is not None:
            for info, hit in zip(infos, breached.tolist(), strict=True):
                info["drawdown_breach"] = hit
        if dones.any():
            finished = np.flatnonzero(dones)
            terminal = obs[finished]
            # One draw per finished copy from its own generator, once per episode: the price
            # of drawing exactly the start days independently seeded single envs would.
            starts = np.array([self._draw_start(i) for i in finished], dtype=np.int64)
            self._begin(finished, starts)
            obs[finished] = self._observe(self._day[finished], self._weights[finished])
            for k, i in enumerate(finished.tolist()):
                infos[i]["terminal_observation"] = terminal[k]
        return obs, reward.astype(np.float32), dones, infos

    def close(self) -> None:
        """Nothing to release: all state is in-process arrays."""

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The shared value of ``attr_name``, once per requested index."""
        value = getattr(self, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Sets a shared attribute; all copies share it, so ``indices`` must cover them all."""
        targets = set(self._get_indices(indices))
        if targets != set(range(self.num_envs)):
            raise ValueError(
                f"all {self.num_envs} copies share attribute {attr_name!r}; it can only be set "
                f"for all of them, not for indices {sorted(targets)}"
            )
        if attr_name in _STRUCTURAL:
            raise ValueError(f"{attr_name!r} cannot change after construction; build a new env")
        setattr(self, attr_name, value)

    def env_method(
        self,
        method_name: str,
        *method_args: Any,
        indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> list[Any]:
        """Calls a shared method once and reports its result for every requested index."""
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._get_indices(indices)]

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None
    ) -> list[bool]:
        """The copies are bare arrays, wrapped by nothing."""
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """Rendering is not supported; one ``None`` per copy."""
        return [None] * self.num_envs

    def _draw_start(self, i: int) -> int:
        rng = self._rngs[i]
        if rng is None:
            # Unseeded, like a gymnasium env whose np_random is first used without a seed.
            rng = self._rngs[i] = seeding.np_random()[0]
        return int(rng.integers(self.first_start_day, self.last_start_day + 1))

    def _begin(self, indices: np.ndarray, starts: np.ndarray) -> None:
        self._start[indices] = starts
        self._day[indices] = starts
        self._end[indices] = starts + self.episode_len
        self._weights[indices] = 1.0 / self.n_assets
        for values in self._risk:
            values[indices] = 0.0
        for i, start in zip(indices.tolist(), starts.tolist(), strict=True):
            self.reset_infos[i] = {"start_day": start}
