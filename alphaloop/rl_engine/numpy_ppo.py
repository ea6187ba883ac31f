"""PPO's two loops with the policy's forward pass and gradients worked out by hand in numpy.

:class:`~alphaloop.rl_engine.lean.LeanPPO` reproduces SB3 bit for bit, and so keeps every one
of autograd's ~240 torch calls per minibatch step; at two 64x64 MLPs on minibatches of 64 each
call costs more in dispatch than in arithmetic. :class:`NumpyPPO` trains the same policy with
the same algorithm, step for step: the same rollouts of the same length, the same clipped
surrogate, value loss, entropy bonus, per-minibatch advantage normalisation, gradient clipping
and Adam, the same minibatch order drawn from numpy's global generator. Only the arithmetic is
written out: the backward pass of the two tanh MLPs, the Gaussian's log-probability and the
clipped objective by their closed-form derivatives, in about 60 numpy calls a step, on the very
memory of the torch parameters and of Adam's moments (so saving, loading and the walk-forward
read the trained policy as before).

The numbers are float32 as torch's, rounded in another order: a run is not SB3's bit for bit,
but it is deterministic at a fixed seed (the same seed gives the same policy, bit for bit). The
tests check one minibatch's gradients against autograd, a step against torch's Adam, and a
short run against SB3's: actions are drawn from torch's generator as SB3 draws them, so the two
runs part only by rounding.

Anything :func:`~alphaloop.rl_engine.lean.lean_supported` refuses, or a network that is not
Linear and Tanh layers, runs LeanPPO's loops (and so SB3's arithmetic).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn
from torch.distributions import Normal

from alphaloop.rl_engine.lean import (
    _ENTROPY_CONST,
    _LOG_SQRT_2PI,
    LeanPPO,
    RolloutPolicy,
    _FlatAdam,
    flatten_buffer,
    lean_supported,
)

__all__ = ["NumpyPPO", "numpy_supported"]

# A diverging policy overflows quietly, as torch's arithmetic does; the trainer's checks
# (a non-finite Gaussian, parameter or loss) report it as a divergence.
_QUIET = {"over": "ignore", "invalid": "ignore", "divide": "ignore", "under": "ignore"}


def numpy_supported(model: LeanPPO) -> bool:
    """Whether ``model`` is a setup the numpy loops train: LeanPPO's, on the CPU in float32,
    with hidden layers of ``Linear`` (with a bias) then ``Tanh``."""
    if not lean_supported(model) or model.device.type != "cpu":
        return False
    policy = model.policy
    if any(p.dtype != torch.float32 for p in policy.parameters()):
        return False
    heads = (policy.action_net, policy.value_net)
    return all(head.bias is not None for head in heads) and all(
        _is_tanh_mlp(net)
        for net in (policy.mlp_extractor.policy_net, policy.mlp_extractor.value_net)
    )


def _is_tanh_mlp(net: nn.Sequential) -> bool:
    layers = list(net)
    return (
        len(layers) % 2 == 0
        and all(type(layer) is nn.Linear and layer.bias is not None for layer in layers[0::2])
        and all(type(layer) is nn.Tanh for layer in layers[1::2])
    )


def _check_gaussian(mean: np.ndarray, std: np.ndarray) -> None:
    """Raises torch's own ``Normal`` error (which the trainer reads as a divergence) when the
    action distribution's mean or scale is not finite, or the scale not positive."""
    if not (np.isfinite(mean).all() and np.isfinite(std).all() and (std > 0).all()):
        Normal(torch.from_numpy(mean), torch.from_numpy(np.broadcast_to(std, mean.shape).copy()))
        raise ValueError("invalid action distribution: non-finite mean or scale")


class _Layer:
    """One ``Linear``: its weight and bias as numpy views, and where their gradients go (None
    for a frozen layer)."""

    def __init__(self, linear: nn.Linear, grads: dict[int, np.ndarray]) -> None:
        self.w = linear.weight.detach().numpy()
        self.b = linear.bias.detach().numpy()
        self.gw = grads.get(id(linear.weight))
        self.gb = grads.get(id(linear.bias))

    def forward(self, x: np.ndarray) -> np.ndarray:
        out = x @ self.w.T
        out += self.b
        return out

    def backward(self, x: np.ndarray, dout: np.ndarray) -> None:
        """Writes the layer's gradients for input ``x`` and output gradient ``dout``."""
        if self.gw is not None:
            np.matmul(dout.T, x, out=self.gw)
            np.sum(dout, axis=0, out=self.gb)


