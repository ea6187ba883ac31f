"""The PPO env-step budget is a hard cap whatever ``n_steps`` and ``n_envs`` are.

SB3 alone stops at the first whole rollout at or past its budget, so ``n_steps`` decided the
compute: at a 256-step budget ``n_steps=255`` trained 510 steps and ``n_steps=256`` trained 256.
"""

from __future__ import annotations

import numpy as np
import pytest
from stable_baselines3 import PPO

from alphaloop.knobs import TrialConfig
from alphaloop.rl_engine.ppo import (
    DEFAULT_N_ENVS,
    DEFAULT_TOTAL_TIMESTEPS,
    PPO_CLASS,
    policy_weights,
    rollout_plan,
    train_ppo,
)

CHEAP = TrialConfig(lookback=5, episode_len=20, rebal_freq=5, batch_size=64, n_epochs=3)


@pytest.fixture(scope="module")
def returns() -> np.ndarray:
    rng = np.random.default_rng(5)
    return rng.normal([0.0001, 0.0004, 0.0008], [0.002, 0.01, 0.02], (400, 3))


@pytest.mark.parametrize(
    ("total", "n_steps", "n_envs", "plan"),
    [
        (256, 255, 1, [(256, 1)]),  # SB3 alone: 2 rollouts, 510 steps
        (256, 256, 1, [(256, 1)]),
        (DEFAULT_TOTAL_TIMESTEPS, 4095, DEFAULT_N_ENVS, [(4096, 1)]),  # SB3 alone: 32,760
        (DEFAULT_TOTAL_TIMESTEPS, 4096, DEFAULT_N_ENVS, [(4096, 1)]),
        (DEFAULT_TOTAL_TIMESTEPS, 2049, DEFAULT_N_ENVS, [(2048, 2)]),  # SB3 alone: 16,392
        (DEFAULT_TOTAL_TIMESTEPS, 2048, DEFAULT_N_ENVS, [(2048, 2)]),
        (256, 2048, 4, [(64, 1)]),  # n_steps above the budget: one rollout of the budget
        (1000, 64, 3, [(67, 3), (66, 2)]),  # 333 steps per env in 5 rollouts; 999 in all
        (2, 64, 1, [(2, 1)]),
    ],
)
def test_rollout_plan_by_hand(total: int, n_steps: int, n_envs: int, plan: list) -> None:
    assert rollout_plan(total, n_steps, n_envs) == plan


def test_rollout_plan_never_exceeds_the_budget_and_stays_near_n_steps() -> None:
    rng = np.random.default_rng(0)
    for _ in range(2000):
        total = int(rng.integers(64, 200_000))
        n_steps = int(rng.integers(64, 4097))
        n_envs = int(rng.integers(1, 17))
        plan = rollout_plan(total, n_steps, n_envs)
        trained = sum(length * count for length, count in plan) * n_envs
        assert trained == total // n_envs * n_envs <= total
        assert total - trained < n_envs
        lengths = [length for length, _ in plan]
        assert max(lengths) - min(lengths) <= 1 and len(plan) <= 2
        per_env = total // n_envs
        if per_env >= n_steps:
            assert 0.75 * n_steps - 1 <= min(lengths) and max(lengths) < 1.5 * n_steps + 1
        else:
            assert plan == [(per_env, 1)]


@pytest.mark.parametrize(("total", "n_envs"), [(1, 1), (3, 4), (7, 8)])
def test_rollout_plan_refuses_a_budget_below_two_steps(total: int, n_envs: int) -> None:
    with pytest.raises(ValueError, match="fewer than 2 env steps"):
        rollout_plan(total, 64, n_envs)
    with pytest.raises(ValueError, match="fewer than 2 env steps"):
        train_ppo(np.zeros((100, 3)), CHEAP, total_timesteps=total, n_envs=n_envs)


def test_budget_256_trains_256_steps_with_n_steps_255_and_256(returns: np.ndarray) -> None:
    runs = {
        n: train_ppo(returns[:300], CHEAP.model_copy(update={"n_steps": n}), 256, n_envs=1, seed=2)
        for n in (255, 256)
    }
    for result in runs.values():
        assert result.timesteps == 256
        assert result.rollouts == [(256, 1)]
        assert [step for step, _ in result.curve] == [256]
    # Knobs that round to the same plan train the very same policy.
    assert runs[255].curve == runs[256].curve
    np.testing.assert_array_equal(
        policy_weights(runs[255].model, returns, 300, 400, 5, 5),
        policy_weights(runs[256].model, returns, 300, 400, 5, 5),
    )


@pytest.mark.slow
def test_default_budget_trains_the_same_steps_with_n_steps_4095_and_4096(
    returns: np.ndarray,
) -> None:
    # Few epochs on large minibatches keep the updates cheap; the env steps are the default's.
    cheap = CHEAP.model_copy(update={"batch_size": 512, "n_epochs": 1})
    steps = {}
    for n in (4095, 4096):
        result = train_ppo(returns[:300], cheap.model_copy(update={"n_steps": n}), seed=1)
        steps[n] = (result.timesteps, result.rollouts, result.curve)
    assert steps[4095] == steps[4096]
    assert steps[4096][0] == DEFAULT_TOTAL_TIMESTEPS
    assert steps[4096][1] == [(DEFAULT_TOTAL_TIMESTEPS // DEFAULT_N_ENVS, 1)]


def test_uneven_rollouts_are_all_trained_on(
    returns: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    updates: list[int] = []
    original_train = PPO_CLASS.train

    def counting_train(self: PPO) -> None:
        updates.append(self.rollout_buffer.buffer_size)
        original_train(self)

    monkeypatch.setattr(PPO_CLASS, "train", counting_train)
    config = CHEAP.model_copy(update={"n_steps": 64})
    result = train_ppo(returns[:300], config, total_timesteps=1000, n_envs=3, seed=0)
    assert result.timesteps == 999  # the largest multiple of 3 envs within the budget
    assert result.rollouts == [(67, 3), (66, 2)]
    assert updates == [67, 67, 67, 66, 66]  # one PPO update per rollout, the short ones too
    assert [step for step, _ in result.curve] == [201, 402, 603, 801, 999]
