"""SB3's ``MlpPolicy`` worked out in numpy: its forward pass, and PPO's loss with its gradients.

:class:`NumpyPolicy` reads an ``ActorCriticPolicy`` of ``Linear``/``Tanh`` towers with a
diagonal Gaussian as numpy arrays: the trained parameters as views of
:class:`~alphaloop.rl_engine.numpy_adam.NumpyAdam`'s flat buffer (where their gradients go too),
a frozen one as a view of its tensor. The backward pass is the closed-form derivatives of the
tanh layers, the Gaussian's log-probability and the clipped objective, about 60 numpy calls a
minibatch where autograd makes about 240 torch calls. The tests check one minibatch's loss and
gradients against SB3's policy under autograd.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn
from torch.distributions import Normal

from alphaloop.rl_engine.numpy_adam import NumpyAdam

__all__ = ["QUIET", "NumpyPolicy"]

_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))  # as torch's Normal.log_prob spells it
_ENTROPY_CONST = 0.5 + 0.5 * math.log(2 * math.pi)  # as torch's Normal.entropy spells it
# A diverging policy overflows quietly, as torch's arithmetic does; the trainer's checks
# (a non-finite Gaussian, parameter or loss) report it as a divergence.
QUIET = {"over": "ignore", "invalid": "ignore", "divide": "ignore", "under": "ignore"}


def _check_gaussian(mean: np.ndarray, std: np.ndarray) -> None:
    """Raises torch's own ``Normal`` error (which the trainer reads as a divergence) when the
    action distribution's mean or scale is not finite, or the scale not positive."""
    if not (np.isfinite(mean).all() and np.isfinite(std).all() and (std > 0).all()):
        Normal(torch.from_numpy(mean), torch.from_numpy(np.broadcast_to(std, mean.shape).copy()))
        raise ValueError("invalid action distribution: non-finite mean or scale")


def _arrays(param: torch.Tensor, adam: NumpyAdam) -> tuple[np.ndarray, np.ndarray | None]:
    """A parameter's value, and where its gradient goes (None when it is not trained)."""
    slot = adam.slot(param)
    if slot is None:
        return param.detach().numpy(), None
    return slot


class _Layer:
    """One ``Linear``: its weight and bias as numpy arrays, and where their gradients go."""

    def __init__(self, linear: nn.Linear, adam: NumpyAdam) -> None:
        self.w, self.gw = _arrays(linear.weight, adam)
        self.b, self.gb = _arrays(linear.bias, adam)

    def forward(self, x: np.ndarray) -> np.ndarray:
        # W x^T rather than x W^T: the same numbers (the BLAS packs both alike), and about half
        # the time for the few rows of a rollout step when W is wide (8,400 inputs at 400
        # assets), as W is then read row by row.
        out = np.ascontiguousarray((self.w @ x.T).T)
        out += self.b
        return out

    def backward(self, x: np.ndarray, dout: np.ndarray) -> None:
        """Writes the layer's gradients for input ``x`` and output gradient ``dout``."""
        if self.gw is not None and self.gb is not None:
            np.matmul(dout.T, x, out=self.gw)
            np.sum(dout, axis=0, out=self.gb)


class _Tower:
    """A tanh MLP (``Linear`` then ``Tanh``, repeated) with its hand-written backward pass."""

    def __init__(self, net: nn.Sequential, adam: NumpyAdam) -> None:
        self.layers = [_Layer(layer, adam) for layer in list(net)[0::2]]

    def forward(self, x: np.ndarray) -> list[np.ndarray]:
        """The input and every layer's output (the last is the latent)."""
        outs = [x]
        for layer in self.layers:
            outs.append(np.tanh(layer.forward(outs[-1])))
        return outs

    def backward(self, outs: list[np.ndarray], dlatent: np.ndarray) -> None:
        grad = dlatent
        for i in range(len(self.layers) - 1, -1, -1):
            h = outs[i + 1]
            dz = grad * (1 - h * h)
            self.layers[i].backward(outs[i], dz)
            if i:
                grad = dz @ self.layers[i].w


