"""PPO on the batched portfolio env: build it and train it with a live curve.

Knob names are passed straight to ``stable_baselines3.PPO``. A trial trains for a fixed env-step
budget (a session setting, not a knob), fitted to whole rollouts by
:func:`~alphaloop.rl_engine.rollouts.rollout_plan`. How advantages are estimated (SB3's GAE, or
the critic-free GRPO and REINFORCE++ of :mod:`~alphaloop.rl_engine.advantages`) and whether a
drawdown ends an episode are session settings too. The walk-forward weights and saving and
loading of a trained policy live in :mod:`~alphaloop.rl_engine.policy` (also importable here).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.utils import set_random_seed
from stable_baselines3.common.vec_env import VecEnv

from alphaloop.exceptions import TrialCrashed
from alphaloop.knobs import TrialConfig
from alphaloop.rl_engine.advantages import ADVANTAGE_ESTIMATORS, AdvantageEstimator
from alphaloop.rl_engine.defaults import DEFAULT_N_ENVS, DEFAULT_TOTAL_TIMESTEPS
from alphaloop.rl_engine.numpy_ppo import NumpyPPO
from alphaloop.rl_engine.policy import load_policy, policy_weights, save_policy
from alphaloop.rl_engine.rollouts import CriticFreeRolloutBuffer, learn_plan, rollout_plan
from alphaloop.rl_engine.threads import TRIAL_THREADS, trial_threads
from alphaloop.rl_engine.vec_env import BatchedPortfolioVecEnv

__all__ = [
    "DEFAULT_N_ENVS",
    "DEFAULT_TOTAL_TIMESTEPS",
    "TrainResult",
    "load_policy",
    "make_ppo",
    "policy_weights",
    "rollout_plan",
    "save_policy",
    "train_ppo",
]

# The class that trains: the policy SB3's PPO trains, to float32 rounding, in about a third of
# its time. SB3's own PPO is the reference: the tests and ``benchmarks/bench_trials.py`` put it
# here to compare the two.
PPO_CLASS: type[PPO] = NumpyPPO

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


def make_ppo(
    config: TrialConfig, vec_env: VecEnv, seed: int, advantage: AdvantageEstimator = "gae"
) -> PPO:
    """A CPU ``PPO("MlpPolicy")`` on ``vec_env`` with the PPO knobs of ``config``.

    With ``advantage="gae"`` this is SB3's PPO as it comes. ``grpo`` and ``reinforce_pp`` have
    no critic: the rollout buffer computes their advantages from rewards alone
    (:class:`~alphaloop.rl_engine.rollouts.CriticFreeRolloutBuffer`), the value loss is off
    (``vf_coef=0``) and the value head is zeroed and frozen, so SB3's time-limit bootstrap adds
    nothing to a truncated step. Their advantages are already normalised (per group, or over
    the batch), so PPO's per-minibatch normalisation is off too. ``gae_lambda`` is then unused,
    and ``gamma`` only discounts REINFORCE++'s returns-to-go.

    Args:
        config: the trial's knobs; only the ppo group is read here.
        vec_env: the training environments.
        seed: seeds torch, numpy, the action space and the env.
        advantage: ``gae``, ``grpo`` or ``reinforce_pp``.

    Raises:
        ValueError: an unknown estimator.
    """
    if advantage not in ADVANTAGE_ESTIMATORS:
        raise ValueError(
            f"unknown advantage estimator {advantage!r}; choose one of "
            f"{', '.join(ADVANTAGE_ESTIMATORS)}"
        )
    with warnings.catch_warnings():
        # SB3 warns when batch_size does not divide n_steps * n_envs (the last minibatch of an
        # epoch is then smaller). The knobs allow any pair on purpose; in a long session the
        # warning would only repeat on stderr.
        warnings.filterwarnings("ignore", message="You have specified a mini-batch size")
        model = _ppo(config, vec_env, seed, advantage)
    if advantage != "gae":
        value_head = model.policy.value_net
        with torch.no_grad():
            for parameter in value_head.parameters():
                parameter.zero_()
        value_head.requires_grad_(False)
    return model


def _ppo(config: TrialConfig, vec_env: VecEnv, seed: int, advantage: AdvantageEstimator) -> PPO:
    critic_free: dict = {}
    if advantage != "gae":
        critic_free = {
            "vf_coef": 0.0,
            "normalize_advantage": False,
            "rollout_buffer_class": CriticFreeRolloutBuffer,
            "rollout_buffer_kwargs": {"advantage": advantage},
        }
    model = PPO_CLASS(
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
        **critic_free,
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
    *,
    truncate_drawdown: float | None = None,
    stop_properly: float = 1.0,
    advantage: AdvantageEstimator = "gae",
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
        truncate_drawdown: drawdown from an episode's peak that ends it (None: never).
        stop_properly: how much of a truncated episode's reward it keeps (see ``PortfolioEnv``).
        advantage: the advantage estimator (see :func:`make_ppo`).

    Returns:
        The trained model, env steps trained, seconds taken, the reward curve and the rollouts.

    Raises:
        TrialCrashed: non-finite policy parameters or losses ("policy diverged: ...").
        ValueError: unusable data or budget.
    """
    if isinstance(total_timesteps, bool) or int(total_timesteps) < 1:
        raise ValueError(f"total_timesteps must be a positive integer, got {total_timesteps!r}")
    plan = rollout_plan(int(total_timesteps), config.n_steps, n_envs)
    with trial_threads(TRIAL_THREADS):
        set_random_seed(seed)
        env = _batched_env(returns_train, config, n_envs, truncate_drawdown, stop_properly)
        # model_copy skips validation on purpose: a rollout may be shorter than the knob's bound.
        model = make_ppo(config.model_copy(update={"n_steps": plan[0][0]}), env, seed, advantage)
        monitor = _TrainingMonitor(on_update, math.ceil(config.episode_len / config.rebal_freq))
        seconds = _learn(model, plan, monitor)
    return TrainResult(
        model=model,
        timesteps=int(model.num_timesteps),
        seconds=seconds,
        curve=monitor.curve,
        rollouts=plan,
    )


def _batched_env(
    returns_train: np.ndarray,
    config: TrialConfig,
    n_envs: int,
    truncate_drawdown: float | None,
    stop_properly: float,
) -> BatchedPortfolioVecEnv:
    """The training envs with the env knobs of ``config``."""
    return BatchedPortfolioVecEnv(
        returns_train,
        n_envs=n_envs,
        lookback=config.lookback,
        episode_len=config.episode_len,
        rebal_freq=config.rebal_freq,
        turnover_cost_bps=config.turnover_cost_bps,
        vol_penalty=config.vol_penalty,
        truncate_drawdown=truncate_drawdown,
        stop_properly=stop_properly,
    )


def _learn(model: PPO, plan: list[tuple[int, int]], monitor: _TrainingMonitor) -> float:
    """Trains ``model`` through ``plan`` and checks the result; returns the seconds it took.

    Raises:
        TrialCrashed: the policy diverged, during the run or at its end.
    """
    began = time.perf_counter()
    try:
        learn_plan(model, plan, monitor)
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
    return time.perf_counter() - began
