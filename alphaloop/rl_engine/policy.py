"""A trained policy outside training: its walk-forward weights, and saving and loading it.

The evaluator turns a policy into target weights on any window with :func:`policy_weights`,
following the env's own observation and drift rules, so what was trained is what is scored.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.distributions import DiagGaussianDistribution
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.preprocessing import preprocess_obs

from alphaloop.rl_engine.env_core import (
    hold,
    observable_log_returns,
    softmax_weights,
    validate_returns,
)

__all__ = ["load_policy", "policy_weights", "save_policy"]


def _actor_mean(policy: ActorCriticPolicy, obs: torch.Tensor) -> torch.Tensor:
    # The deterministic action of SB3's Gaussian policy is the mean of its distribution.
    # Computed directly it costs ~45 us a rebalance against ~155 us for model.predict(),
    # which spends the difference on numpy/space bookkeeping and building the distribution.
    if not isinstance(policy.action_dist, DiagGaussianDistribution):
        return policy.get_distribution(obs).mode()
    features = policy.pi_features_extractor(
        preprocess_obs(obs, policy.observation_space, policy.normalize_images)
    )
    return policy.action_net(policy.mlp_extractor.forward_actor(features))


def policy_weights(
    model: PPO | ActorCriticPolicy,
    returns: np.ndarray,
    start: int,
    end: int,
    lookback: int,
    rebal_freq: int,
) -> np.ndarray:
    """Deterministic walk-forward target weights for days ``start .. end-1``.

    Starting from equal weights, at each rebalance day ``t = start, start + rebal_freq, ...``
    the policy sees the log returns of days ``t-lookback .. t-1`` and the current weights
    (drifted with returns since the last rebalance, as in the env) and its mean action is
    turned into target weights. Each day's row is the target set at its latest rebalance;
    the evaluator does its own drift and cost accounting. Day ``t``'s row never depends on
    returns of day ``t`` or later.

    Args:
        model: a trained ``PPO`` or its policy.
        returns: (T, N) simple daily returns covering ``start - lookback .. end - 1``.
        start: first day to produce weights for (``>= lookback``).
        end: one past the last day (``<= T``).
        lookback: the lookback the policy was trained with.
        rebal_freq: days between rebalances.

    Returns:
        (end - start, N) array of long-only weights, each row summing to 1.

    Raises:
        ValueError: bad window, or a policy trained on a different observation size.
    """
    policy = model.policy if isinstance(model, PPO) else model
    data = validate_returns(returns, min_rows=1)
    window = _Window(start, end, lookback, rebal_freq)
    _check_window(policy, data.shape, window)
    return _walk_forward(policy, data, window)


class _Window(NamedTuple):
    """The days to produce weights for and how the policy was trained to see them."""

    start: int
    end: int
    lookback: int
    rebal_freq: int


def _check_window(policy: ActorCriticPolicy, shape: tuple[int, int], window: _Window) -> None:
    """Raises ValueError unless ``window`` fits the data and the policy's observation size."""
    n_days, n_assets = shape
    start, end, lookback, rebal_freq = window
    if not lookback <= start < end <= n_days:
        raise ValueError(
            f"need lookback <= start < end <= T, got lookback={lookback}, start={start}, "
            f"end={end}, T={n_days}"
        )
    if rebal_freq < 1:
        raise ValueError(f"rebal_freq must be >= 1, got {rebal_freq}")
    expected = policy.observation_space.shape
    if expected != (lookback * n_assets + n_assets,):
        raise ValueError(
            f"policy observes {expected} values but lookback={lookback} with {n_assets} assets "
            f"gives {lookback * n_assets + n_assets}; use the lookback and assets it was trained on"
        )


def _walk_forward(policy: ActorCriticPolicy, data: np.ndarray, window: _Window) -> np.ndarray:
    """The targets of each rebalance held until the next, weights drifting as in the env."""
    start, end, lookback, rebal_freq = window
    n_assets = data.shape[1]
    first = start - lookback
    log_returns = observable_log_returns(data[first:end])
    out = np.empty((end - start, n_assets))
    weights = np.full(n_assets, 1.0 / n_assets)
    held_returns = np.zeros((1, rebal_freq, n_assets))
    policy.set_training_mode(False)
    with torch.no_grad():
        for t in range(start, end, rebal_freq):
            obs = np.concatenate(
                [log_returns[t - lookback - first : t - first].ravel(), weights.astype(np.float32)]
            )
            logits = _actor_mean(policy, torch.from_numpy(obs)[None, :]).numpy()
            target = softmax_weights(logits)
            held = min(rebal_freq, end - t)
            out[t - start : t - start + held] = target[0]
            held_returns[:] = 0.0
            held_returns[0, :held] = data[t : t + held]
            weights = hold(target, held_returns)[2][0]
    return out


def save_policy(model: PPO, path: str | Path) -> Path:
    """Saves ``model`` as an SB3 zip at ``path`` and returns the file written (``.zip`` added
    when ``path`` has no suffix, as SB3 does)."""
    target = Path(path)
    if not target.suffix:
        target = target.with_suffix(".zip")
    target.parent.mkdir(parents=True, exist_ok=True)
    model.save(target)
    return target


def load_policy(path: str | Path) -> PPO:
    """Loads a PPO saved by :func:`save_policy` from a local file, on the CPU.

    SB3 zips carry pickled objects: load only files this system wrote.

    Raises:
        FileNotFoundError: no such local file.
    """
    target = Path(path)
    if not target.is_file() and not target.suffix and target.with_suffix(".zip").is_file():
        target = target.with_suffix(".zip")
    if not target.is_file():
        raise FileNotFoundError(f"no saved policy at {target}")
    return PPO.load(target, device="cpu")
