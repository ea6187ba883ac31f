"""PPO on the batched portfolio env: build, train with a live curve, walk forward, save and load.

Knob names are passed straight to ``stable_baselines3.PPO``. A trial trains for a fixed env-step
budget (a session setting, not a knob), so a proposer cannot buy a better score with more compute:
SB3 only stops at whole rollouts, so :func:`rollout_plan` fits the rollouts to the budget instead
of letting ``n_steps`` decide how far past it a run goes.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.distributions import DiagGaussianDistribution
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.preprocessing import preprocess_obs
from stable_baselines3.common.utils import set_random_seed
from stable_baselines3.common.vec_env import VecEnv

from alphaloop.exceptions import TrialCrashed
from alphaloop.knobs import TrialConfig
from alphaloop.rl_engine._core import (
    hold,
    observable_log_returns,
    softmax_weights,
    validate_returns,
)
from alphaloop.rl_engine.vec_env import BatchedPortfolioVecEnv

# Measured with the default knobs on 20 assets x 6,800 days, lookback 20, on a shared 2-core
# CPU: 4 envs x 2 rollouts of 2,048 steps (2 PPO updates of 10 epochs x 128 minibatches) train
# in 5.4-6.7 s, within a 10 s trial budget with room for load. 2 envs took 3.7 s but give each
# update half the data; 8 envs took 12.4 s. Minibatch updates dominate, not env stepping.
DEFAULT_N_ENVS = 4
DEFAULT_TOTAL_TIMESTEPS = 16_384
# A 64x64 MLP on minibatches of 64 is too small to split across threads: on 2 cores one thread
# trained ~1.3x faster than two, and it leaves the other core to a parallel trial.
TRAIN_THREADS = 1

# Losses PPO records after each update; explained_variance is left out because SB3 reports
# NaN for it whenever the returns of a rollout have zero variance, which is not a divergence.
_LOSS_KEYS = (
    "train/loss",
    "train/value_loss",
    "train/policy_gradient_loss",
    "train/entropy_loss",
    "train/approx_kl",
)


class TrainResult(BaseModel):
    """What a PPO training run hands back to the evaluator.

    Attributes:
        model: the trained SB3 ``PPO`` (its ``policy`` gives weights via :func:`policy_weights`).
        timesteps: env steps actually trained on: the budget, or the largest multiple of
            ``n_envs`` within it (see :func:`rollout_plan`).
        seconds: wall-clock training time.
        curve: ``(timestep, mean episode reward)`` after each rollout, in order.
        rollouts: the rollouts collected, as ``(steps per env, how many)`` groups in order.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    model: PPO
    timesteps: int = Field(ge=0)
    seconds: float = Field(ge=0)
    curve: list[tuple[int, float]]
    rollouts: list[tuple[int, int]] = Field(default_factory=list)


def rollout_plan(total_timesteps: int, n_steps: int, n_envs: int) -> list[tuple[int, int]]:
    """How many rollouts of how many steps per env fill an env-step budget exactly.

    SB3 collects whole rollouts of ``n_steps * n_envs`` steps and stops at the first boundary at
    or past its budget, so left alone ``n_steps`` decides the compute: at a 256-step budget
    with one env, ``n_steps=255`` trains 510 steps and ``n_steps=256`` trains 256. Instead each
    env copy takes ``total_timesteps // n_envs`` steps, split into ``k = round(per_env /
    n_steps)`` rollouts (at least one) whose lengths differ by at most one step. Every rollout
    is trained on; none is cut short or dropped. So the budget is a hard cap (exact when
    ``n_envs`` divides it), ``n_steps`` keeps its meaning up to that rounding (a rollout is
    within a factor 1.5 of it, or the whole budget when ``n_steps`` exceeds it), and knobs
    that round to the same plan (``n_steps`` 4,095 and 4,096 at the default budget) train the
    same way.

    Args:
        total_timesteps: env-step budget.
        n_steps: the knob, steps per env per rollout.
        n_envs: parallel env copies.

    Returns:
        ``[(steps per env, number of rollouts), ...]``: one group, or two when the lengths
        differ (the longer rollouts first).

    Raises:
        ValueError: a budget too small for two env steps, or non-positive sizes.
    """
    if n_steps < 1 or n_envs < 1:
        raise ValueError(f"n_steps and n_envs must be >= 1, got {n_steps} and {n_envs}")
    per_env = int(total_timesteps) // n_envs
    if per_env * n_envs < 2:
        raise ValueError(
            f"total_timesteps={total_timesteps} with n_envs={n_envs} leaves fewer than 2 env "
            "steps to train on; PPO needs at least 2 (at least one step per env copy)"
        )
    k = max(1, math.floor(per_env / n_steps + 0.5))
    short, longer = divmod(per_env, k)
    plan = [(short + 1, longer), (short, k - longer)]
    return [(length, count) for length, count in plan if count > 0]