class NumpyPolicy:
    """An ``ActorCriticPolicy``'s arrays, its forward pass, and PPO's loss with its gradients
    written into ``adam``'s flat gradient."""

    def __init__(self, policy: ActorCriticPolicy, adam: NumpyAdam) -> None:
        extractor = policy.mlp_extractor
        self.pi = _Tower(extractor.policy_net, adam)
        self.vf = _Tower(extractor.value_net, adam)
        self.action = _Layer(policy.action_net, adam)
        self.value = _Layer(policy.value_net, adam)
        self.log_std, self.g_log_std = _arrays(policy.log_std, adam)

    def act(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sampled actions, values (a column) and log-probabilities for a batch of
        observations, as SB3's ``policy(obs)`` returns them."""
        x = obs.astype(np.float32, copy=False).reshape(len(obs), -1)
        with np.errstate(**QUIET):
            mean = self.action.forward(self.pi.forward(x)[-1])
            values = self.value.forward(self.vf.forward(x)[-1])
            std = np.exp(self.log_std)
        _check_gaussian(mean, std)
        # Drawn as SB3 draws them: torch.normal on the full loc and scale, from torch's
        # generator, so a run's early rollouts follow SB3's to float32 rounding.
        scale = np.ones_like(mean) * std
        actions = torch.normal(torch.from_numpy(mean), torch.from_numpy(scale)).numpy()
        with np.errstate(**QUIET):
            log_prob = self._log_prob(mean, std, actions)[0]
        return actions, values, log_prob

    def _log_prob(
        self, mean: np.ndarray, std: np.ndarray, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``Normal(mean, std).log_prob(actions)`` summed over the action dimensions, with the
        pieces its gradients reuse: ``actions - mean`` and ``(actions - mean)**2 / (2 var)``."""
        diff = actions - mean
        half_z2 = diff * diff / (2 * (std * std))
        log_prob = -half_z2.sum(axis=1) - (self.log_std.sum() + _LOG_SQRT_2PI * std.size)
        return log_prob, diff, half_z2

    def values(self, obs: np.ndarray) -> np.ndarray:
        """``policy.predict_values(obs)``."""
        x = obs.astype(np.float32, copy=False).reshape(len(obs), -1)
        with np.errstate(**QUIET):
            return self.value.forward(self.vf.forward(x)[-1])

    def loss_and_grads(
        self, batch: tuple[np.ndarray, ...], clip_range: float, coefs: tuple[float, float, bool]
    ) -> tuple[float, ...]:
        """PPO's loss on one minibatch, its gradients written into the optimizer's flat
        gradient.

        ``batch`` is ``(observations, actions, old log-probabilities, advantages, returns)``
        and ``coefs`` is ``(ent_coef, vf_coef, normalize_advantage)``. Returns the total loss
        and SB3's per-minibatch log entries: policy-gradient loss, clip fraction, value loss,
        entropy loss and approximate KL.
        """
        obs, actions, old_log_prob, advantages, returns = batch
        ent_coef, vf_coef, normalize = coefs
        n = len(obs)
        pi_outs, vf_outs = self.pi.forward(obs), self.vf.forward(obs)
        mean = self.action.forward(pi_outs[-1])
        values = self.value.forward(vf_outs[-1])[:, 0]
        std = np.exp(self.log_std)
        _check_gaussian(mean, std)
        log_prob, diff, half_z2 = self._log_prob(mean, std, actions)
        if normalize and n > 1:
            advantages = (advantages - advantages.mean()) / (advantages.std(ddof=1) + 1e-8)
        log_ratio = log_prob - old_log_prob
        ratio = np.exp(log_ratio)
        surrogate = advantages * ratio
        clipped = advantages * np.clip(ratio, 1 - clip_range, 1 + clip_range)
        policy_loss = -float(np.minimum(surrogate, clipped).mean())
        value_error = values - returns
        value_loss = float((value_error * value_error).mean())
        entropy_loss = -float((_ENTROPY_CONST + self.log_std).sum())
        # d loss / d log_prob: min() passes the gradient through the unclipped surrogate where
        # it is the smaller (both sides, half each, where they tie inside the clip range).
        d_log_prob = -(advantages * (surrogate <= clipped)) * ratio / n
        d_mean = d_log_prob[:, None] * diff / (std * std)
        if self.g_log_std is not None:
            # log N = -(a - m)^2 / (2 exp(2 s)) - s - c: d/ds = 2 half_z2 - 1; entropy: d/ds = 1.
            np.sum(d_log_prob[:, None] * (2 * half_z2 - 1), axis=0, out=self.g_log_std)
            self.g_log_std -= ent_coef
        self.action.backward(pi_outs[-1], d_mean)
        self.pi.backward(pi_outs, d_mean @ self.action.w)
        d_values = (vf_coef * 2 / n) * value_error
        self.value.backward(vf_outs[-1], d_values[:, None])
        self.vf.backward(vf_outs, d_values[:, None] * self.value.w)
        loss = policy_loss + ent_coef * entropy_loss + vf_coef * value_loss
        clip_fraction = float((np.abs(ratio - 1) > clip_range).mean())
        approx_kl = float(((ratio - 1) - log_ratio).mean())
        return loss, policy_loss, clip_fraction, value_loss, entropy_loss, approx_kl
