"""The PPO trainer: stable-baselines3's PPO with its two loops run in numpy.

A default trial takes 2 x 1,280 minibatch updates of two 64x64 tanh MLPs and 4,096 policy
steps. At that size each torch call costs more in dispatch than in arithmetic, and autograd
makes about 240 of them per minibatch. :class:`NumpyPPO` is ``stable_baselines3.PPO`` with
``collect_rollouts`` and ``train``, the two methods an on-policy algorithm of SB3's defines,
written out for the one setup the trials build (an ``MlpPolicy`` of ``Linear``/``Tanh`` layers
with a diagonal Gaussian, Adam, no value clipping, no KL target, on the CPU in float32). It keeps
SB3's algorithm step for step: the same rollouts, clipped surrogate, value loss, entropy bonus,
per-minibatch advantage normalisation, gradient clipping and Adam, the same minibatch order
drawn from numpy's global generator, and actions drawn from torch's generator as SB3 draws them.
Only the arithmetic is written out: the policy's forward and backward passes
(:mod:`~alphaloop.rl_engine.numpy_policy`), Adam (:mod:`~alphaloop.rl_engine.numpy_adam`) and
the rollout buffer (:mod:`~alphaloop.rl_engine.numpy_buffer`), each its own, reached through
SB3's public options (``policy_kwargs``' ``optimizer_class``, ``rollout_buffer_class``). The
torch policy stays the model's: the loops copy its parameters in when they start and back when
they end, so saving, loading and the walk-forward read the trained policy through SB3 as before,
and a saved file is SB3's own zip, which loads with torch's Adam.

The numbers are float32 as torch's, rounded in another order: a run is SB3's to rounding, not
bit for bit, and is deterministic at a fixed seed. SB3's ``PPO`` is the reference: the tests
check one minibatch's loss and gradients against SB3's policy under autograd, an Adam step
against torch's, the buffer's GAE and minibatches against SB3's buffer, and whole training runs
against SB3's. A setup outside the one above is refused with a ``ValueError``: SB3's own
``PPO`` trains those.
"""

from __future__ import annotations

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.distributions import DiagGaussianDistribution
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import FlattenExtractor, MlpExtractor
from stable_baselines3.common.utils import explained_variance
from stable_baselines3.common.vec_env import VecEnv
from torch import nn

from alphaloop.rl_engine.numpy_adam import NumpyAdam
from alphaloop.rl_engine.numpy_buffer import NumpyRolloutBuffer
from alphaloop.rl_engine.numpy_policy import QUIET, NumpyPolicy

__all__ = ["NumpyPPO", "unsupported"]

_SB3_ADAM_EPS = 1e-5  # the epsilon SB3's policies give torch's Adam when not told otherwise


def unsupported(model: PPO) -> list[str]:
    """What in ``model``'s setup the numpy loops do not train (empty: they train all of it)."""
    policy, problems = model.policy, []
    if type(policy) is not ActorCriticPolicy or not policy.share_features_extractor:
        return ["a policy other than SB3's MlpPolicy with one shared features extractor"]
    if not isinstance(policy.action_dist, DiagGaussianDistribution) or model.use_sde:
        problems.append("an action distribution other than a diagonal Gaussian (or gSDE)")
    if policy.squash_output or not isinstance(model.action_space, spaces.Box):
        problems.append("an action space other than an unsquashed Box")
    obs = model.observation_space
    if not isinstance(obs, spaces.Box) or len(obs.shape) != 1:
        problems.append("an observation space other than a flat Box")
    if type(policy.features_extractor) is not FlattenExtractor:
        problems.append("a features extractor other than Flatten")
    towers = (policy.mlp_extractor.policy_net, policy.mlp_extractor.value_net)
    heads = (policy.action_net, policy.value_net)
    if type(policy.mlp_extractor) is not MlpExtractor or not all(map(_is_tanh_mlp, towers)):
        problems.append("hidden layers other than Linear (with a bias) then Tanh")
    if not all(type(head) is nn.Linear and head.bias is not None for head in heads):
        problems.append("output heads other than Linear layers with a bias")
    if model.clip_range_vf is not None or model.target_kl is not None:
        problems.append("a value clip range or a KL target")
    if model.device.type != "cpu" or any(p.dtype != torch.float32 for p in policy.parameters()):
        problems.append("a device other than the CPU or parameters other than float32")
    if not isinstance(policy.optimizer, NumpyAdam):
        problems.append("an optimizer other than Adam")
    if not isinstance(model.rollout_buffer, NumpyRolloutBuffer):
        problems.append("a rollout buffer class other than NumpyRolloutBuffer")
    return problems


def _is_tanh_mlp(net: nn.Sequential) -> bool:
    layers = list(net)
    return (
        len(layers) % 2 == 0
        and all(type(layer) is nn.Linear and layer.bias is not None for layer in layers[0::2])
        and all(type(layer) is nn.Tanh for layer in layers[1::2])
    )


