"""The PPO trainer: stable-baselines3's PPO with its two loops run in numpy.

A default trial takes 2 x 1,280 minibatch updates of two 64x64 tanh MLPs and 4,096 policy
steps. At that size each torch call costs more in dispatch than in arithmetic, and autograd
makes about 240 of them per minibatch. :class:`NumpyPPO` is ``stable_baselines3.PPO`` with
``collect_rollouts`` and ``train`` written out for the one setup the trials build (an
``MlpPolicy`` of ``Linear``/``Tanh`` layers with a diagonal Gaussian, torch's Adam, no value
clipping, no KL target, on the CPU in float32). It keeps SB3's algorithm step for step: the same
rollouts, clipped surrogate, value loss, entropy bonus, per-minibatch advantage normalisation,
gradient clipping and Adam, the same minibatch order drawn from numpy's global generator, and
actions drawn from torch's generator as SB3 draws them. Only the arithmetic is written out: the
policy's forward pass, and the backward pass by the closed-form derivatives of the tanh layers,
the Gaussian's log-probability and the clipped objective, in about 60 numpy calls a step, on the
very memory of the torch parameters and of Adam's moments. So saving, loading and the
walk-forward read the trained policy through SB3 as before: a saved file is SB3's own zip.

The numbers are float32 as torch's, rounded in another order: a run is SB3's to rounding, not
bit for bit, and is deterministic at a fixed seed. SB3's ``PPO`` is the reference: the tests
check one minibatch's loss and gradients against SB3's policy under autograd, an Adam step
against torch's, and whole training runs against SB3's. A default trial trains in about a third
of SB3's time (``benchmarks/bench_trials.py``).

The loops reproduce private parts of SB3 (``collect_rollouts``' bookkeeping, the rollout
buffer's layout, ``train``'s logged entries), so the package pins SB3 to the release they were
checked against (:data:`SB3_VERSION`; a test fails on any other). A setup outside the one above
is refused with a ``ValueError``: SB3's own ``PPO`` trains those.
"""

from __future__ import annotations

import math
from typing import Any

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
from torch.distributions import Normal

__all__ = ["SB3_VERSION", "EagerAdam", "NumpyPPO", "unsupported"]

# The stable-baselines3 release whose loops NumpyPPO reproduces; pyproject.toml pins it.
SB3_VERSION = "2.9.2"

_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))  # as torch's Normal.log_prob spells it
_ENTROPY_CONST = 0.5 + 0.5 * math.log(2 * math.pi)  # as torch's Normal.entropy spells it
# torch's CPU allocator puts every tensor on a 64-byte boundary.
_ALIGN_BYTES = 64
_SB3_ADAM_EPS = 1e-5  # the epsilon SB3's policies give torch's Adam when not told otherwise
_BUFFER_FIELDS = ("observations", "actions", "values", "log_probs", "advantages", "returns")
# A diverging policy overflows quietly, as torch's arithmetic does; the trainer's checks
# (a non-finite Gaussian, parameter or loss) report it as a divergence.
_QUIET = {"over": "ignore", "invalid": "ignore", "divide": "ignore", "under": "ignore"}


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
    if not _FlatAdam.usable(policy.optimizer):
        problems.append("an optimizer other than SB3's Adam, all parameters at one step")
    return problems


def _is_tanh_mlp(net: nn.Sequential) -> bool:
    layers = list(net)
    return (
        len(layers) % 2 == 0
        and all(type(layer) is nn.Linear and layer.bias is not None for layer in layers[0::2])
        and all(type(layer) is nn.Tanh for layer in layers[1::2])
    )


def _undecorated(name: str) -> Any:
    """``torch.optim.Optimizer``'s method ``name`` without the ``_disable_dynamo`` wrapper
    torch puts around it (the wrapped method, should a torch release not say what it wraps)."""
    method = getattr(torch.optim.Optimizer, name)
    return getattr(method, "__wrapped__", method)


class EagerAdam(torch.optim.Adam):
    """torch's Adam whose bookkeeping (adding a parameter group, state dicts, zeroing the
    gradients) runs without the ``_disable_dynamo`` wrapper torch puts around it.

    The wrapper tells torch's compiler not to trace those methods, and imports the compiler
    (``torch._dynamo``, 1.6-2.1 s measured on torch 2.13) to say so, the first time one of them
    runs in a process. Nothing here is compiled, so :class:`NumpyPPO` builds the policy's
    optimizer as this class and a process that trains (a worker, a trial run from the command
    line) starts that much sooner. The methods are torch's own; should a torch release stop
    exposing what it wraps, they keep the wrapper and only the start-up time returns (a test
    watches for it)."""

    add_param_group = _undecorated("add_param_group")
    state_dict = _undecorated("state_dict")
    load_state_dict = _undecorated("load_state_dict")
    zero_grad = _undecorated("zero_grad")


