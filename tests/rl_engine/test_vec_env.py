"""BatchedPortfolioVecEnv equals independent PortfolioEnv copies, step for step."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

from alphaloop.rl_engine import BatchedPortfolioVecEnv, PortfolioEnv

# episode_len 11 with rebal_freq 4 gives steps of 4, 4 and 3 days: the short last step and the
# zero-padding of its hold window are exercised in every episode.
PARAMS: dict[str, Any] = {
    "lookback": 6,
    "episode_len": 11,
    "rebal_freq": 4,
    "turnover_cost_bps": 15.0,
    "vol_penalty": 1.5,
}
N_ENVS = 6
N_ASSETS = 5


@pytest.fixture
def returns() -> np.ndarray:
    rng = np.random.default_rng(11)
    return rng.normal(0.0004, 0.015, (150, N_ASSETS)).clip(-0.5, 0.5)


def _actions(n_steps: int) -> np.ndarray:
    rng = np.random.default_rng(12)
    # Wide enough to hit the +-10 logit clip now and then.
    return rng.normal(0.0, 6.0, (n_steps, N_ENVS, N_ASSETS)).astype(np.float32)


def _assert_infos_equal(batched: list[dict], reference: list[dict]) -> None:
    for mine, theirs in zip(batched, reference, strict=True):
        assert set(mine) == set(theirs)
        assert mine["turnover"] == theirs["turnover"]
        assert mine["gross_return"] == theirs["gross_return"]
        assert mine["TimeLimit.truncated"] == theirs["TimeLimit.truncated"]
        np.testing.assert_array_equal(mine["weights"], theirs["weights"])
        if "terminal_observation" in theirs:
            np.testing.assert_array_equal(
                mine["terminal_observation"], theirs["terminal_observation"]
            )


def test_matches_dummy_vec_env_bit_for_bit(returns: np.ndarray) -> None:
    batched = BatchedPortfolioVecEnv(returns, n_envs=N_ENVS, **PARAMS)
    reference = DummyVecEnv([lambda: PortfolioEnv(returns, **PARAMS) for _ in range(N_ENVS)])
    assert batched.observation_space == reference.observation_space
    assert batched.action_space == reference.action_space
    batched.seed(42)
    reference.seed(42)
    obs = batched.reset()
    np.testing.assert_array_equal(obs, reference.reset())
    assert batched.reset_infos == reference.reset_infos
    assert obs.dtype == np.float32

    episodes_done = 0
    for actions in _actions(3 * 5):  # five whole episodes of three steps each
        mine = batched.step(actions)
        theirs = reference.step(actions)
        np.testing.assert_array_equal(mine[0], theirs[0])
        np.testing.assert_array_equal(mine[1], theirs[1])
        np.testing.assert_array_equal(mine[2], theirs[2])
        assert mine[1].dtype == theirs[1].dtype == np.float32
        _assert_infos_equal(mine[3], theirs[3])
        episodes_done += int(mine[2].sum())
        assert batched.reset_infos == reference.reset_infos
    assert episodes_done == 5 * N_ENVS
    # Auto-resets drew fresh start days from each copy's own generator.
    assert len({info["start_day"] for info in batched.reset_infos}) > 1


def test_matches_single_envs_in_float64(returns: np.ndarray) -> None:
    batched = BatchedPortfolioVecEnv(returns, n_envs=N_ENVS, **PARAMS)
    singles = [PortfolioEnv(returns, **PARAMS) for _ in range(N_ENVS)]
    batched.seed(7)
    obs = batched.reset()
    for i, env in enumerate(singles):
        single_obs, info = env.reset(seed=7 + i)
        np.testing.assert_array_equal(obs[i], single_obs)
        assert info["start_day"] == batched.start_days[i]
    for actions in _actions(9):
        obs, rewards, dones, infos = batched.step(actions)
        for i, env in enumerate(singles):
            single_obs, reward, terminated, truncated, info = env.step(actions[i])
            assert rewards[i] == np.float32(reward)
            assert dones[i] == (terminated or truncated)
            assert infos[i]["turnover"] == info["turnover"]
            assert infos[i]["gross_return"] == info["gross_return"]
            if truncated:
                np.testing.assert_array_equal(infos[i]["terminal_observation"], single_obs)
                single_obs, _ = env.reset()
            np.testing.assert_array_equal(obs[i], single_obs)


def test_set_options_forces_start_days(returns: np.ndarray) -> None:
    batched = BatchedPortfolioVecEnv(returns, n_envs=3, **PARAMS)
    batched.set_options([{"start_day": 6}, {"start_day": 100}, {"start_day": 139}])
    obs = batched.reset()
    np.testing.assert_array_equal(batched.start_days, [6, 100, 139])
    single = PortfolioEnv(returns, **PARAMS)
    np.testing.assert_array_equal(obs[1], single.reset(options={"start_day": 100})[0])
    batched.set_options({"start_day": 140})
    with pytest.raises(ValueError, match="start_day"):
        batched.reset()


def test_vec_env_api(returns: np.ndarray) -> None:
    batched = BatchedPortfolioVecEnv(returns, n_envs=3, **PARAMS)
    assert batched.get_attr("lookback") == [6, 6, 6]
    assert batched.get_attr("vol_penalty", indices=[1]) == [1.5]
    assert batched.has_attr("episode_len") and not batched.has_attr("no_such_thing")
    batched.set_attr("vol_penalty", 0.0)
    assert batched.vol_penalty == 0.0
    with pytest.raises(ValueError, match="all 3 copies"):
        batched.set_attr("vol_penalty", 1.0, indices=[0])
    with pytest.raises(ValueError, match="new env"):
        batched.set_attr("lookback", 3)
    assert batched.env_is_wrapped(Monitor) == [False, False, False]
    assert batched.env_method("get_attr", "rebal_freq", indices=0) == [[4, 4, 4]]
    assert batched.seed(3) == [3, 4, 5]
    batched.close()


def test_step_before_reset_and_bad_actions(returns: np.ndarray) -> None:
    batched = BatchedPortfolioVecEnv(returns, n_envs=2, **PARAMS)
    with pytest.raises(RuntimeError, match="reset"):
        batched.step(np.zeros((2, N_ASSETS)))
    batched.reset()
    with pytest.raises(ValueError, match="finite"):
        batched.step(np.full((2, N_ASSETS), np.nan))
    with pytest.raises(ValueError, match="n_envs"):
        BatchedPortfolioVecEnv(returns, n_envs=0)


def test_works_under_vec_monitor(returns: np.ndarray) -> None:
    env = VecMonitor(BatchedPortfolioVecEnv(returns, n_envs=2, **PARAMS))
    env.seed(0)
    env.reset()
    for _ in range(3):
        _, _, dones, infos = env.step(np.zeros((2, N_ASSETS), dtype=np.float32))
    assert dones.all()
    assert infos[0]["episode"]["l"] == 3
