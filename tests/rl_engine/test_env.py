"""PortfolioEnv: API checkers, a hand-computed episode, episode structure and input validation."""

from __future__ import annotations

import math
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import alphaloop.rl_engine
from alphaloop.rl_engine import ENV_ID, PortfolioEnv

# The [-10, 10] logit box is a deliberate choice (see env.py); both checkers merely recommend
# [-1, 1]. Any other warning is a finding.
_ACTION_BOX_ADVICE = "symmetric and normalized"


def _only_action_box_advice(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if _ACTION_BOX_ADVICE not in str(w.message)]


def test_gymnasium_make_after_import() -> None:
    assert alphaloop.rl_engine.ENV_ID in gymnasium.registry
    env = gymnasium.make(ENV_ID)
    obs, _ = env.reset(seed=0)
    assert isinstance(env.unwrapped, PortfolioEnv)
    assert env.observation_space.contains(obs)
    assert env.unwrapped.returns.shape == (500, 4)
    obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
    assert math.isfinite(reward) and not terminated and not truncated
    env.close()


def test_gymnasium_make_passes_kwargs() -> None:
    returns = np.random.default_rng(1).normal(0.0, 0.01, (120, 3))
    env = gymnasium.make(ENV_ID, returns=returns, lookback=7, episode_len=30, rebal_freq=3)
    obs, _ = env.reset(seed=1)
    assert obs.shape == (7 * 3 + 3,)


def test_gymnasium_check_env() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gym_check_env(PortfolioEnv(), skip_render_check=True)
    assert _only_action_box_advice(caught) == []


def test_sb3_check_env() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sb3_check_env(PortfolioEnv(), warn=True)
    assert _only_action_box_advice(caught) == []


def test_hand_computed_two_asset_episode() -> None:
    returns = np.array(
        [
            [0.01, -0.02],
            [0.03, 0.01],
            [0.02, -0.01],
            [-0.04, 0.05],
            [0.01, 0.02],
        ]
    )
    # 5 days, lookback 2, episode 3 days: the only possible start is day 2. Steps hold days
    # 2-3, then day 4 alone (the short last step).
    env = PortfolioEnv(
        returns, lookback=2, episode_len=3, rebal_freq=2, turnover_cost_bps=25.0, vol_penalty=2.0
    )
    obs, info = env.reset(seed=0)
    assert info == {"start_day": 2}
    expected_obs = [
        math.log(1.01),
        math.log(0.98),
        math.log(1.03),
        math.log(1.01),
        0.5,
        0.5,
    ]
    np.testing.assert_allclose(obs, np.array(expected_obs, dtype=np.float32), rtol=0, atol=0)

    # Step 1: logits (ln 3, 0) -> weights (3/4, 1/4); from (1/2, 1/2) that is turnover 1/2.
    obs, reward, terminated, truncated, info = env.step(np.array([math.log(3.0), 0.0]))
    # Day 2: 0.75 * 0.02 + 0.25 * -0.01 = 0.0125. Weights drift to (0.765, 0.2475) / 1.0125.
    # Day 3: (0.765 * -0.04 + 0.2475 * 0.05) / 1.0125 = -0.018225 / 1.0125 = -0.018.
    gross = 1.0125 * 0.982
    expected_reward = math.log(gross) - 25.0 / 1e4 * 0.5 - 2.0 * (0.018**2)
    assert abs(reward - expected_reward) < 1e-12
    assert abs(info["turnover"] - 0.5) < 1e-12
    assert abs(info["gross_return"] - (gross - 1.0)) < 1e-12
    np.testing.assert_allclose(info["weights"], [0.75, 0.25], rtol=0, atol=1e-12)
    assert not terminated and not truncated
    # After day 3 the weights are (0.765 * 0.96, 0.2475 * 1.05) / 0.994275.
    drifted = np.array([0.765 * 0.96, 0.2475 * 1.05]) / gross
    np.testing.assert_allclose(
        obs,
        np.array(
            [math.log(1.02), math.log(0.99), math.log(0.96), math.log(1.05), *drifted],
            dtype=np.float32,
        ),
        rtol=0,
        atol=0,
    )

    # Step 2: equal logits -> (1/2, 1/2); held one day (day 4): 0.5 * 0.01 + 0.5 * 0.02.
    obs, reward, terminated, truncated, info = env.step(np.array([0.0, 0.0]))
    turnover = abs(0.5 - drifted[0]) + abs(0.5 - drifted[1])
    expected_reward = math.log(1.015) - 25.0 / 1e4 * turnover
    assert abs(reward - expected_reward) < 1e-12
    assert abs(info["turnover"] - turnover) < 1e-12
    assert abs(info["gross_return"] - 0.015) < 1e-12
    assert truncated and not terminated
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.array([0.0, 0.0]))


