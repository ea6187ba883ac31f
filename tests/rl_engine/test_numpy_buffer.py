"""NumpyRolloutBuffer against SB3's RolloutBuffer, its reference: the same advantages and
returns, and the same minibatches in the same order from the same global seed, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3.common.buffers import RolloutBuffer

from alphaloop.rl_engine.numpy_buffer import NumpyRolloutBuffer

STEPS, ENVS, OBS, ACT = 37, 3, 5, 2
OBS_SPACE = spaces.Box(-5.0, 5.0, (OBS,), dtype=np.float32)
ACT_SPACE = spaces.Box(-10.0, 10.0, (ACT,), dtype=np.float32)


def _rollout(seed: int) -> tuple[list[tuple[np.ndarray, ...]], np.ndarray, np.ndarray]:
    """A rollout's steps (with episode starts inside it), its last values and its last dones."""
    rng = np.random.default_rng(seed)
    steps = [
        (
            rng.normal(size=(ENVS, OBS)).astype(np.float32),
            rng.normal(size=(ENVS, ACT)).astype(np.float32),
            rng.normal(size=ENVS).astype(np.float32),
            rng.random(ENVS) < 0.15,
            rng.normal(size=(ENVS, 1)).astype(np.float32),
            rng.normal(size=ENVS).astype(np.float32),
        )
        for _ in range(STEPS)
    ]
    last_values = rng.normal(size=(ENVS, 1)).astype(np.float32)
    return steps, last_values, rng.random(ENVS) < 0.5


def _fill(buffer: RolloutBuffer | NumpyRolloutBuffer, seed: int) -> None:
    steps, last_values, dones = _rollout(seed)
    buffer.reset()
    for obs, action, reward, start, value, log_prob in steps:
        # SB3's PPO hands the buffer its values and log-probabilities as tensors.
        buffer.add(obs, action, reward, start, torch.from_numpy(value), torch.from_numpy(log_prob))
    buffer.compute_returns_and_advantage(torch.from_numpy(last_values), dones)


def _buffers() -> tuple[RolloutBuffer, NumpyRolloutBuffer]:
    options = {"device": "cpu", "gae_lambda": 0.9, "gamma": 0.97, "n_envs": ENVS}
    return (
        RolloutBuffer(STEPS, OBS_SPACE, ACT_SPACE, **options),
        NumpyRolloutBuffer(STEPS, OBS_SPACE, ACT_SPACE, **options),
    )


@pytest.mark.parametrize("batch_size", [8, 64, None])
def test_gae_and_minibatches_are_sb3s_bit_for_bit(batch_size: int | None) -> None:
    sb3, ours = _buffers()
    for seed in (1, 2):  # the second rollout reuses the storage of the first
        _fill(sb3, seed)
        _fill(ours, seed)
        np.testing.assert_array_equal(ours.advantages, sb3.advantages.T)
        np.testing.assert_array_equal(ours.returns, sb3.returns.T)
        for round_ in range(2):  # two passes, each in a fresh order
            np.random.seed(10 * seed + round_)
            want = list(sb3.get(batch_size))
            np.random.seed(10 * seed + round_)
            got = list(ours.get(batch_size))
            assert len(got) == len(want) == -(-STEPS * ENVS // (batch_size or STEPS * ENVS))
            for a, b in zip(want, got, strict=True):
                assert a._fields == b._fields
                for x, y in zip(a, b, strict=True):
                    assert x.dtype == y.dtype
                    np.testing.assert_array_equal(x.numpy(), y.numpy())
        # What SB3's PPO logs after its passes reads the buffer's values and returns flat.
        np.testing.assert_array_equal(ours.values.flatten(), sb3.values.flatten())
        np.testing.assert_array_equal(ours.returns.flatten(), sb3.returns.flatten())


def test_the_buffer_refuses_a_step_too_many_and_reading_a_partial_rollout() -> None:
    _, ours = _buffers()
    steps, _, _ = _rollout(3)
    with pytest.raises(ValueError, match="once it holds a whole rollout"):
        next(ours.minibatches(8))
    for step in steps:
        ours.add(*step)
    with pytest.raises(ValueError, match=f"already holds {STEPS} steps"):
        ours.add(*steps[0])


def test_the_buffer_takes_boxes_and_known_estimators_only() -> None:
    with pytest.raises(ValueError, match="Box observations and Box actions"):
        NumpyRolloutBuffer(4, spaces.Discrete(3), ACT_SPACE)
    with pytest.raises(ValueError, match="unknown advantage estimator 'vtrace'"):
        NumpyRolloutBuffer(4, OBS_SPACE, ACT_SPACE, advantage="vtrace")  # type: ignore[arg-type]
