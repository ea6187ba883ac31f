"""PPO with the critic-free estimators and with drawdown truncation: the rollout buffer fills
the hand-checked advantages, the critic stays off, and training runs and repeats."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from gymnasium import spaces

from alphaloop.knobs import TrialConfig
from alphaloop.rl_engine import BatchedPortfolioVecEnv, make_ppo, policy_weights, train_ppo
from alphaloop.rl_engine.advantages import (
    episode_ends,
    grpo_advantages,
    reinforce_pp_advantages,
)
from alphaloop.rl_engine.numpy_buffer import NumpyRolloutBuffer
from alphaloop.rl_engine.rollouts import CriticFreeRolloutBuffer

CONFIG = TrialConfig(
    lookback=5, episode_len=20, rebal_freq=5, n_steps=64, batch_size=64, n_epochs=3
)
N_ENVS = 2
BUDGET = 2 * CONFIG.n_steps * N_ENVS

# The batch of test_advantages: 4 steps of 2 copies.
REWARDS = np.array([[1.0, 5.0], [2.0, -1.0], [3.0, 0.0], [4.0, 2.0]], dtype=np.float32)
EPISODE_STARTS = np.array([[1, 1], [0, 1], [1, 0], [0, 0]], dtype=np.float32)
LAST_DONES = np.array([False, True])


@pytest.fixture(scope="module")
def returns() -> np.ndarray:
    rng = np.random.default_rng(5)
    return rng.normal([0.0001, 0.0004, 0.0008], [0.002, 0.01, 0.02], (400, 3))


def _filled_buffer(advantage: str) -> CriticFreeRolloutBuffer:
    box = spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)
    buffer = CriticFreeRolloutBuffer(
        4, box, box, device="cpu", gamma=0.5, n_envs=2, advantage=advantage
    )
    for t in range(4):
        buffer.add(
            np.zeros((2, 2), dtype=np.float32),
            np.zeros((2, 2), dtype=np.float32),
            REWARDS[t],
            EPISODE_STARTS[t],
            torch.zeros(2),
            torch.zeros(2),
        )
    buffer.compute_returns_and_advantage(torch.zeros(2), LAST_DONES)
    return buffer


def test_buffer_fills_grpo_advantages() -> None:
    buffer = _filled_buffer("grpo")
    dones = episode_ends(EPISODE_STARTS, LAST_DONES)
    s = math.sqrt(5.0)  # the hand-worked batch of test_advantages
    # The buffer holds each copy's steps in a row (SB3's minibatch order).
    np.testing.assert_allclose(buffer.advantages[0], [-1 / s, -1 / s, 3 / s, 3 / s], atol=1e-6)
    np.testing.assert_allclose(buffer.advantages.T, grpo_advantages(REWARDS, dones), atol=1e-6)
    # Undiscounted returns-to-go: A = 3, 2; B = 7, 4 (copy 0).
    np.testing.assert_allclose(buffer.returns[0], [3.0, 2.0, 7.0, 4.0], atol=1e-6)


def test_buffer_fills_reinforce_pp_advantages_with_its_gamma() -> None:
    buffer = _filled_buffer("reinforce_pp")
    dones = episode_ends(EPISODE_STARTS, LAST_DONES)
    advantages, to_go = reinforce_pp_advantages(REWARDS, dones, 0.5)
    np.testing.assert_allclose(buffer.advantages.T, advantages, atol=1e-6)
    np.testing.assert_allclose(buffer.returns.T, to_go, atol=1e-6)


def test_buffer_refuses_gae() -> None:
    box = spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)
    with pytest.raises(ValueError, match="grpo or reinforce_pp"):
        CriticFreeRolloutBuffer(4, box, box, advantage="gae")


def test_gae_is_sb3s_as_it_comes(returns: np.ndarray) -> None:
    model = make_ppo(CONFIG, BatchedPortfolioVecEnv(returns, n_envs=2, lookback=5), seed=0)
    assert type(model.rollout_buffer) is NumpyRolloutBuffer
    assert model.rollout_buffer.advantage == "gae"
    assert (model.vf_coef, model.normalize_advantage) == (0.5, True)
    with pytest.raises(ValueError, match="unknown advantage estimator"):
        make_ppo(CONFIG, BatchedPortfolioVecEnv(returns, n_envs=2, lookback=5), 0, "vtrace")


@pytest.mark.parametrize("advantage", ["grpo", "reinforce_pp"])
def test_critic_free_training_keeps_the_critic_off(returns: np.ndarray, advantage: str) -> None:
    result = train_ppo(
        returns[:300], CONFIG, total_timesteps=BUDGET, n_envs=N_ENVS, seed=3, advantage=advantage
    )
    model = result.model
    assert result.timesteps == BUDGET
    assert isinstance(model.rollout_buffer, CriticFreeRolloutBuffer)
    assert (model.vf_coef, model.normalize_advantage) == (0.0, False)
    # The value head never moved from zero, so no value was bootstrapped into a reward.
    for parameter in model.policy.value_net.parameters():
        assert not parameter.requires_grad
        assert torch.count_nonzero(parameter) == 0
    # Nothing was bootstrapped into the rollout's rewards from a value (train_ppo lets its
    # buffer go, so a model that learns here keeps its last rollout to look at).
    direct = make_ppo(
        CONFIG, BatchedPortfolioVecEnv(returns[:300], n_envs=N_ENVS, lookback=5), 3, advantage
    )
    direct.learn(total_timesteps=BUDGET)
    assert np.count_nonzero(direct.rollout_buffer.rewards) > 0
    assert np.count_nonzero(direct.rollout_buffer.values) == 0
    assert all(math.isfinite(r) for _, r in result.curve)
    again = train_ppo(
        returns[:300], CONFIG, total_timesteps=BUDGET, n_envs=N_ENVS, seed=3, advantage=advantage
    )
    assert again.curve == result.curve
    weights = [
        policy_weights(r.model, returns, 300, 400, CONFIG.lookback, CONFIG.rebal_freq)
        for r in (result, again)
    ]
    np.testing.assert_array_equal(*weights)


def test_a_trained_model_keeps_no_rollout(returns: np.ndarray) -> None:
    """The last rollout's samples (275 MB of observations at 400 assets) are let go when
    training ends, not held through the trial's evaluation."""
    model = train_ppo(returns[:300], CONFIG, total_timesteps=BUDGET, n_envs=N_ENVS, seed=3).model
    buffer = model.rollout_buffer
    assert (buffer.pos, buffer.full, buffer.buffer_size) == (0, False, CONFIG.n_steps)
    assert np.count_nonzero(buffer.observations) == np.count_nonzero(buffer.rewards) == 0