class NumpyPPO(PPO):
    """``stable_baselines3.PPO`` whose rollouts and updates run in numpy (see the module
    docstring). Same constructor, same saved files; deterministic at a fixed seed.

    Raises:
        ValueError: a setup the numpy loops do not train (see :func:`unsupported`).
    """

    def _setup_model(self) -> None:
        """SB3's setup, with :class:`NumpyAdam` where SB3 would build torch's Adam and
        :class:`NumpyRolloutBuffer` where it would build its own buffer. ``policy_kwargs``,
        which saved files record, stays as given: a saved model loads with torch's Adam."""
        given = self.policy_kwargs
        if given.get("optimizer_class", torch.optim.Adam) is torch.optim.Adam:
            options = given.get("optimizer_kwargs")
            if options is None:  # as SB3's policies do for torch's Adam (only)
                options = {"eps": _SB3_ADAM_EPS}
            self.policy_kwargs = {
                **given,
                "optimizer_class": NumpyAdam,
                "optimizer_kwargs": options,
            }
        # SB3 records its own buffer's class in what it saves; a file it saved loads with ours.
        if self.rollout_buffer_class in (None, RolloutBuffer):
            self.rollout_buffer_class = NumpyRolloutBuffer
        try:
            super()._setup_model()
        finally:
            self.policy_kwargs = given
        self._refuse_unsupported()

    def _refuse_unsupported(self) -> None:
        problems = unsupported(self)
        if problems:
            raise ValueError(
                "NumpyPPO trains SB3's MlpPolicy (tanh layers, diagonal Gaussian, Adam) on the "
                f"CPU in float32; this model has {'; '.join(problems)}. Train it with "
                "stable_baselines3.PPO instead."
            )

    def _numpy_parts(self) -> tuple[NumpyPolicy, NumpyAdam]:
        """The policy as numpy arrays and its optimizer, the parameters copied in from the
        torch policy (whatever changed them since: a load, a frozen layer).

        Raises:
            ValueError: a setup the numpy loops do not train.
        """
        self._refuse_unsupported()
        adam = self.policy.optimizer
        adam.pull()
        return NumpyPolicy(self.policy, adam), adam

    def collect_rollouts(
        self,
        env: VecEnv,
        callback: BaseCallback,
        rollout_buffer: NumpyRolloutBuffer,
        n_rollout_steps: int,
    ) -> bool:
        """SB3's ``collect_rollouts`` with the policy's forward pass in numpy."""
        policy = self._numpy_parts()[0]
        self.policy.set_training_mode(False)
        n_steps = 0
        rollout_buffer.reset()
        callback.on_rollout_start()
        low, high = self.action_space.low, self.action_space.high
        while n_steps < n_rollout_steps:
            actions, values, log_probs = policy.act(self._last_obs)
            clipped_actions = np.clip(actions, low, high)
            new_obs, rewards, dones, infos = env.step(clipped_actions)
            self.num_timesteps += env.num_envs
            # Give the callback this step's locals (``rewards``, ``dones``), as SB3 does.
            callback.update_locals(locals())
            if not callback.on_step():
                return False
            self._update_info_buffer(infos, dones)
            n_steps += 1
            # SB3's time-limit bootstrap: a truncated step's reward gains gamma * V(last obs),
            # each value computed alone as SB3 does (a batch of one).
            for idx in np.flatnonzero(dones).tolist():
                info = infos[idx]
                if info.get("terminal_observation") is not None and info.get("TimeLimit.truncated"):
                    last = np.array(info["terminal_observation"]).reshape((1, -1))
                    rewards[idx] += self.gamma * policy.values(last)[0, 0]
            rollout_buffer.add(
                self._last_obs, actions, rewards, self._last_episode_starts, values, log_probs
            )
            self._last_obs = new_obs
            self._last_episode_starts = dones
        rollout_buffer.compute_returns_and_advantage(
            last_values=policy.values(new_obs), dones=dones
        )
        callback.update_locals(locals())
        callback.on_rollout_end()
        return True

    def train(self) -> None:
        """SB3's ``PPO.train`` (no value clipping, no KL target), each minibatch step in numpy;
        the trained parameters go back to the torch policy when it ends, or fails."""
        policy, adam = self._numpy_parts()
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        clip_range = self.clip_range(self._current_progress_remaining)
        coefs = (float(self.ent_coef), float(self.vf_coef), bool(self.normalize_advantage))
        entropy_losses, pg_losses, value_losses, clip_fractions = [], [], [], []
        approx_kl_divs: list[float] = []
        loss = None
        try:
            for _ in range(self.n_epochs):
                approx_kl_divs = []
                for (
                    obs,
                    actions,
                    _values,
                    log_probs,
                    advantages,
                    returns,
                ) in self.rollout_buffer.minibatches(self.batch_size):
                    with np.errstate(**QUIET):
                        loss, pg, clip, value, entropy, kl = policy.loss_and_grads(
                            (obs, actions, log_probs, advantages, returns), clip_range, coefs
                        )
                        adam.clip_and_step(self.max_grad_norm)
                    pg_losses.append(pg)
                    clip_fractions.append(clip)
                    value_losses.append(value)
                    entropy_losses.append(entropy)
                    approx_kl_divs.append(kl)
                self._n_updates += 1
        finally:
            adam.push()
        buffer = self.rollout_buffer
        explained_var = explained_variance(buffer.values.flatten(), buffer.returns.flatten())
        record = self.logger.record
        record("train/entropy_loss", np.mean(entropy_losses))
        record("train/policy_gradient_loss", np.mean(pg_losses))
        record("train/value_loss", np.mean(value_losses))
        record("train/approx_kl", np.mean(approx_kl_divs))
        record("train/clip_fraction", np.mean(clip_fractions))
        if loss is not None:
            record("train/loss", loss)
        record("train/explained_variance", explained_var)
        record("train/std", torch.exp(self.policy.log_std).mean().item())
        record("train/n_updates", self._n_updates, exclude="tensorboard")
        record("train/clip_range", clip_range)