class _Tower:
    """A tanh MLP (``Linear`` then ``Tanh``, repeated) with its hand-written backward pass."""

    def __init__(self, net: nn.Sequential, grads: dict[int, np.ndarray]) -> None:
        self.layers = [_Layer(layer, grads) for layer in list(net)[0::2]]

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


class _NumpyPolicy:
    """An ``ActorCriticPolicy``'s arrays as numpy views of its torch parameters, the policy's
    forward pass, and PPO's loss with its gradients, written into the flat gradient buffer laid
    out as :class:`~alphaloop.rl_engine.lean._FlatAdam`'s parameters."""

    def __init__(self, policy: ActorCriticPolicy, adam: _FlatAdam) -> None:
        self.grad = np.zeros(adam.flat.numel(), dtype=np.float32)
        grads = {
            id(p): self.grad[sl].reshape(p.shape)
            for p, sl in zip(adam.params, adam.slices, strict=True)
        }
        extractor = policy.mlp_extractor
        self.pi = _Tower(extractor.policy_net, grads)
        self.vf = _Tower(extractor.value_net, grads)
        self.action = _Layer(policy.action_net, grads)
        self.value = _Layer(policy.value_net, grads)
        self.log_std = policy.log_std.detach().numpy()
        self.g_log_std = grads.get(id(policy.log_std))

    def step(self, obs: np.ndarray) -> tuple[np.ndarray, torch.Tensor, torch.Tensor]:
        """Sampled actions, values and log-probabilities for a batch of observations (the
        rollout loop's call, :class:`~alphaloop.rl_engine.lean.RolloutPolicy`)."""
        x = obs.astype(np.float32, copy=False).reshape(len(obs), -1)
        with np.errstate(**_QUIET):
            mean = self.action.forward(self.pi.forward(x)[-1])
            values = self.value.forward(self.vf.forward(x)[-1])
            std = np.exp(self.log_std)
        _check_gaussian(mean, std)
        # Drawn as SB3 draws them: torch.normal on the full loc and scale, from torch's
        # generator, so a run's early rollouts follow SB3's to float32 rounding.
        scale = np.ones_like(mean) * std
        actions = torch.normal(torch.from_numpy(mean), torch.from_numpy(scale)).numpy()
        with np.errstate(**_QUIET):
            log_prob = self._log_prob(mean, std, actions)[0]
        return actions, torch.from_numpy(values), torch.from_numpy(log_prob)

    def _log_prob(
        self, mean: np.ndarray, std: np.ndarray, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``Normal(mean, std).log_prob(actions)`` summed over the action dimensions, with the
        pieces its gradients reuse: ``actions - mean`` and ``(actions - mean)**2 / (2 var)``."""
        diff = actions - mean
        half_z2 = diff * diff / (2 * (std * std))
        log_prob = -half_z2.sum(axis=1) - (self.log_std.sum() + _LOG_SQRT_2PI * std.size)
        return log_prob, diff, half_z2

    def last_values(self, obs: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(self._values(obs))

    def terminal_value(self, last: np.ndarray) -> Any:
        return self._values(last)[0, 0]

    def _values(self, obs: np.ndarray) -> np.ndarray:
        x = obs.astype(np.float32, copy=False).reshape(len(obs), -1)
        with np.errstate(**_QUIET):
            return self.value.forward(self.vf.forward(x)[-1])

    def loss_and_grads(
        self, batch: tuple[np.ndarray, ...], clip_range: float, coefs: tuple[float, float, bool]
    ) -> tuple[float, ...]:
        """PPO's loss on one minibatch, its gradients written into :attr:`grad`.

        ``coefs`` is ``(ent_coef, vf_coef, normalize_advantage)``. Returns the total loss and
        SB3's per-minibatch log entries: policy-gradient loss, clip fraction, value loss,
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


class _NumpyAdam:
    """``clip_grad_norm_`` and torch's Adam on :class:`~alphaloop.rl_engine.lean._FlatAdam`'s
    buffers, as numpy views: the optimizer's state (its moments and step counts) stays the
    one torch saves and loads."""

    def __init__(self, adam: _FlatAdam) -> None:
        self.adam = adam
        self.flat = adam.flat.numpy()
        self.exp_avg = adam.exp_avg.numpy()
        self.exp_avg_sq = adam.exp_avg_sq.numpy()
        self._scratch = np.empty_like(self.flat)

    def step(self, grad: np.ndarray, max_grad_norm: float) -> None:
        group = self.adam.optimizer.param_groups[0]
        lr, eps = group["lr"], group["eps"]
        beta1, beta2 = group["betas"]
        total_norm = math.sqrt(float(np.dot(grad, grad)))
        grad *= np.float32(min(max_grad_norm / (total_norm + 1e-6), 1.0))
        self.adam.steps += 1
        count = float(self.adam.steps[0])
        bias_correction1 = 1 - beta1**count
        bias_correction2 = 1 - beta2**count
        # exp_avg.lerp_(grad, 1 - beta1); exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2)
        scratch = self._scratch
        np.subtract(grad, self.exp_avg, out=scratch)
        scratch *= np.float32(1 - beta1)
        self.exp_avg += scratch
        self.exp_avg_sq *= np.float32(beta2)
        np.multiply(grad, grad, out=scratch)
        scratch *= np.float32(1 - beta2)
        self.exp_avg_sq += scratch
        # param -= lr / bc1 * exp_avg / (sqrt(exp_avg_sq) / sqrt(bc2) + eps)
        np.sqrt(self.exp_avg_sq, out=scratch)
        scratch *= np.float32(1 / bias_correction2**0.5)
        scratch += np.float32(eps)
        np.divide(self.exp_avg, scratch, out=scratch)
        scratch *= np.float32(lr / bias_correction1)
        self.flat -= scratch


class _NumpyMinibatches:
    """The rollout buffer's samples as numpy arrays, minibatches drawn as SB3's buffer draws
    them (one permutation of numpy's global generator per epoch)."""

    def __init__(self, buffer: RolloutBuffer) -> None:
        flatten_buffer(buffer)
        self.size = buffer.buffer_size * buffer.n_envs
        self.columns = [
            buffer.observations.reshape(self.size, -1),
            buffer.actions.astype(np.float32, copy=False).reshape(self.size, -1),
            *(buffer.__dict__[name].reshape(-1) for name in ("log_probs", "advantages", "returns")),
        ]

    def epoch(self, batch_size: int) -> list[tuple[np.ndarray, ...]]:
        order = np.random.permutation(self.size)
        return [
            tuple(column[order[start : start + batch_size]] for column in self.columns)
            for start in range(0, self.size, batch_size)
        ]


class NumpyPPO(LeanPPO):
    """``stable_baselines3.PPO`` whose rollouts and updates run in numpy (see the module
    docstring). Same constructor, same saved files; deterministic at a fixed seed."""

    def _numpy_parts(self) -> tuple[_NumpyPolicy, _NumpyAdam] | None:
        """The policy and optimizer as numpy views, made once per optimizer layout (None: the
        setup is not one the numpy loops train)."""
        if not numpy_supported(self):
            return None
        adam = self._flat_adam_ready()
        if adam is None:
            return None
        parts: tuple[_NumpyPolicy, _NumpyAdam] | None = getattr(self, "_numpy", None)
        if parts is None or parts[1].adam is not adam:
            parts = self._numpy = (_NumpyPolicy(self.policy, adam), _NumpyAdam(adam))
        return parts

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_numpy"]

    def _rollout_policy(self) -> RolloutPolicy:
        """The policy run in numpy (LeanPPO's torch calls for a setup it does not cover)."""
        parts = self._numpy_parts()
        return super()._rollout_policy() if parts is None else parts[0]

    def train(self) -> None:
        """SB3's ``PPO.train`` (no value clipping, no KL target), each minibatch step in numpy."""
        parts = self._numpy_parts()
        if parts is None:
            super().train()
            return
        net, adam = parts
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        clip_range = self.clip_range(self._current_progress_remaining)
        coefs = (float(self.ent_coef), float(self.vf_coef), bool(self.normalize_advantage))
        minibatches = _NumpyMinibatches(self.rollout_buffer)
        logs: dict[str, list] = {"entropy": [], "pg": [], "value": [], "clip": [], "kl": []}
        loss = None
        for _ in range(self.n_epochs):
            logs["kl"] = []
            for batch in minibatches.epoch(self.batch_size):
                with np.errstate(**_QUIET):
                    loss, pg, clip, value, entropy, kl = net.loss_and_grads(
                        batch, clip_range, coefs
                    )
                    adam.step(net.grad, self.max_grad_norm)
                for key, entry in zip(logs, (entropy, pg, value, clip, kl), strict=True):
                    logs[key].append(entry)
            self._n_updates += 1
        self._record_update(logs, loss, clip_range)
