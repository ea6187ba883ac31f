"""``alphaloop/PortfolioCVaR-v0``: a long-only portfolio env over a (T, N) array of daily returns.

The agent sees recent log returns and its current weights, emits one logit per asset and is
rebalanced to the softmax of those logits every ``rebal_freq`` days. The reward is the log growth
of the held period minus a turnover cost and a downside-variance penalty, so risk shaping is part
of the knobs a proposer may tune, while the evaluator charges its own costs on validation.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from alphaloop.rl_engine._core import (
    LOG_RETURN_CLIP,
    LOGIT_CLIP,
    check_params,
    knob_default,
    observable_log_returns,
    softmax_weights,
    step_reward,
    validate_returns,
)

ENV_ID = "alphaloop/PortfolioCVaR-v0"


@functools.cache
def default_returns() -> np.ndarray:
    """The data ``gymnasium.make(ENV_ID)`` runs on when none is given: 500 days x 4 assets.

    Seeded Gaussian returns with distinct drifts and volatilities (a bond-like, two equity-like
    and one high-volatility asset), so there is something to learn and results are repeatable.
    """
    rng = np.random.default_rng(20240607)
    mean = np.array([0.0002, 0.0004, 0.0005, 0.0003])
    vol = np.array([0.003, 0.010, 0.014, 0.025])
    returns = mean + vol * rng.standard_normal((500, 4))
    returns.setflags(write=False)
    return returns


def observation_space_for(lookback: int, n_assets: int) -> spaces.Box:
    """Box of ``lookback * n_assets`` clipped log returns (day-major) then ``n_assets`` weights."""
    low = np.concatenate(
        [np.full(lookback * n_assets, -LOG_RETURN_CLIP), np.zeros(n_assets)]
    ).astype(np.float32)
    high = np.concatenate(
        [np.full(lookback * n_assets, LOG_RETURN_CLIP), np.ones(n_assets)]
    ).astype(np.float32)
    return spaces.Box(low=low, high=high, dtype=np.float32)


def action_space_for(n_assets: int) -> spaces.Box:
    """Box of one logit per asset in ``[-LOGIT_CLIP, LOGIT_CLIP]``."""
    return spaces.Box(low=-LOGIT_CLIP, high=LOGIT_CLIP, shape=(n_assets,), dtype=np.float32)


class PortfolioEnv(gym.Env[np.ndarray, np.ndarray]):
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

    Args:
        returns: (T, N) simple daily returns, finite and > -1, N >= 2. Defaults to
            :func:`default_returns`.
        lookback: days of history observed.
        episode_len: trading days per episode.
        rebal_freq: days between rebalances.
        turnover_cost_bps: cost per unit turnover in basis points (training reward only).
        vol_penalty: weight of the downside semi-variance penalty.
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
    ) -> None:
        check_params(lookback, episode_len, rebal_freq, turnover_cost_bps, vol_penalty)
        data = default_returns() if returns is None else returns
        self.returns = validate_returns(data, min_rows=int(lookback) + int(episode_len))
        self.n_days, self.n_assets = self.returns.shape
        self.lookback = int(lookback)
        self.episode_len = int(episode_len)
        self.rebal_freq = int(rebal_freq)
        self.turnover_cost_bps = float(turnover_cost_bps)
        self.vol_penalty = float(vol_penalty)
        self.render_mode = render_mode
        self.observation_space = observation_space_for(self.lookback, self.n_assets)
        self.action_space = action_space_for(self.n_assets)
        self._log_returns = observable_log_returns(self.returns)
        self._day: int | None = None
        self._end = 0
        self._weights = np.full(self.n_assets, 1.0 / self.n_assets)

    @property
    def first_start_day(self) -> int:
        """Earliest episode start: the first day with a full lookback window behind it."""
        return self.lookback

    @property
    def last_start_day(self) -> int:
        """Latest episode start that still fits a whole episode in the data."""
        return self.n_days - self.episode_len

    @property
    def steps_per_episode(self) -> int:
        """Number of ``step`` calls in an episode."""
        return math.ceil(self.episode_len / self.rebal_freq)

    @property
    def day(self) -> int | None:
        """Index of the next day to be held (``None`` before the first reset)."""
        return self._day

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Starts an episode at a random (or ``options["start_day"]``) day with equal weights."""
        super().reset(seed=seed)
        if options and options.get("start_day") is not None:
            start = int(options["start_day"])
            if not self.first_start_day <= start <= self.last_start_day:
                raise ValueError(
                    f"start_day must be in [{self.first_start_day}, {self.last_start_day}], "
                    f"got {start}"
                )
        else:
            start = int(self.np_random.integers(self.first_start_day, self.last_start_day + 1))
        self._day = start
        self._end = start + self.episode_len
        self._weights = np.full(self.n_assets, 1.0 / self.n_assets)
        return self._observation(start), {"start_day": start}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Rebalances to ``softmax(action)`` and holds for up to ``rebal_freq`` days."""
        if self._day is None or self._day >= self._end:
            raise RuntimeError("the episode is over or not started: call reset() first")
        logits = np.asarray(action, dtype=np.float64).reshape(1, self.n_assets)
        if not np.isfinite(logits).all():
            raise ValueError(f"action must be finite logits, got {action!r}")
        day = self._day
        held = min(self.rebal_freq, self._end - day)
        # Padded to rebal_freq with zero returns, the shape the batched env uses, so both run
        # the very same arithmetic.
        window = np.zeros((1, self.rebal_freq, self.n_assets))
        window[0, :held] = self.returns[day : day + held]
        target = softmax_weights(logits)
        reward, turnover, gross_return, drifted = step_reward(
            target,
            self._weights[None, :],
            window,
            self.turnover_cost_bps / 1e4,
            self.vol_penalty,
        )
        self._weights = drifted[0]
        self._day = day + held
        truncated = self._day >= self._end
        info = {
            "weights": target[0],
            "turnover": float(turnover[0]),
            "gross_return": float(gross_return[0]),
        }
        return self._observation(self._day), float(reward[0]), False, truncated, info

    def _observation(self, day: int) -> np.ndarray:
        past = self._log_returns[day - self.lookback : day]
        return np.concatenate([past.ravel(), self._weights.astype(np.float32)])
