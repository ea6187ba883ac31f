"""Critic-free advantage estimators for PPO's clipped objective: GRPO and REINFORCE++.

SB3's PPO estimates advantages with GAE over a learned value function. The two estimators
here replace the critic by other trajectories of the same rollout, as in language-model RL:

- ``grpo``, group-relative (Shao et al. 2024, *DeepSeekMath*, section 4.1): every step of a
  trajectory gets the trajectory's total reward, standardised over the group.
- ``reinforce_pp``, REINFORCE++ (Hu 2025, *REINFORCE++: a simple and efficient approach for
  aligning large language models*) with a leave-one-out baseline (as in RLOO, Ahmadian et al.
  2024): the step's discounted return-to-go minus the mean return of the *other*
  trajectories, then normalised over the whole batch at once.

Both work on SB3's rollout layout, (T steps, E env copies), and cut it into **trajectories**:
the maximal runs of one copy's steps with no episode end inside. A copy's first trajectory may
have begun in the previous rollout and its last may go on in the next; they count with the
rewards this rollout holds, and nothing is bootstrapped from a value (there is none). The
**group** of GRPO is every trajectory of the rollout: the env copies start on different days,
so no two trajectories share a start state the way GRPO's completions share a prompt; what
they share is the policy that collected them.

Pure numpy, so each function can be checked against numbers worked out by hand.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np

__all__ = [
    "ADVANTAGE_ESTIMATORS",
    "AdvantageEstimator",
    "episode_ends",
    "grpo_advantages",
    "reinforce_pp_advantages",
    "returns_to_go",
    "trajectory_ids",
]

AdvantageEstimator = Literal["gae", "grpo", "reinforce_pp"]
ADVANTAGE_ESTIMATORS: tuple[str, ...] = get_args(AdvantageEstimator)
# Below this spread every advantage of a batch is set to zero rather than blown up by 1/std.
_EPS = 1e-8


def episode_ends(episode_starts: np.ndarray, last_dones: np.ndarray) -> np.ndarray:
    """Whether an episode ended after each step, from SB3's buffer flags.

    SB3 stores ``episode_starts[t]`` (step ``t`` is the first of an episode), so step ``t``
    ended one when ``episode_starts[t + 1]`` is set; for the last step the rollout's final
    ``dones`` tell.

    Args:
        episode_starts: (T, E) flags of the rollout buffer.
        last_dones: (E,) dones of the rollout's last step.

    Returns:
        (T, E) booleans.
    """
    starts = np.asarray(episode_starts, dtype=bool)
    ends = np.empty_like(starts)
    ends[:-1] = starts[1:]
    ends[-1] = np.asarray(last_dones, dtype=bool)
    return ends


def trajectory_ids(dones: np.ndarray) -> np.ndarray:
    """Numbers each trajectory of a (T, E) rollout: copy by copy, then in time order.

    A trajectory is a maximal run of steps of one env copy that ends at an episode end
    (``dones[t, e]``) or at the rollout's last step.

    Returns:
        (T, E) integers from 0 to (number of trajectories - 1).
    """
    ends = np.asarray(dones, dtype=bool).copy()
    ends[-1] = True
    # Column-major order walks each copy's steps in time: a trajectory starts after each end.
    flat_ends = ends.T.ravel()
    starts = np.concatenate([[0], flat_ends[:-1].astype(np.int64)])
    return np.cumsum(starts).reshape(ends.T.shape).T


def returns_to_go(rewards: np.ndarray, dones: np.ndarray, gamma: float) -> np.ndarray:
    """Discounted reward-to-go of every step within its trajectory, (T, E).

    ``G_t = r_t + gamma * G_{t+1}``, restarting at each episode end and at the rollout's end
    (no bootstrap: the estimators here have no critic).
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    ends = np.asarray(dones, dtype=bool)
    out = np.zeros_like(rewards)
    following = np.zeros(rewards.shape[1])
    for t in range(rewards.shape[0] - 1, -1, -1):
        following = rewards[t] + gamma * np.where(ends[t], 0.0, following)
        out[t] = following
    return out


def _trajectory_returns(rewards: np.ndarray, ids: np.ndarray, gamma: float) -> np.ndarray:
    """Each trajectory's discounted return from its first step in the rollout, by id."""
    steps_in = np.zeros_like(ids)
    for t in range(1, ids.shape[0]):
        steps_in[t] = np.where(ids[t] == ids[t - 1], steps_in[t - 1] + 1, 0)
    discounted = np.asarray(rewards, dtype=np.float64) * np.power(gamma, steps_in)
    return np.bincount(ids.ravel(), weights=discounted.ravel())


def grpo_advantages(rewards: np.ndarray, dones: np.ndarray) -> np.ndarray:
    """Group-relative advantages (Shao et al. 2024): ``(R_i - mean R) / std R`` on every step.

    ``R_i`` is trajectory ``i``'s total (undiscounted) reward in the rollout, the outcome
    GRPO scores a completion by; the mean and the population standard deviation are over
    every trajectory of the rollout (see the module docstring). A group with no spread (one
    trajectory, or equal totals) gives zeros.

    Args:
        rewards: (T, E) step rewards.
        dones: (T, E) episode ends (see :func:`episode_ends`).

    Returns:
        (T, E) advantages.
    """
    ids = trajectory_ids(dones)
    totals = _trajectory_returns(rewards, ids, 1.0)
    spread = totals.std()
    if spread < _EPS:
        return np.zeros(ids.shape)
    return ((totals - totals.mean()) / spread)[ids]


def reinforce_pp_advantages(
    rewards: np.ndarray, dones: np.ndarray, gamma: float
) -> tuple[np.ndarray, np.ndarray]:
    """REINFORCE++ advantages (Hu 2025) with a leave-one-out baseline.

    Step ``t`` of trajectory ``i`` gets ``G_{i,t} - b_i``: its discounted return-to-go
    minus ``b_i``, the mean of the other trajectories' returns ``G_{j,0}`` (each from its
    first step in the rollout). ``b_i`` does not depend on trajectory ``i``'s actions, so
    the estimate stays unbiased; with a single trajectory the baseline is 0. The advantages
    are then normalised over the whole batch, ``(A - mean A) / std A`` (population std),
    instead of per minibatch; a batch with no spread gives zeros.

    Args:
        rewards: (T, E) step rewards.
        dones: (T, E) episode ends (see :func:`episode_ends`).
        gamma: discount factor of the returns-to-go.

    Returns:
        (T, E) normalised advantages and (T, E) returns-to-go.
    """
    ids = trajectory_ids(dones)
    to_go = returns_to_go(rewards, dones, gamma)
    first = _trajectory_returns(rewards, ids, gamma)
    n = first.size
    baseline = (first.sum() - first) / (n - 1) if n > 1 else np.zeros(1)
    raw = to_go - baseline[ids]
    spread = raw.std()
    if spread < _EPS:
        return np.zeros(raw.shape), to_go
    return (raw - raw.mean()) / spread, to_go
