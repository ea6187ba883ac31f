"""``alphaloop/PortfolioCVaR-v0``: a long-only portfolio env over a (T, N) array of daily returns.

The agent sees recent log returns and its current weights, emits one logit per asset and is
rebalanced to the softmax of those logits every ``rebal_freq`` days. The reward is the log growth
of the held period minus a turnover cost and a downside-variance penalty, so risk shaping is part
of the knobs a proposer may tune, while the evaluator charges its own costs on validation.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np

from alphaloop.rl_engine.env_core import (
    EpisodeRisk,
    PortfolioCore,
    action_space_for,
    default_returns,
    knob_default,
    observation_space_for,
)

__all__ = [
    "PortfolioEnv",
    "action_space_for",
    "default_returns",
    "observation_space_for",
]


class PortfolioEnv(PortfolioCore, gym.Env[np.ndarray, np.ndarray]):
    """Long-only, fully invested portfolio over ``returns`` with periodic rebalancing.

    **Observation** (float32, ``lookback * N + N``): the log returns ``log(1 + r)`` of the last
    ``lookback`` days before the current day for every asset, flattened day-major and clipped
    to +-5, followed by the current (drifted) weights.

    **Action** (``N`` logits in [-10, 10]): target weights are ``softmax(clip(action, -10, 10))``.

    **Step**: at current day ``t`` the portfolio is rebalanced from its drifted weights
    ``w_old`` to the target ``w`` (``turnover = sum_i |w_i - w_old_i|``), then held for
    ``h = min(rebal_freq, days left in the episode)`` days ``t .. t+h-1`` while the weights drift
    with the returns. With ``r_p,d`` the simple return of the drifting portfolio on day ``d``,

    ``reward = log(prod_d (1 + r_p,d)) - turnover_cost_bps / 1e4 * turnover
    - vol_penalty * sum_d min(r_p,d, 0) ** 2``

    i.e. log gross growth, minus a linear turnover cost, minus the downside semi-variance
    (sum of squared negative daily portfolio returns) of the held days, scaled by
    ``vol_penalty``. The cost enters the reward only; ``info["gross_return"]`` is the growth
    before costs minus one.

    **Episode**: ``episode_len`` days from a start day drawn uniformly from
    ``[lookback, T - episode_len]`` with the env's seeded ``np_random`` (or given as
    ``options={"start_day": s}``), i.e. ``ceil(episode_len / rebal_freq)`` steps, the last
    possibly shorter. Weights start at ``1/N``. The end is a time limit: ``truncated=True``,
    ``terminated=False``. ``info`` has ``weights`` (the target weights just set), ``turnover``
    and ``gross_return``; the reset info has ``start_day``.

    **Drawdown truncation** (off by default): with ``truncate_drawdown = d`` the episode also
    ends, as ``truncated=True``, at the end of the step during which the portfolio's value fell
    more than ``d`` below its running peak of the episode. The value is marked at every held
    day's close, net of the turnover cost and starting at 1 (see ``env_core.drawdown_path``);
    ``info["drawdown_breach"]`` says whether this step breached. That step's reward then loses
    ``(1 - stop_properly) * |R|``, ``R`` being the episode's total reward including the step:
    the episode counts ``c R`` for a gain and ``(2 - c) R`` for a loss (``c = stop_properly``),
    so stopping on a breach never pays, and ``c = 1`` leaves rewards as they are.

    Args:
        returns: (T, N) simple daily returns, finite and > -1, N >= 2. Defaults to
            :func:`default_returns`.
        lookback: days of history observed.
        episode_len: trading days per episode.
        rebal_freq: days between rebalances.
        turnover_cost_bps: cost per unit turnover in basis points (training reward only).
        vol_penalty: weight of the downside semi-variance penalty.
        truncate_drawdown: drawdown from the episode's peak, in (0, 1), that ends an episode;
            None never ends one early.
        stop_properly: in [0, 1], how much of a truncated episode's reward it keeps.
        render_mode: unused; accepted for the gymnasium API.

    Raises:
        ValueError: unusable data or parameters (message names the bad value).
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium's convention

    def __init__(
        self,
        returns: np.ndarray | None = None,
        lookback: int = knob_default("lookback"),
        episode_len: int = knob_default("episode_len"),
        rebal_freq: int = knob_default("rebal_freq"),
        turnover_cost_bps: float = knob_default("turnover_cost_bps"),
        vol_penalty: float = knob_default("vol_penalty"),
        render_mode: str | None = None,
        truncate_drawdown: float | None = None,
        stop_properly: float = 1.0,
    ) -> None:
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
        self.render_mode = render_mode
        self.observation_space, self.action_space = self._spaces()
        # The state of a batch of one, the shape the shared step and observation work on.
        self._days: np.ndarray | None = None
        self._ends = np.zeros(1, dtype=np.int64)
        self._weights = np.full((1, self.n_assets), 1.0 / self.n_assets)
        self._risk = EpisodeRisk.zeros(1)

    @property
    def steps_per_episode(self) -> int:
        """Number of ``step`` calls in an episode."""
        return math.ceil(self.episode_len / self.rebal_freq)

    @property
    def day(self) -> int | None:
        """Index of the next day to be held (``None`` before the first reset)."""
        return None if self._days is None else int(self._days[0])

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Starts an episode at a random (or ``options["start_day"]``) day with equal weights."""
        super().reset(seed=seed)
        if options and options.get("start_day") is not None:
            start = self._checked_start(options["start_day"])
        else:
            start = int(self.np_random.integers(self.first_start_day, self.last_start_day + 1))
        self._days = np.array([start], dtype=np.int64)
        self._ends = self._days + self.episode_len
        self._weights = np.full((1, self.n_assets), 1.0 / self.n_assets)
        self._risk = EpisodeRisk.zeros(1)
        return self._observation(), {"start_day": start}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Rebalances to ``softmax(action)`` and holds for up to ``rebal_freq`` days."""
        if self._days is None or self._days[0] >= self._ends[0]:
            raise RuntimeError("the episode is over or not started: call reset() first")
        logits = np.asarray(action, dtype=np.float64).reshape(1, self.n_assets)
        if not np.isfinite(logits).all():
            raise ValueError(f"action must be finite logits, got {action!r}")
        step = self._step(logits, self._weights, self._days, self._ends)
        self._weights = step.drifted
        self._days = step.day
        reward = step.reward
        truncated = bool(step.day[0] >= self._ends[0])
        info = {
            "weights": step.target[0],
            "turnover": float(step.turnover[0]),
            "gross_return": float(step.gross_return[0]),
        }
        if self.truncate_drawdown is not None:
            reward, breached, self._risk = self._risk_step(step, self._risk)
            info["drawdown_breach"] = bool(breached[0])
            if breached[0]:
                truncated = True
                self._ends = self._days.copy()  # the episode is over: step() now refuses
        return self._observation(), float(reward[0]), False, truncated, info

    def _observation(self) -> np.ndarray:
        return self._observe(self._days, self._weights)[0]
