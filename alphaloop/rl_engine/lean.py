"""SB3's PPO with its two loops, rollout collection and the update, run with less Python around
the same arithmetic.

A default trial takes 2 x 1,280 minibatch updates of two 64x64 MLPs and 4,096 policy steps. At
that size torch's arithmetic is cheap and the cost is the Python and dispatch around each call:
a ``torch.distributions.Normal`` built and its arguments validated at every step, ``nn.Module``
calls, numpy copies of every minibatch, and Adam's per-parameter loop in Python. :class:`LeanPPO`
keeps SB3's algorithm and every floating-point operation of it, in the same order on tensors of
the same shapes, and drops only that overhead:

- the policy's Gaussian is computed with the very expressions of SB3's ``DiagGaussianDistribution``
  and torch's ``Normal`` (same ops, same autograd graph, same draws from torch's generator),
  without building the distribution objects; their arguments are checked as ``Normal`` checks
  them, and an invalid one (a diverged policy) raises torch's own error;
- minibatches are gathered from tensors made once per update, by the same permutation of numpy's
  global generator that SB3's buffer draws;
- gradient clipping and Adam run as the ``torch._foreach_*`` calls torch's own code makes (on the
  CPU these apply the same kernel to each parameter in turn, exactly as the per-parameter loop).

Anything this does not cover (other distributions, gSDE, a value-clip range, a KL target, another
optimizer) runs SB3's own loops unchanged. The tests check the results bit for bit against SB3.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.distributions import DiagGaussianDistribution
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import FlattenExtractor, MlpExtractor
from stable_baselines3.common.utils import explained_variance, obs_as_tensor
from stable_baselines3.common.vec_env import VecEnv
from torch import nn
from torch.distributions import Distribution, Normal
from torch.nn import functional as F

__all__ = ["LeanPPO", "lean_supported"]

_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))  # as torch's Normal.log_prob spells it
_ENTROPY_CONST = 0.5 + 0.5 * math.log(2 * math.pi)  # as torch's Normal.entropy spells it
# torch's CPU allocator puts every tensor on a 64-byte boundary.
_ALIGN_BYTES = 64
_SB3_ADAM_EPS = 1e-5  # the epsilon SB3's policies give torch's Adam when not told otherwise
_BUFFER_FIELDS = ("observations", "actions", "values", "log_probs", "advantages", "returns")


def lean_supported(model: PPO) -> bool:
    """Whether ``model``'s setup is one the lean loops reproduce exactly (else SB3's run)."""
    policy = model.policy
    if type(policy) is not ActorCriticPolicy or not policy.share_features_extractor:
        return False
    optimizer = policy.optimizer
    return (
        isinstance(policy.action_dist, DiagGaussianDistribution)
        and not model.use_sde
        and not policy.squash_output
        and isinstance(model.action_space, spaces.Box)
        and isinstance(model.observation_space, spaces.Box)
        and len(model.observation_space.shape) == 1
        and type(policy.features_extractor) is FlattenExtractor
        and type(policy.mlp_extractor) is MlpExtractor
        and type(policy.action_net) is nn.Linear
        and type(policy.value_net) is nn.Linear
        and model.clip_range_vf is None
        and model.target_kl is None
        and type(optimizer) in (torch.optim.Adam, EagerAdam)
        and len(optimizer.param_groups) == 1
        and _plain_adam(optimizer.param_groups[0])
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
    (``torch._dynamo``, about a second) to say so, the first time one of them runs in a
    process. Nothing here is compiled, so the lean loops build the policy's optimizer as this
    class (:meth:`LeanPPO._setup_model`) and a process that trains (a worker, a trial run
    from the command line) starts a second sooner. The methods and the arithmetic are
    torch's own; so is ``step``, wrapper included (the lean loops call it only where their
    one-buffer Adam cannot run)."""

    add_param_group = _undecorated("add_param_group")
    state_dict = _undecorated("state_dict")
    load_state_dict = _undecorated("load_state_dict")
    zero_grad = _undecorated("zero_grad")


def _plain_adam(group: dict[str, Any]) -> bool:
    """Adam as SB3 builds it: no weight decay, amsgrad, maximize, fused or capturable step."""
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


