"""Drawdown truncation and the stop-properly penalty: a hand-computed episode, the checkers, and
the batched env equal to single envs with episodes ending early."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env
from stable_baselines3.common.vec_env import DummyVecEnv

from alphaloop.rl_engine import BatchedPortfolioVecEnv, PortfolioEnv

_ACTION_BOX_ADVICE = "symmetric and normalized"

# Both assets move together, so the weights never matter and a zero action (equal weights, no
# turnover) gives the portfolio exactly these returns. Days 0-1 are the lookback.
# Day:          0    1    2     3    4      5    6     7
_COMMON = [0.0, 0.0, 0.10, 0.0, -0.25, 0.20, 0.05, 0.0]
HAND: dict[str, Any] = {
    "lookback": 2,
    "episode_len": 6,
    "rebal_freq": 2,
    "turnover_cost_bps": 0.0,
    "vol_penalty": 0.0,
}


def _hand_env(**kwargs: Any) -> PortfolioEnv:
    returns = np.repeat(np.array(_COMMON)[:, None], 2, axis=1)
    env = PortfolioEnv(returns, **HAND, **kwargs)
    env.reset(options={"start_day": 2})
    return env


def test_breach_inside_a_step_truncates_it_by_hand() -> None:
    # Step 1 holds days 2-3: value 1.1, 1.1 (the peak). Step 2 holds days 4-5: 1.1 * 0.75 =
    # 0.825 is 25% below the peak, then 0.825 * 1.2 = 0.99 is only 10% below: the step ends
    # above a 20% limit, but its first day breached it.
    env = _hand_env(truncate_drawdown=0.2, stop_properly=0.5)
    zero = np.zeros(2, dtype=np.float32)
    _, r1, term, trunc, info = env.step(zero)
    assert (term, trunc, info["drawdown_breach"]) == (False, False, False)
    assert r1 == pytest.approx(math.log(1.1), abs=1e-12)
    _, r2, term, trunc, info = env.step(zero)
    assert (term, trunc, info["drawdown_breach"]) == (False, True, True)
    # R = log 1.1 + log 0.9 = log 0.99 < 0; the step loses (1 - 0.5) * |R|.
    total = math.log(1.1) + math.log(0.9)
    assert r2 == pytest.approx(math.log(0.9) - 0.5 * abs(total), abs=1e-12)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(zero)


def test_a_looser_limit_lets_the_episode_run_to_its_end() -> None:
    env = _hand_env(truncate_drawdown=0.3, stop_properly=0.0)
    rewards, ends = [], []
    for _ in range(3):
        _, reward, _, trunc, info = env.step(np.zeros(2, dtype=np.float32))
        rewards.append(reward)
        ends.append((trunc, info["drawdown_breach"]))
    assert ends == [(False, False), (False, False), (True, False)]
    # No breach, so no penalty even at stop_properly 0: the time limit is not a breach.
    expected = [math.log(1.1), math.log(0.75 * 1.2), math.log(1.05)]
    np.testing.assert_allclose(rewards, expected, rtol=0, atol=1e-12)


def test_stop_properly_scales_a_truncated_gain() -> None:
    # Day 2 gains 30% (the peak), day 4 loses 25%: 1.3 * 0.75 = 0.975 is 25% below the peak,
    # a breach of a 20% limit, though the episode is still up: R = log 1.3 + log(0.75 * 1.2)
    # = log 1.17 > 0, and at stop_properly 0.25 the episode keeps 0.25 R.
    common = [0.0, 0.0, 0.30, 0.0, -0.25, 0.20, 0.05, 0.0]
    returns = np.repeat(np.array(common)[:, None], 2, axis=1)
    env = PortfolioEnv(returns, **HAND, truncate_drawdown=0.2, stop_properly=0.25)
    env.reset(options={"start_day": 2})
    zero = np.zeros(2, dtype=np.float32)
    r1 = env.step(zero)[1]
    _, r2, _, trunc, info = env.step(zero)
    assert trunc and info["drawdown_breach"]
    assert r2 == pytest.approx(math.log(0.9) - 0.75 * math.log(1.17), abs=1e-12)
    assert r1 + r2 == pytest.approx(0.25 * math.log(1.17), abs=1e-12)


def test_turnover_cost_counts_toward_the_drawdown() -> None:
    # All into asset 0 (turnover ~1 from equal weights) at 1,000 bps: the value drops to
    # exp(-0.1 * turnover) at the rebalance, before any day is held; both assets are flat.
    returns = np.zeros((8, 2))
    env = PortfolioEnv(returns, **{**HAND, "turnover_cost_bps": 1000.0}, truncate_drawdown=0.09)
    env.reset(options={"start_day": 2})
    _, reward, _, trunc, info = env.step(np.array([10.0, -10.0], dtype=np.float32))
    assert 1 - math.exp(-0.1 * info["turnover"]) > 0.09
    assert trunc and info["drawdown_breach"]
    assert reward == pytest.approx(-0.1 * info["turnover"], abs=1e-12)  # stop_properly 1


def test_penalty_maps_a_gain_to_c_times_it_and_a_loss_to_2_minus_c_times_it() -> None:
    from alphaloop.rl_engine.env_core import stop_penalty

    totals = np.array([0.3, -0.3, 0.0])
    np.testing.assert_allclose(totals - stop_penalty(totals, 0.25), [0.075, -0.525, 0.0])
    np.testing.assert_array_equal(stop_penalty(totals, 1.0), [0.0, 0.0, 0.0])


@pytest.mark.parametrize(
    "kwargs", [{"truncate_drawdown": 0.02}, {"truncate_drawdown": 0.02, "stop_properly": 0.0}]
)
def test_checkers_pass_with_truncation(kwargs: dict) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gym_check_env(PortfolioEnv(**kwargs), skip_render_check=True)
        sb3_check_env(PortfolioEnv(**kwargs), warn=True)
    assert [str(w.message) for w in caught if _ACTION_BOX_ADVICE not in str(w.message)] == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"truncate_drawdown": 0.0}, "truncate_drawdown"),
        ({"truncate_drawdown": 1.0}, "truncate_drawdown"),
        ({"truncate_drawdown": float("nan")}, "truncate_drawdown"),
        ({"stop_properly": -0.1}, "stop_properly"),
        ({"stop_properly": 1.5}, "stop_properly"),
        ({"stop_properly": float("nan")}, "stop_properly"),
    ],
)
def test_out_of_range_settings_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PortfolioEnv(**kwargs)
    with pytest.raises(ValueError, match=message):
        BatchedPortfolioVecEnv(**kwargs)


PARAMS: dict[str, Any] = {
    "lookback": 6,
    "episode_len": 11,
    "rebal_freq": 4,
    "turnover_cost_bps": 15.0,
    "vol_penalty": 1.5,
    "truncate_drawdown": 0.03,
    "stop_properly": 0.4,
}
N_ENVS = 6
N_ASSETS = 5


def test_batched_equals_single_envs_when_episodes_end_early() -> None:
    rng = np.random.default_rng(11)
    returns = rng.normal(0.0004, 0.015, (150, N_ASSETS)).clip(-0.5, 0.5)
    actions = np.random.default_rng(12).normal(0.0, 6.0, (30, N_ENVS, N_ASSETS)).astype(np.float32)
    batched = BatchedPortfolioVecEnv(returns, n_envs=N_ENVS, **PARAMS)
    reference = DummyVecEnv([lambda: PortfolioEnv(returns, **PARAMS) for _ in range(N_ENVS)])
    batched.seed(3)
    reference.seed(3)
    np.testing.assert_array_equal(batched.reset(), reference.reset())
    breaches = time_limits = 0
    for step_actions in actions:
        obs, rewards, dones, infos = batched.step(step_actions)
        ref_obs, ref_rewards, ref_dones, ref_infos = reference.step(step_actions)
        np.testing.assert_array_equal(obs, ref_obs)
        np.testing.assert_array_equal(rewards, ref_rewards)
        np.testing.assert_array_equal(dones, ref_dones)
        for mine, theirs in zip(infos, ref_infos, strict=True):
            assert set(mine) == set(theirs)
            assert mine["drawdown_breach"] == theirs["drawdown_breach"]
            assert mine["TimeLimit.truncated"] == theirs["TimeLimit.truncated"]
            if "terminal_observation" in theirs:
                np.testing.assert_array_equal(
                    mine["terminal_observation"], theirs["terminal_observation"]
                )
        assert batched.reset_infos == reference.reset_infos
        hits = np.array([i["drawdown_breach"] for i in infos])
        assert np.all(dones[hits])
        assert all(i["TimeLimit.truncated"] for i, d in zip(infos, dones, strict=True) if d)
        breaches += int(hits.sum())
        time_limits += int((dones & ~hits).sum())
    # Both ways of ending happened, so both paths were compared.
    assert breaches > 0 and time_limits > 0


def test_truncate_drawdown_cannot_change_after_construction() -> None:
    env = BatchedPortfolioVecEnv(n_envs=2, truncate_drawdown=0.1)
    with pytest.raises(ValueError, match="cannot change"):
        env.set_attr("truncate_drawdown", None)
    env.set_attr("stop_properly", 0.5)
    assert env.get_attr("stop_properly") == [0.5, 0.5]


def test_default_adds_no_info_key() -> None:
    env = PortfolioEnv()
    env.reset(seed=0)
    assert "drawdown_breach" not in env.step(np.zeros(4, dtype=np.float32))[4]
