"""GRPO and REINFORCE++ advantages against a batch worked out by hand.

The batch: 4 steps of 2 env copies.

    copy 0: rewards  1,  2 | 3, 4        episode ends after step 1; the rollout cuts the next
    copy 1: rewards  5 | -1, 0, 2 |      episode ends after steps 0 and 3 (the last dones)

so four trajectories: A = (1, 2), B = (3, 4), C = (5,), D = (-1, 0, 2).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from alphaloop.rl_engine.advantages import (
    ADVANTAGE_ESTIMATORS,
    episode_ends,
    grpo_advantages,
    reinforce_pp_advantages,
    returns_to_go,
    trajectory_ids,
)

REWARDS = np.array([[1.0, 5.0], [2.0, -1.0], [3.0, 0.0], [4.0, 2.0]])
# SB3's flags: step t starts an episode; the first step of a rollout counts as a start.
EPISODE_STARTS = np.array([[1, 1], [0, 1], [1, 0], [0, 0]], dtype=np.float32)
LAST_DONES = np.array([False, True])
DONES = np.array([[False, True], [True, False], [False, False], [False, True]])


def test_estimator_names() -> None:
    assert ADVANTAGE_ESTIMATORS == ("gae", "grpo", "reinforce_pp")


def test_episode_ends_from_sb3_flags() -> None:
    np.testing.assert_array_equal(episode_ends(EPISODE_STARTS, LAST_DONES), DONES)


def test_trajectories() -> None:
    # A = 0, B = 1 (copy 0), C = 2, D = 3 (copy 1).
    np.testing.assert_array_equal(trajectory_ids(DONES), [[0, 2], [0, 3], [1, 3], [1, 3]])


def test_returns_to_go_by_hand() -> None:
    # gamma 0.5. A: 1 + 0.5 * 2 = 2, then 2. B: 3 + 0.5 * 4 = 5, then 4 (cut: no bootstrap).
    # C: 5. D: -1 + 0.5 * (0 + 0.5 * 2) = -0.5, then 0 + 0.5 * 2 = 1, then 2.
    expected = [[2.0, 5.0], [2.0, -0.5], [5.0, 1.0], [4.0, 2.0]]
    np.testing.assert_allclose(returns_to_go(REWARDS, DONES, 0.5), expected, rtol=0, atol=1e-12)


def test_grpo_by_hand() -> None:
    # Totals: A = 3, B = 7, C = 5, D = 1. Mean 4; deviations -1, 3, 1, -3; population
    # variance (1 + 9 + 1 + 9) / 4 = 5. Every step carries its trajectory's score.
    s = math.sqrt(5.0)
    expected = [[-1 / s, 1 / s], [-1 / s, -3 / s], [3 / s, -3 / s], [3 / s, -3 / s]]
    np.testing.assert_allclose(grpo_advantages(REWARDS, DONES), expected, rtol=0, atol=1e-12)


def test_grpo_without_spread_is_zero() -> None:
    rewards = np.array([[1.0, 2.0], [2.0, 1.0]])
    dones = np.array([[False, False], [True, True]])  # two trajectories, both total 3
    np.testing.assert_array_equal(grpo_advantages(rewards, dones), np.zeros((2, 2)))


def test_reinforce_pp_by_hand() -> None:
    # gamma 0.5. Returns from each trajectory's first step: A = 2, B = 5, C = 5, D = -0.5
    # (sum 11.5). Leave-one-out baselines, the mean of the other three:
    # A: 9.5 / 3, B: 6.5 / 3, C: 6.5 / 3, D: 12 / 3 = 4.
    # Raw advantage = return-to-go - baseline, in thirds:
    #   step 0: A 6 - 9.5 = -3.5   C 15 - 6.5 = 8.5
    #   step 1: A 6 - 9.5 = -3.5   D -1.5 - 12 = -13.5
    #   step 2: B 15 - 6.5 = 8.5   D 3 - 12 = -9
    #   step 3: B 12 - 6.5 = 5.5   D 6 - 12 = -6
    # Sum -13 thirds, mean -13/8 thirds; deviations -1.875, 10.125, -1.875, -11.875, 10.125,
    # -7.375, 7.125, -4.375, squares summing to 477.375: variance 59.671875 (thirds squared).
    deviations = np.array([[-1.875, 10.125], [-1.875, -11.875], [10.125, -7.375], [7.125, -4.375]])
    expected = deviations / math.sqrt(59.671875)
    advantages, to_go = reinforce_pp_advantages(REWARDS, DONES, 0.5)
    np.testing.assert_allclose(advantages, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(to_go, returns_to_go(REWARDS, DONES, 0.5), rtol=0, atol=0)
    assert advantages[0, 0] == pytest.approx(-0.242726, abs=1e-6)


def test_reinforce_pp_single_trajectory_has_zero_baseline() -> None:
    # One copy, no end: one trajectory with returns-to-go 3, 2 (gamma 1); baseline 0;
    # normalised: (3 - 2.5) / 0.5 = 1 and -1.
    advantages, _ = reinforce_pp_advantages(
        np.array([[1.0], [2.0]]), np.array([[False], [False]]), 1.0
    )
    np.testing.assert_allclose(advantages, [[1.0], [-1.0]], rtol=0, atol=1e-12)