def test_episode_structure_and_seeding() -> None:
    returns = np.random.default_rng(2).normal(0.0003, 0.01, (300, 5))
    env = PortfolioEnv(returns, lookback=10, episode_len=23, rebal_freq=5)
    assert env.steps_per_episode == 5
    starts = set()
    for episode in range(20):
        obs, info = env.reset(seed=episode)
        start = info["start_day"]
        assert 10 <= start <= 300 - 23
        starts.add(start)
        np.testing.assert_array_equal(obs[-5:], np.full(5, 0.2, dtype=np.float32))
        for step in range(5):
            obs, _, terminated, truncated, info = env.step(env.action_space.sample())
            assert env.observation_space.contains(obs)
            assert not terminated
            assert truncated == (step == 4)
            assert abs(info["weights"].sum() - 1.0) < 1e-12
            assert abs(obs[-5:].sum() - 1.0) < 1e-6
        assert env.day == start + 23
    assert len(starts) > 1
    first = env.reset(seed=7)[1]["start_day"]
    assert env.reset(seed=7)[1]["start_day"] == first


def test_start_day_option() -> None:
    env = PortfolioEnv(lookback=20, episode_len=60)
    _, info = env.reset(seed=0, options={"start_day": 440})
    assert info["start_day"] == 440 and env.day == 440
    with pytest.raises(ValueError, match="start_day"):
        env.reset(options={"start_day": 441})
    with pytest.raises(ValueError, match="start_day"):
        env.reset(options={"start_day": 19})


def test_extreme_logits_stay_finite() -> None:
    env = PortfolioEnv()
    env.reset(seed=0)
    _, reward, _, _, info = env.step(np.array([1e30, -1e30, 0.0, 3.0]))
    assert math.isfinite(reward)
    assert np.all(info["weights"] > 0) and abs(info["weights"].sum() - 1) < 1e-12
    with pytest.raises(ValueError, match="finite"):
        env.step(np.array([np.nan, 0.0, 0.0, 0.0]))


@pytest.mark.parametrize(
    ("returns", "kwargs", "message"),
    [
        (np.zeros((79, 3)), {}, "at least 80"),
        (np.zeros((200, 1)), {}, "at least 2 asset"),
        (np.zeros(200), {}, "2-D"),
        (np.where(np.eye(200, 3) == 1, np.nan, 0.0), {}, "finite"),
        (np.where(np.eye(200, 3) == 1, -1.0, 0.0), {}, "> -1"),
        (np.zeros((200, 3)), {"lookback": 0}, "lookback"),
        (np.zeros((200, 3)), {"rebal_freq": 2.5}, "rebal_freq"),
        (np.zeros((200, 3)), {"vol_penalty": -1.0}, "vol_penalty"),
        (np.zeros((200, 3)), {"turnover_cost_bps": float("nan")}, "turnover_cost_bps"),
    ],
)
def test_constructor_validation(returns: np.ndarray, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PortfolioEnv(returns, **kwargs)


def test_returns_are_copied_and_read_only() -> None:
    returns = np.random.default_rng(3).normal(0.0, 0.01, (100, 2))
    env = PortfolioEnv(returns, lookback=5, episode_len=20)
    returns[:] = 0.5
    assert not np.any(env.returns == 0.5)
    assert not env.returns.flags.writeable