def _plain_adam(optimizer: torch.optim.Optimizer) -> bool:
    """Adam as SB3 builds it: one group, no weight decay, amsgrad, maximize, fused step."""
    if type(optimizer) not in (torch.optim.Adam, EagerAdam) or len(optimizer.param_groups) != 1:
        return False
    group = optimizer.param_groups[0]
    return (
        group["weight_decay"] == 0
        and not group["amsgrad"]
        and not group["maximize"]
        and not group["capturable"]
        and not group["differentiable"]
        and not group["fused"]
        and not group["decoupled_weight_decay"]
        and isinstance(group["lr"], float)
        and all(isinstance(beta, float) for beta in group["betas"])
    )


class _FlatAdam:
    """Gradient clipping and torch's Adam on the trainable parameters laid end to end.

    The parameters and Adam's two moments become views of one buffer each, so a step is a
    handful of elementwise numpy calls on the whole buffer instead of each of them once per
    parameter. Each parameter starts on a 64-byte boundary, as torch's allocator places a
    tensor of its own: a matrix product may round differently on data aligned differently, so
    a parameter keeps the alignment it had. The padding between parameters is zero and stays
    zero. The optimizer's ``state`` holds views of the same buffers, so what SB3 saves and
    loads is what the numpy steps moved.
    """

    def __init__(self, optimizer: torch.optim.Adam) -> None:
        self.optimizer = optimizer
        self.params = [p for p in optimizer.param_groups[0]["params"] if p.requires_grad]
        align = max(1, _ALIGN_BYTES // self.params[0].element_size())
        starts, end = [], 0
        for p in self.params:
            starts.append(end)
            end += -(-p.numel() // align) * align
        self.slices = [slice(s, s + p.numel()) for s, p in zip(starts, self.params, strict=True)]
        states = [optimizer.state.get(p) or {} for p in self.params]
        flat = self._lay_out([p.detach() for p in self.params], end)
        exp_avg = self._lay_out([s.get("exp_avg") for s in states], end)
        exp_avg_sq = self._lay_out([s.get("exp_avg_sq") for s in states], end)
        self.steps = (
            torch.stack([s["step"] for s in states])
            if all(states)
            else torch.zeros(len(self.params), dtype=_scalar_dtype())
        )
        for i, (p, sl) in enumerate(zip(self.params, self.slices, strict=True)):
            p.data = flat[sl].view_as(p)
            optimizer.state[p] = {
                "step": self.steps[i],
                "exp_avg": exp_avg[sl].view_as(p),
                "exp_avg_sq": exp_avg_sq[sl].view_as(p),
            }
        self._torch = (flat, exp_avg)  # what intact() compares against
        self.flat = flat.numpy()
        self.exp_avg = exp_avg.numpy()
        self.exp_avg_sq = exp_avg_sq.numpy()
        self._scratch = np.empty_like(self.flat)

    def _lay_out(self, tensors: list[torch.Tensor | None], size: int) -> torch.Tensor:
        """One zero buffer with each tensor copied into its slice (a missing one stays zero)."""
        out = torch.zeros(size, dtype=self.params[0].dtype)
        for sl, tensor in zip(self.slices, tensors, strict=True):
            if tensor is not None:
                out[sl] = tensor.reshape(-1)
        return out

    @staticmethod
    def usable(optimizer: torch.optim.Optimizer) -> bool:
        """Whether ``optimizer`` is SB3's Adam with its trainable parameters' states all fresh
        or all at one step."""
        if not _plain_adam(optimizer):
            return False
        params = [p for p in optimizer.param_groups[0]["params"] if p.requires_grad]
        states = [optimizer.state.get(p) or {} for p in params]
        if not params or len({p.dtype for p in params}) != 1:
            return False
        if not any(states):
            return True
        return all(states) and len({float(s["step"]) for s in states}) == 1

    def intact(self) -> bool:
        """Whether the parameters and Adam's state are still the views made here (a load or a
        ``load_state_dict`` replaces them)."""
        flat, exp_avg = self._torch
        state = self.optimizer.state
        for p, sl in zip(self.params, self.slices, strict=True):
            moments = state.get(p, {}).get("exp_avg")
            if p.data_ptr() != flat[sl].data_ptr() or moments is None:
                return False
            if moments.data_ptr() != exp_avg[sl].data_ptr():
                return False
        return True

    def step(self, grad: np.ndarray, max_grad_norm: float) -> None:
        """``clip_grad_norm_`` then ``Adam.step`` (single-tensor path, every parameter at the
        same step count) with the flat gradient ``grad``."""
        group = self.optimizer.param_groups[0]
        lr, eps = group["lr"], group["eps"]
        beta1, beta2 = group["betas"]
        total_norm = math.sqrt(float(np.dot(grad, grad)))
        grad *= np.float32(min(max_grad_norm / (total_norm + 1e-6), 1.0))
        self.steps += 1
        count = float(self.steps[0])
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


def _scalar_dtype() -> torch.dtype:
    """The dtype of Adam's step counters (torch's ``_get_scalar_dtype``)."""
    return torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32


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
    out as :class:`_FlatAdam`'s parameters."""

    def __init__(self, policy: ActorCriticPolicy, adam: _FlatAdam) -> None:
        self.grad = np.zeros(adam.flat.size, dtype=np.float32)
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

    def act(self, obs: np.ndarray) -> tuple[np.ndarray, torch.Tensor, torch.Tensor]:
        """Sampled actions, values and log-probabilities for a batch of observations, as
        SB3's ``policy(obs)`` returns them (the actions as numpy)."""
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

    def values(self, obs: np.ndarray) -> np.ndarray:
        """``policy.predict_values(obs)``."""
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


def _minibatch_columns(buffer: RolloutBuffer) -> list[np.ndarray]:
    """The rollout buffer's samples, one per row, as ``RolloutBuffer.get`` lays them out before
    its first minibatch: observations, actions, log-probabilities, advantages, returns."""
    if not buffer.generator_ready:
        for name in _BUFFER_FIELDS:
            buffer.__dict__[name] = buffer.swap_and_flatten(buffer.__dict__[name])
        buffer.generator_ready = True
    size = buffer.buffer_size * buffer.n_envs
    return [
        buffer.observations.reshape(size, -1),
        buffer.actions.astype(np.float32, copy=False).reshape(size, -1),
        *(buffer.__dict__[name].reshape(-1) for name in ("log_probs", "advantages", "returns")),
    ]


class NumpyPPO(PPO):
    """``stable_baselines3.PPO`` whose rollouts and updates run in numpy (see the module
    docstring). Same constructor, same saved files; deterministic at a fixed seed.

    Raises:
        ValueError: a setup the numpy loops do not train (see :func:`unsupported`).
    """

    def _setup_model(self) -> None:
        """SB3's setup, with the policy's optimizer built as :class:`EagerAdam` where SB3 would
        build torch's Adam. ``policy_kwargs``, which saved files record, stays as given: a
        saved model loads with torch's Adam, as SB3 saved it."""
        given = self.policy_kwargs
        if given.get("optimizer_class", torch.optim.Adam) is torch.optim.Adam:
            options = given.get("optimizer_kwargs")
            if options is None:  # as SB3's policies do for torch's Adam (only)
                options = {"eps": _SB3_ADAM_EPS}
            self.policy_kwargs = {
                **given,
                "optimizer_class": EagerAdam,
                "optimizer_kwargs": options,
            }
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

    def _numpy_parts(self) -> tuple[_NumpyPolicy, _FlatAdam]:
        """The policy and its optimizer as numpy views, made on first use (after the caller
        froze what it freezes, e.g. a critic-free value head) and again when the optimizer's
        tensors were replaced (a load).

        Raises:
            ValueError: a setup the numpy loops do not train.
        """
        self._refuse_unsupported()
        parts: tuple[_NumpyPolicy, _FlatAdam] | None = getattr(self, "_numpy", None)
        if (
            parts is None
            or parts[1].optimizer is not self.policy.optimizer
            or not parts[1].intact()
        ):
            adam = _FlatAdam(self.policy.optimizer)
            parts = self._numpy = (_NumpyPolicy(self.policy, adam), adam)
        return parts

    def _excluded_save_params(self) -> list[str]:
        # The numpy views share the policy's and optimizer's memory, which SB3 saves.
        return [*super()._excluded_save_params(), "_numpy"]

    def collect_rollouts(
        self,
        env: VecEnv,
        callback: BaseCallback,
        rollout_buffer: RolloutBuffer,
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
        values = torch.from_numpy(policy.values(new_obs))
        rollout_buffer.compute_returns_and_advantage(last_values=values, dones=dones)
        callback.update_locals(locals())
        callback.on_rollout_end()
        return True

    def train(self) -> None:
        """SB3's ``PPO.train`` (no value clipping, no KL target), each minibatch step in numpy."""
        policy, adam = self._numpy_parts()
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        clip_range = self.clip_range(self._current_progress_remaining)
        coefs = (float(self.ent_coef), float(self.vf_coef), bool(self.normalize_advantage))
        columns = _minibatch_columns(self.rollout_buffer)
        size = len(columns[0])
        entropy_losses, pg_losses, value_losses, clip_fractions = [], [], [], []
        loss = None
        for _ in range(self.n_epochs):
            approx_kl_divs = []
            # One pass in a fresh random order from numpy's global generator, as SB3's buffer.
            order = np.random.permutation(size)
            for start in range(0, size, self.batch_size):
                batch = tuple(column[order[start : start + self.batch_size]] for column in columns)
                with np.errstate(**_QUIET):
                    loss, pg, clip, value, entropy, kl = policy.loss_and_grads(
                        batch, clip_range, coefs
                    )
                    adam.step(policy.grad, self.max_grad_norm)
                pg_losses.append(pg)
                clip_fractions.append(clip)
                value_losses.append(value)
                entropy_losses.append(entropy)
                approx_kl_divs.append(kl)
            self._n_updates += 1
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