def make_ppo(config: TrialConfig, vec_env: VecEnv, seed: int) -> PPO:
    """A CPU ``PPO("MlpPolicy")`` on ``vec_env`` with the PPO knobs of ``config``.

    Args:
        config: the trial's knobs; only the ppo group is read here.
        vec_env: the training environments.
        seed: seeds torch, numpy, the action space and the env.
    """
    with warnings.catch_warnings():
        # SB3 warns when batch_size does not divide n_steps * n_envs (the last minibatch of an
        # epoch is then smaller). The knobs allow any pair on purpose; in a long session the
        # warning would only repeat on stderr.
        warnings.filterwarnings("ignore", message="You have specified a mini-batch size")
        return _ppo(config, vec_env, seed)


def _ppo(config: TrialConfig, vec_env: VecEnv, seed: int) -> PPO:
    model = PPO(
        "MlpPolicy",
        vec_env,
        learning_rate=config.learning_rate,
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        ent_coef=config.ent_coef,
        seed=seed,
        device="cpu",
        verbose=0,
    )
    # SB3's default logger makes an empty ``SB3-<timestamp>`` folder in the system temp folder
    # on every ``learn``; a logger with no outputs still records the losses we check.
    model.set_logger(Logger(folder=None, output_formats=[]))
    return model


def _non_finite_parameters(policy: torch.nn.Module) -> list[str]:
    return [name for name, p in policy.named_parameters() if not bool(torch.isfinite(p).all())]


class _TrainingMonitor(BaseCallback):
    """Builds the reward curve, feeds ``on_update`` and stops a diverging run.

    A curve point is the mean total reward of the episodes that ended during the rollout.
    Episode rewards are summed here from the raw step rewards (SB3 only adds the timeout
    bootstrap after ``on_step``), so no ``VecMonitor`` wrapper is needed. When a rollout is
    shorter than an episode and none ended, the point is estimated as the rollout's mean step
    reward times the steps per episode, so the curve never holds a NaN.
    """

    def __init__(
        self, on_update: Callable[[int, float], None] | None, steps_per_episode: int
    ) -> None:
        super().__init__()
        self.on_update = on_update
        self.steps_per_episode = steps_per_episode
        self.curve: list[tuple[int, float]] = []
        self._running: np.ndarray | None = None
        self._finished: list[float] = []
        self._step_sum = 0.0
        self._step_count = 0

    def _on_rollout_start(self) -> None:
        # The update that just ran recorded its losses; check them before collecting again.
        _check_losses(self.model)
        self._finished = []
        self._step_sum = 0.0
        self._step_count = 0

    def _on_step(self) -> bool:
        rewards = np.asarray(self.locals["rewards"], dtype=np.float64)
        dones = np.asarray(self.locals["dones"], dtype=bool)
        if self._running is None:
            self._running = np.zeros_like(rewards)
        self._running += rewards
        self._step_sum += float(rewards.sum())
        self._step_count += rewards.size
        if dones.any():
            self._finished.extend(self._running[dones].tolist())
            self._running[dones] = 0.0
        return True

    def _on_rollout_end(self) -> None:
        bad = _non_finite_parameters(self.model.policy)
        if bad:
            raise TrialCrashed(f"policy diverged: non-finite parameters in {', '.join(bad)}")
        if self._finished:
            mean = float(np.mean(self._finished))
        else:
            mean = self._step_sum / max(self._step_count, 1) * self.steps_per_episode
        point = (int(self.num_timesteps), mean)
        self.curve.append(point)
        if self.on_update is not None:
            self.on_update(*point)


def _check_losses(model: PPO) -> None:
    """Raises :class:`TrialCrashed` if the last PPO update recorded a non-finite loss."""
    recorded = model.logger.name_to_value
    bad = {k: recorded[k] for k in _LOSS_KEYS if k in recorded and not math.isfinite(recorded[k])}
    if bad:
        detail = ", ".join(f"{k.removeprefix('train/')}={v}" for k, v in bad.items())
        raise TrialCrashed(f"policy diverged: non-finite loss ({detail})")