def _mlp(net: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    """``net(x)`` with ``Linear`` and ``Tanh`` called as the functions their ``forward`` calls."""
    for layer in net:
        if type(layer) is nn.Linear:
            x = F.linear(x, layer.weight, layer.bias)
        elif type(layer) is nn.Tanh:
            x = torch.tanh(x)
        else:
            x = layer(x)
    return x


def _gaussian(policy: ActorCriticPolicy, latent_pi: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The loc and scale of the action distribution, as ``proba_distribution`` and ``Normal``
    make them (``broadcast_tensors`` included: it puts the same nodes in the autograd graph),
    and checked as ``Normal`` checks them."""
    action_net = policy.action_net
    mean_actions = F.linear(latent_pi, action_net.weight, action_net.bias)
    action_std = torch.ones_like(mean_actions) * policy.log_std.exp()
    loc, scale = torch.broadcast_tensors(mean_actions, action_std)
    if Distribution._validate_args:
        for name, value in (("loc", loc), ("scale", scale)):
            if not torch._is_all_true(Normal.arg_constraints[name].check(value)):
                # A diverged policy: torch's own Normal raises its own error, which the
                # trainer reads ("Expected parameter scale ...").
                Normal(mean_actions, action_std)
    return loc, scale


def _log_prob(loc: torch.Tensor, scale: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """``Normal(loc, scale).log_prob(value)`` summed over the action dimensions, ``value``
    checked as ``Normal`` checks it."""
    if Distribution._validate_args and not torch._is_all_true(Normal.support.check(value)):
        Normal(loc, scale).log_prob(value)  # raises torch's own error
    var = scale**2
    log_scale = scale.log()
    return (-((value - loc) ** 2) / (2 * var) - log_scale - _LOG_SQRT_2PI).sum(dim=1)


def _entropy(scale: torch.Tensor) -> torch.Tensor:
    """``Normal(loc, scale).entropy()`` summed over the action dimensions."""
    return (_ENTROPY_CONST + torch.log(scale)).sum(dim=1)


def _features(obs: torch.Tensor) -> torch.Tensor:
    """``policy.extract_features(obs)`` for a flat Box: ``preprocess_obs`` then ``Flatten``."""
    return obs.float().flatten(1, -1)


def _values(policy: ActorCriticPolicy, obs: torch.Tensor) -> torch.Tensor:
    """``policy.predict_values(obs)``."""
    latent_vf = _mlp(policy.mlp_extractor.value_net, _features(obs))
    return F.linear(latent_vf, policy.value_net.weight, policy.value_net.bias)


def _act(policy: ActorCriticPolicy, obs: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """``policy(obs)``: sampled actions, values and log-probabilities (call under no_grad)."""
    features = _features(obs)
    latent_pi = _mlp(policy.mlp_extractor.policy_net, features)
    latent_vf = _mlp(policy.mlp_extractor.value_net, features)
    values = F.linear(latent_vf, policy.value_net.weight, policy.value_net.bias)
    loc, scale = _gaussian(policy, latent_pi)
    actions = torch.normal(loc.expand(loc.shape), scale.expand(loc.shape))
    log_prob = _log_prob(loc, scale, actions)
    return actions.reshape((-1, *policy.action_space.shape)), values, log_prob


def _evaluate_actions(
    policy: ActorCriticPolicy, obs: torch.Tensor, actions: torch.Tensor
) -> tuple[torch.Tensor, ...]:
    """``policy.evaluate_actions(obs, actions)``, its graph built in the same order."""
    features = _features(obs)
    latent_pi = _mlp(policy.mlp_extractor.policy_net, features)
    latent_vf = _mlp(policy.mlp_extractor.value_net, features)
    loc, scale = _gaussian(policy, latent_pi)
    log_prob = _log_prob(loc, scale, actions)
    values = F.linear(latent_vf, policy.value_net.weight, policy.value_net.bias)
    return values, log_prob, _entropy(scale)


def _scalar_dtype() -> torch.dtype:
    """The dtype of Adam's step counters (torch's ``_get_scalar_dtype``)."""
    return torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32


class _FlatAdam:
    """torch's Adam and gradient clipping on the trainable parameters laid end to end.

    The parameters, Adam's two moments and the gradients become views of one buffer each, so
    a step is a handful of elementwise calls on the whole buffer instead of each of them once
    per parameter. Elementwise kernels compute every element alone, so the numbers are those
    of torch's per-parameter loop (the tests check it). Each parameter starts on a 64-byte
    boundary, as torch's allocator places a tensor of its own: a matrix product may round
    differently on data aligned differently, so a parameter keeps the alignment it had. The
    padding between parameters is zero and stays zero. The optimizer's ``state`` holds views
    of the same buffers: saving, loading or ``optimizer.step()`` sees the same values.
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
        self.pads = [
            torch.zeros(nxt - sl.stop, dtype=self.params[0].dtype)
            for sl, nxt in zip(self.slices, [*starts[1:], end], strict=True)
        ]
        states = [optimizer.state.get(p) or {} for p in self.params]
        self.flat = self._lay_out([p.detach() for p in self.params], end)
        self.exp_avg = self._lay_out([s.get("exp_avg") for s in states], end)
        self.exp_avg_sq = self._lay_out([s.get("exp_avg_sq") for s in states], end)
        self.steps = (
            torch.stack([s["step"] for s in states])
            if all(states)
            else torch.zeros(len(self.params), dtype=_scalar_dtype())
        )
        for i, (p, sl) in enumerate(zip(self.params, self.slices, strict=True)):
            p.data = self.flat[sl].view_as(p)
            optimizer.state[p] = {
                "step": self.steps[i],
                "exp_avg": self.exp_avg[sl].view_as(p),
                "exp_avg_sq": self.exp_avg_sq[sl].view_as(p),
            }

    def _lay_out(self, tensors: list[torch.Tensor | None], size: int) -> torch.Tensor:
        """One zero buffer with each tensor copied into its slice (a missing one stays zero)."""
        out = torch.zeros(size, dtype=self.params[0].dtype)
        for sl, tensor in zip(self.slices, tensors, strict=True):
            if tensor is not None:
                out[sl] = tensor.reshape(-1)
        return out

    @staticmethod
    def usable(optimizer: torch.optim.Adam) -> bool:
        """Whether the trainable parameters' Adam states are all fresh or all at one step."""
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
        state = self.optimizer.state
        for p, sl in zip(self.params, self.slices, strict=True):
            moments = state.get(p, {}).get("exp_avg")
            if p.data_ptr() != self.flat[sl].data_ptr() or moments is None:
                return False
            if moments.data_ptr() != self.exp_avg[sl].data_ptr():
                return False
        return True

    def step(self, max_grad_norm: float) -> bool:
        """Clips the gradients' total norm to ``max_grad_norm`` and takes an Adam step, as
        ``clip_grad_norm_`` and ``Adam.step`` do; False (nothing done) when a trainable
        parameter has no gradient."""
        grads = [p.grad for p in self.params]
        if any(g is None for g in grads):
            return False
        group = self.optimizer.param_groups[0]
        lr, eps = group["lr"], group["eps"]
        beta1, beta2 = group["betas"]
        with torch.no_grad():
            # clip_grad_norm_: the norm of the per-parameter norms, then one scale for all.
            norms = torch._foreach_norm(grads, 2.0)
            total_norm = torch.linalg.vector_norm(torch.stack(norms), 2.0)
            clip_coef = _clip_coef(max_grad_norm, total_norm)
            pieces = [
                piece
                for g, pad in zip(grads, self.pads, strict=True)
                for piece in (g.reshape(-1), pad)
            ]
            grad = torch.cat(pieces).mul_(clip_coef)
            # Adam.step, single-tensor path, every parameter at the same step count.
            self.steps += 1
            count = self.steps[0].item()
            bias_correction1 = 1 - beta1**count
            bias_correction2 = 1 - beta2**count
            self.exp_avg.lerp_(grad, 1 - beta1)
            self.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            denom = (self.exp_avg_sq.sqrt() / bias_correction2**0.5).add_(eps)
            self.flat.addcdiv_(self.exp_avg, denom, value=-(lr / bias_correction1))
        return True


def _clip_coef(max_norm: float, total_norm: torch.Tensor) -> torch.Tensor:
    """``clip_grad_norm_``'s scale: ``max_norm / (total + 1e-6)`` capped at 1, as torch has it."""
    clip_coef = max_norm / (total_norm + 1e-6)
    return torch.clamp(clip_coef, max=1.0)


def flatten_buffer(buffer: RolloutBuffer) -> None:
    """Lays the buffer's (step, env) arrays out as one sample per row, once, as
    ``RolloutBuffer.get`` does before its first minibatch."""
    if not buffer.generator_ready:
        for name in _BUFFER_FIELDS:
            buffer.__dict__[name] = buffer.swap_and_flatten(buffer.__dict__[name])
        buffer.generator_ready = True


class _Minibatches:
    """The rollout buffer's samples as tensors, gathered the way ``RolloutBuffer.get`` does."""

    def __init__(self, buffer: RolloutBuffer) -> None:
        flatten_buffer(buffer)
        self.size = buffer.buffer_size * buffer.n_envs
        self.observations = torch.from_numpy(buffer.observations)
        self.actions = torch.from_numpy(buffer.actions.astype(np.float32, copy=False))
        self.columns = [
            torch.from_numpy(buffer.__dict__[name].reshape(-1))
            for name in ("values", "log_probs", "advantages", "returns")
        ]

    def epoch(self, batch_size: int) -> list[tuple[torch.Tensor, ...]]:
        """One pass in a fresh random order: (obs, actions, old values, old log-probs,
        advantages, returns) per minibatch."""
        order = torch.from_numpy(np.random.permutation(self.size))
        batches = []
        for start in range(0, self.size, batch_size):
            idx = order[start : start + batch_size]
            batches.append(
                (self.observations[idx], self.actions[idx], *(c[idx] for c in self.columns))
            )
        return batches


class RolloutPolicy(Protocol):
    """The policy as LeanPPO's rollout loop calls it."""

    def step(self, obs: np.ndarray) -> tuple[np.ndarray, torch.Tensor, torch.Tensor]:
        """Sampled actions (as numpy), values and log-probabilities, as ``policy(obs)``."""
        ...

    def last_values(self, obs: np.ndarray) -> torch.Tensor:
        """The values of the observations after a rollout's last step."""
        ...

    def terminal_value(self, last: np.ndarray) -> Any:
        """V of one truncated episode's last observation, a batch of one."""
        ...


class _TorchRollout:
    """SB3's policy, called as SB3's rollout calls it (:class:`RolloutPolicy`)."""

    def __init__(self, policy: ActorCriticPolicy, device: torch.device) -> None:
        self.policy, self.device = policy, device

    def step(self, obs: np.ndarray) -> tuple[np.ndarray, torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            actions, values, log_probs = _act(self.policy, obs_as_tensor(obs, self.device))
        return actions.cpu().numpy(), values, log_probs

    def last_values(self, obs: np.ndarray) -> torch.Tensor:
        with torch.no_grad():
            return self.policy.predict_values(obs_as_tensor(obs, self.device))

    def terminal_value(self, last: np.ndarray) -> Any:
        with torch.no_grad():
            return _values(self.policy, torch.as_tensor(last))[0]


class LeanPPO(PPO):
    """``stable_baselines3.PPO`` with lean rollout and update loops (see the module docstring).

    Same constructor, same results bit for bit, same saved files.
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

    def collect_rollouts(
        self,
        env: VecEnv,
        callback: BaseCallback,
        rollout_buffer: RolloutBuffer,
        n_rollout_steps: int,
    ) -> bool:
        """SB3's ``collect_rollouts`` with the policy's forward pass computed directly."""
        if not lean_supported(self):
            return super().collect_rollouts(env, callback, rollout_buffer, n_rollout_steps)
        self.policy.set_training_mode(False)
        n_steps = 0
        rollout_buffer.reset()
        callback.on_rollout_start()
        low, high = self.action_space.low, self.action_space.high
        rollout = self._rollout_policy()
        while n_steps < n_rollout_steps:
            actions, values, log_probs = rollout.step(self._last_obs)
            clipped_actions = np.clip(actions, low, high)
            new_obs, rewards, dones, infos = env.step(clipped_actions)
            self.num_timesteps += env.num_envs
            callback.update_locals(locals())
            if not callback.on_step():
                return False
            self._update_info_buffer(infos, dones)
            n_steps += 1
            self._bootstrap_timeouts(rollout, rewards, dones, infos)
            rollout_buffer.add(
                self._last_obs, actions, rewards, self._last_episode_starts, values, log_probs
            )
            self._last_obs = new_obs
            self._last_episode_starts = dones
        values = rollout.last_values(new_obs)
        rollout_buffer.compute_returns_and_advantage(last_values=values, dones=dones)
        callback.update_locals(locals())
        callback.on_rollout_end()
        return True

    def _rollout_policy(self) -> RolloutPolicy:
        """The policy as the rollout loop calls it (made once per rollout)."""
        return _TorchRollout(self.policy, self.device)

    def _bootstrap_timeouts(
        self,
        rollout: RolloutPolicy,
        rewards: np.ndarray,
        dones: np.ndarray,
        infos: list[dict[str, Any]],
    ) -> None:
        """SB3's time-limit bootstrap: a truncated step's reward gains ``gamma * V(last obs)``,
        each value computed alone as SB3 does (a batch of one)."""
        shape = self.observation_space.shape
        for idx in np.flatnonzero(dones).tolist():
            info = infos[idx]
            if info.get("terminal_observation") is not None and info.get("TimeLimit.truncated"):
                # policy.obs_to_tensor: a copy, shaped as a batch of one.
                last = np.array(info["terminal_observation"]).reshape((-1, *shape))
                rewards[idx] += self.gamma * rollout.terminal_value(last)

    def train(self) -> None:
        """SB3's ``PPO.train`` (no value clipping, no KL target) with the lean steps."""
        if not lean_supported(self):
            super().train()
            return
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        clip_range = self.clip_range(self._current_progress_remaining)
        minibatches = _Minibatches(self.rollout_buffer)
        params = list(self.policy.parameters())
        adam = self._flat_adam_ready()
        logs: dict[str, list] = {"entropy": [], "pg": [], "value": [], "clip": [], "kl": []}
        loss = None
        for _ in range(self.n_epochs):
            logs["kl"] = []
            for batch in minibatches.epoch(self.batch_size):
                loss = self._minibatch_loss(batch, clip_range, logs)
                for p in params:  # Optimizer.zero_grad(set_to_none=True)
                    p.grad = None
                loss.backward()
                if adam is not None and not adam.step(self.max_grad_norm):
                    adam = self._flat_adam = None  # steps would part; torch's Adam from here
                if adam is None:
                    torch.nn.utils.clip_grad_norm_(params, self.max_grad_norm)
                    self.policy.optimizer.step()
            self._n_updates += 1
        self._record_update(logs, None if loss is None else loss.item(), clip_range)

    def _flat_adam_ready(self) -> _FlatAdam | None:
        """The flat Adam of this policy's optimizer, made on first use (None: torch's Adam)."""
        optimizer = self.policy.optimizer
        adam: _FlatAdam | None = getattr(self, "_flat_adam", None)
        if adam is not None and adam.optimizer is optimizer and adam.intact():
            return adam
        self._flat_adam = _FlatAdam(optimizer) if _FlatAdam.usable(optimizer) else None
        return self._flat_adam

    def _excluded_save_params(self) -> list[str]:
        # The flat buffers are views of the policy and optimizer state, which are saved.
        return [*super()._excluded_save_params(), "_flat_adam"]

    def _minibatch_loss(
        self, batch: tuple[torch.Tensor, ...], clip_range: float, logs: dict[str, list]
    ) -> torch.Tensor:
        """PPO's clipped loss on one minibatch, with SB3's per-minibatch log entries."""
        observations, actions, _old_values, old_log_prob, advantages, returns = batch
        values, log_prob, entropy = _evaluate_actions(self.policy, observations, actions)
        values = values.flatten()
        if self.normalize_advantage and len(advantages) > 1:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        ratio = torch.exp(log_prob - old_log_prob)
        policy_loss_1 = advantages * ratio
        policy_loss_2 = advantages * torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
        policy_loss = -torch.min(policy_loss_1, policy_loss_2).mean()
        logs["pg"].append(policy_loss.item())
        logs["clip"].append(torch.mean((torch.abs(ratio - 1) > clip_range).float()).item())
        value_loss = F.mse_loss(returns, values)
        logs["value"].append(value_loss.item())
        entropy_loss = -torch.mean(entropy)
        logs["entropy"].append(entropy_loss.item())
        loss = policy_loss + self.ent_coef * entropy_loss + self.vf_coef * value_loss
        with torch.no_grad():
            log_ratio = log_prob - old_log_prob
            logs["kl"].append(torch.mean((torch.exp(log_ratio) - 1) - log_ratio).cpu().numpy())
        return loss

    def _record_update(self, logs: dict[str, list], loss: float | None, clip_range: float) -> None:
        """The entries SB3's ``train`` records, from the same values."""
        buffer = self.rollout_buffer
        explained_var = explained_variance(buffer.values.flatten(), buffer.returns.flatten())
        record = self.logger.record
        record("train/entropy_loss", np.mean(logs["entropy"]))
        record("train/policy_gradient_loss", np.mean(logs["pg"]))
        record("train/value_loss", np.mean(logs["value"]))
        record("train/approx_kl", np.mean(logs["kl"]))
        record("train/clip_fraction", np.mean(logs["clip"]))
        if loss is not None:
            record("train/loss", loss)
        record("train/explained_variance", explained_var)
        record("train/std", torch.exp(self.policy.log_std).mean().item())
        record("train/n_updates", self._n_updates, exclude="tensorboard")
        record("train/clip_range", clip_range)