def test_estimators_train_different_policies(returns: np.ndarray) -> None:
    out = {
        advantage: policy_weights(
            train_ppo(returns[:300], CONFIG, BUDGET, N_ENVS, seed=3, advantage=advantage).model,
            returns,
            300,
            400,
            CONFIG.lookback,
            CONFIG.rebal_freq,
        )
        for advantage in ("gae", "grpo", "reinforce_pp")
    }
    assert not np.array_equal(out["gae"], out["grpo"])
    assert not np.array_equal(out["grpo"], out["reinforce_pp"])


def test_truncating_training_ends_episodes_early(returns: np.ndarray) -> None:
    ended: list[int] = []
    # A 0.5% limit on assets of up to 2% daily volatility: most episodes breach it.
    result = train_ppo(
        returns[:300],
        CONFIG,
        total_timesteps=BUDGET,
        n_envs=N_ENVS,
        seed=3,
        truncate_drawdown=0.005,
        stop_properly=0.5,
        on_update=lambda step, reward: ended.append(step),
    )
    assert result.timesteps == BUDGET
    assert ended == [128, 256]
    assert all(math.isfinite(r) for _, r in result.curve)
    env = result.model.get_env()
    assert env.get_attr("truncate_drawdown") == [0.005, 0.005]
    assert env.get_attr("stop_properly") == [0.5, 0.5]