def train_ppo(
    returns_train: np.ndarray,
    config: TrialConfig,
    total_timesteps: int = DEFAULT_TOTAL_TIMESTEPS,
    n_envs: int = DEFAULT_N_ENVS,
    seed: int = 0,
    on_update: Callable[[int, float], None] | None = None,
) -> TrainResult:
    """Trains PPO on episodes drawn from ``returns_train`` for ``total_timesteps`` env steps.

    The rollouts follow :func:`rollout_plan`: exactly ``total_timesteps`` env steps when
    ``n_envs`` divides it (else the largest multiple of ``n_envs`` below it), whatever
    ``n_steps`` is, every one of them trained on. Rollouts of two lengths run as two
    consecutive ``learn`` calls on the same model and env (the second resizes the rollout
    buffer); the knobs' learning rate and clip range are constants, so splitting the run does
    not move any schedule. Same inputs and seed give the same policy.

    Args:
        returns_train: (T, N) simple daily returns of the training window.
        config: the trial's knobs (env and ppo groups are used).
        total_timesteps: env-step budget, a hard cap.
        n_envs: parallel env copies in the batched VecEnv.
        seed: seeds python, numpy, torch and the env copies.
        on_update: called as ``on_update(timestep, mean_episode_reward)`` after each rollout.

    Returns:
        The trained model, env steps trained, seconds taken, the reward curve and the rollouts.

    Raises:
        TrialCrashed: non-finite policy parameters or losses ("policy diverged: ...").
        ValueError: unusable data or budget.
    """
    if isinstance(total_timesteps, bool) or int(total_timesteps) < 1:
        raise ValueError(f"total_timesteps must be a positive integer, got {total_timesteps!r}")
    plan = rollout_plan(int(total_timesteps), config.n_steps, n_envs)
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(TRAIN_THREADS)
    try:
        set_random_seed(seed)
        env = BatchedPortfolioVecEnv(
            returns_train,
            n_envs=n_envs,
            lookback=config.lookback,
            episode_len=config.episode_len,
            rebal_freq=config.rebal_freq,
            turnover_cost_bps=config.turnover_cost_bps,
            vol_penalty=config.vol_penalty,
        )
        # model_copy skips validation on purpose: a rollout may be shorter than the knob's bound.
        model = make_ppo(config.model_copy(update={"n_steps": plan[0][0]}), env, seed)
        monitor = _TrainingMonitor(on_update, math.ceil(config.episode_len / config.rebal_freq))
        began = time.perf_counter()
        try:
            _learn(model, plan, monitor)
        except TrialCrashed:
            raise
        except (ValueError, RuntimeError) as err:
            # A diverged policy surfaces first as torch refusing to build its Normal: from NaN
            # means (non-finite weights), or from a std that overflowed to inf while the weights
            # are still finite (exp of a huge log_std).
            first_line = str(err).splitlines()[0] if str(err) else type(err).__name__
            bad = _non_finite_parameters(model.policy)
            if bad:
                raise TrialCrashed(
                    f"policy diverged: non-finite parameters in {', '.join(bad)} ({first_line})"
                ) from err
            if first_line.startswith("Expected parameter"):
                raise TrialCrashed(f"policy diverged: {first_line[:200]}") from err
            raise
        _check_losses(model)
        bad = _non_finite_parameters(model.policy)
        if bad:
            raise TrialCrashed(f"policy diverged: non-finite parameters in {', '.join(bad)}")
        seconds = time.perf_counter() - began
    finally:
        torch.set_num_threads(previous_threads)
    return TrainResult(
        model=model,
        timesteps=int(model.num_timesteps),
        seconds=seconds,
        curve=monitor.curve,
        rollouts=plan,
    )


def _learn(model: PPO, plan: list[tuple[int, int]], monitor: _TrainingMonitor) -> None:
    """Runs ``plan``'s rollouts: one ``learn`` per rollout length, continuing the same episodes."""
    for group, (length, count) in enumerate(plan):
        if model.n_steps != length:
            model.n_steps = length
            model.rollout_buffer = model.rollout_buffer_class(
                length,
                model.observation_space,
                model.action_space,
                device=model.device,
                gamma=model.gamma,
                gae_lambda=model.gae_lambda,
                n_envs=model.n_envs,
                **model.rollout_buffer_kwargs,
            )
        model.learn(
            total_timesteps=length * model.n_envs * count,
            callback=monitor,
            reset_num_timesteps=group == 0,
        )


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
    n_days, n_assets = data.shape
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
    first = start - lookback
    log_returns = observable_log_returns(data[first:end])
    out = np.empty((end - start, n_assets))
    weights = np.full(n_assets, 1.0 / n_assets)
    window = np.zeros((1, rebal_freq, n_assets))
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
            window[:] = 0.0
            window[0, :held] = data[t : t + held]
            weights = hold(target, window)[2][0]
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
