"""PPO training, the live curve, divergence detection, walk-forward weights and save/load."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from stable_baselines3 import PPO

from alphaloop.exceptions import TrialCrashed
from alphaloop.knobs import TrialConfig
from alphaloop.rl_engine import (
    DEFAULT_N_ENVS,
    DEFAULT_TOTAL_TIMESTEPS,
    BatchedPortfolioVecEnv,
    PortfolioEnv,
    TrainResult,
    load_policy,
    make_ppo,
    policy_weights,
    save_policy,
    train_ppo,
)
from alphaloop.rl_engine import ppo as ppo_module
from alphaloop.rl_engine.numpy_ppo import NumpyPPO

# Small enough to train in about a second: 2 envs x 64 steps per rollout, 2 rollouts.
CONFIG = TrialConfig(
    lookback=5, episode_len=20, rebal_freq=5, n_steps=64, batch_size=64, n_epochs=3
)
N_ENVS = 2
BUDGET = 2 * CONFIG.n_steps * N_ENVS


@pytest.fixture(scope="module")
def returns() -> np.ndarray:
    rng = np.random.default_rng(5)
    return rng.normal([0.0001, 0.0004, 0.0008], [0.002, 0.01, 0.02], (400, 3))


@pytest.fixture(scope="module")
def trained(returns: np.ndarray) -> TrainResult:
    return train_ppo(returns[:300], CONFIG, total_timesteps=BUDGET, n_envs=N_ENVS, seed=3)


def _walk_forward(model: PPO, returns: np.ndarray) -> np.ndarray:
    return policy_weights(model, returns, 300, 400, CONFIG.lookback, CONFIG.rebal_freq)


def test_make_ppo_feeds_knobs_by_name(returns: np.ndarray) -> None:
    config = TrialConfig(
        learning_rate=1e-3,
        n_steps=128,
        batch_size=32,
        n_epochs=4,
        gamma=0.95,
        gae_lambda=0.9,
        ent_coef=0.01,
        lookback=5,
    )
    env = BatchedPortfolioVecEnv(returns, n_envs=2, lookback=5)
    model = make_ppo(config, env, seed=0)
    assert model.learning_rate == 1e-3
    assert (model.n_steps, model.batch_size, model.n_epochs) == (128, 32, 4)
    assert (model.gamma, model.gae_lambda, model.ent_coef) == (0.95, 0.9, 0.01)
    assert model.device.type == "cpu"
    assert model.seed == 0


def test_train_produces_curve_and_calls_on_update(returns: np.ndarray) -> None:
    calls: list[tuple[int, float]] = []
    threads = torch.get_num_threads()
    result = train_ppo(
        returns[:300],
        CONFIG,
        total_timesteps=BUDGET,
        n_envs=N_ENVS,
        seed=3,
        on_update=lambda step, reward: calls.append((step, reward)),
    )
    assert torch.get_num_threads() == threads
    assert result.timesteps == BUDGET
    assert result.seconds > 0
    assert [step for step, _ in result.curve] == [128, 256]
    assert all(math.isfinite(reward) for _, reward in result.curve)
    assert calls == result.curve
    with pytest.raises(ValueError):
        result.timesteps = 0  # frozen


def test_curve_has_no_nan_when_a_rollout_ends_no_episode(returns: np.ndarray) -> None:
    # 120 one-day steps per episode: the first 64-step rollout ends none, the second does.
    long_episodes = CONFIG.model_copy(update={"episode_len": 120, "rebal_freq": 1})
    result = train_ppo(returns[:300], long_episodes, total_timesteps=BUDGET, n_envs=N_ENVS)
    assert len(result.curve) == 2
    assert all(math.isfinite(reward) for _, reward in result.curve)


def test_same_seed_same_policy(trained: TrainResult, returns: np.ndarray) -> None:
    again = train_ppo(returns[:300], CONFIG, total_timesteps=BUDGET, n_envs=N_ENVS, seed=3)
    assert again.curve == trained.curve
    np.testing.assert_array_equal(
        _walk_forward(again.model, returns), _walk_forward(trained.model, returns)
    )
    other = train_ppo(returns[:300], CONFIG, total_timesteps=BUDGET, n_envs=N_ENVS, seed=4)
    assert not np.array_equal(
        _walk_forward(other.model, returns), _walk_forward(trained.model, returns)
    )


@pytest.fixture(params=[NumpyPPO, PPO], ids=["numpy", "sb3"])
def trainer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> type[PPO]:
    """The class that trains, and SB3's own PPO, its reference (divergence is caught either
    way)."""
    monkeypatch.setattr(ppo_module, "PPO_CLASS", request.param)
    return request.param


def test_nan_parameters_raise_trial_crashed(
    returns: np.ndarray, monkeypatch: pytest.MonkeyPatch, trainer: type[PPO]
) -> None:
    original_train = trainer.train

    def poison_then_train(self: PPO) -> None:
        with torch.no_grad():
            self.policy.log_std.fill_(float("nan"))
        original_train(self)

    monkeypatch.setattr(trainer, "train", poison_then_train)
    with pytest.raises(TrialCrashed, match="policy diverged: non-finite parameters in log_std"):
        train_ppo(returns[:300], CONFIG, total_timesteps=BUDGET, n_envs=N_ENVS, seed=3)


def test_overflowing_std_with_finite_weights_raises_trial_crashed(
    returns: np.ndarray, trainer: type[PPO]
) -> None:
    # A learning rate far beyond the knob's bound blows log_std up while every weight stays
    # finite; torch then refuses a Normal whose scale exp(log_std) is inf.
    wild = TrialConfig.model_construct(**{**CONFIG.model_dump(), "learning_rate": 1e3})
    with pytest.raises(TrialCrashed, match="policy diverged: Expected parameter scale"):
        train_ppo(returns[:300], wild, total_timesteps=BUDGET, n_envs=N_ENVS, seed=3)


def test_nan_loss_raises_trial_crashed(
    returns: np.ndarray, monkeypatch: pytest.MonkeyPatch, trainer: type[PPO]
) -> None:
    original_train = trainer.train

    def train_then_report_nan(self: PPO) -> None:
        original_train(self)
        self.logger.record("train/value_loss", float("nan"))

    monkeypatch.setattr(trainer, "train", train_then_report_nan)
    with pytest.raises(TrialCrashed, match=r"policy diverged: non-finite loss \(value_loss=nan"):
        train_ppo(returns[:300], CONFIG, total_timesteps=BUDGET, n_envs=N_ENVS, seed=3)


def test_policy_weights_shape_and_holding(trained: TrainResult, returns: np.ndarray) -> None:
    weights = _walk_forward(trained.model, returns)
    assert weights.shape == (100, 3)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert (weights > 0).all()
    for block in range(0, 100, CONFIG.rebal_freq):
        assert (weights[block : block + CONFIG.rebal_freq] == weights[block]).all()
    # The policy (not the model wrapper) is accepted too.
    np.testing.assert_array_equal(
        policy_weights(trained.model.policy, returns, 300, 400, 5, 5), weights
    )


def test_policy_weights_do_not_look_ahead(trained: TrainResult, returns: np.ndarray) -> None:
    weights = _walk_forward(trained.model, returns)
    shocked = returns.copy()
    shocked[350:] = np.random.default_rng(9).normal(0.0, 0.05, (50, 3))
    changed = _walk_forward(trained.model, shocked)
    np.testing.assert_array_equal(changed[: 350 - 300 + 1], weights[: 350 - 300 + 1])
    assert not np.array_equal(changed, weights)


def test_policy_weights_match_the_env(trained: TrainResult, returns: np.ndarray) -> None:
    # Oracle: the env run with the model's own deterministic predict() over the same window.
    env = PortfolioEnv(returns, lookback=5, episode_len=100, rebal_freq=5)
    obs, _ = env.reset(options={"start_day": 300})
    targets = []
    truncated = False
    while not truncated:
        action, _ = trained.model.predict(obs, deterministic=True)
        obs, _, _, truncated, info = env.step(action)
        targets.append(info["weights"])
    weights = _walk_forward(trained.model, returns)
    np.testing.assert_allclose(weights[::5], np.array(targets), rtol=0, atol=1e-12)


def test_policy_weights_validation(trained: TrainResult, returns: np.ndarray) -> None:
    with pytest.raises(ValueError, match="start"):
        policy_weights(trained.model, returns, 3, 100, 5, 5)
    with pytest.raises(ValueError, match="start"):
        policy_weights(trained.model, returns, 300, 401, 5, 5)
    with pytest.raises(ValueError, match="lookback"):
        policy_weights(trained.model, returns, 300, 400, 6, 5)


def test_save_load_round_trip(trained: TrainResult, returns: np.ndarray, tmp_path: Path) -> None:
    path = save_policy(trained.model, tmp_path / "policies" / "best")
    assert path == tmp_path / "policies" / "best.zip" and path.is_file()
    loaded = load_policy(tmp_path / "policies" / "best")
    assert loaded.device.type == "cpu"
    np.testing.assert_array_equal(
        _walk_forward(loaded, returns), _walk_forward(trained.model, returns)
    )
    with pytest.raises(FileNotFoundError):
        load_policy(tmp_path / "missing.zip")


def test_defaults_allow_two_updates() -> None:
    assert DEFAULT_TOTAL_TIMESTEPS >= 2 * TrialConfig().n_steps * DEFAULT_N_ENVS


@pytest.mark.slow
def test_default_trial_trains_in_seconds() -> None:
    data = np.random.default_rng(0).normal(0.0003, 0.01, (6800, 20))
    result = train_ppo(data, TrialConfig(), seed=0)
    assert result.timesteps == DEFAULT_TOTAL_TIMESTEPS
    assert len(result.curve) >= 2
    # ~6 s when measured on two idle cores; generous because the cores are shared.
    assert result.seconds < 30
