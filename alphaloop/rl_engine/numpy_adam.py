"""NumpyPPO's optimizer: gradient clipping and Adam on a flat numpy copy of the parameters.

SB3's policy builds its optimizer as ``optimizer_class(policy.parameters(), lr=...,
**optimizer_kwargs)`` and saves and loads it through ``state_dict`` and ``load_state_dict``;
:class:`NumpyAdam` is such a class, of its own (not a ``torch.optim.Optimizer``). It keeps the
trainable parameters, their gradient and Adam's two moments in one flat float32 buffer each, so
a step is a dozen elementwise numpy calls on the whole buffer rather than each of them once per
parameter. The arithmetic is torch's single-tensor Adam written out in numpy (the tests check a
step against ``torch.optim.Adam``'s to float32 rounding), and its ``state_dict`` is torch's
Adam's, so a saved policy loads with torch's Adam as SB3 saved it.

The parameters themselves stay the torch policy's: :meth:`NumpyAdam.pull` copies them into the
flat buffer before the numpy loops run and :meth:`NumpyAdam.push` copies them back after, both
through the tensors' public numpy views. Nothing here builds a torch optimizer, so a process that
trains never imports torch's compiler (``torch._dynamo``, over a second, which torch's
optimizers import when first built).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import torch

__all__ = ["NumpyAdam"]

# Each parameter's slot starts on a 64-byte boundary, as a tensor of its own does in torch's
# allocator, and the slots keep the order of the parameter group: a reduction over the flat
# gradient (its norm) then adds the same numbers in the same order whatever the data's address.
_ALIGN_FLOATS = 16
# The options of torch's Adam and their defaults: a parameter group holds every one of them, so
# the state_dict here is the one torch's Adam writes and reads.
_TORCH_ADAM_DEFAULTS = {
    name: p.default
    for name, p in inspect.signature(torch.optim.Adam).parameters.items()
    if p.default is not inspect.Parameter.empty
}
# Options whose other values change the arithmetic, with the value the numpy step implements.
_PLAIN = {
    "weight_decay": 0,
    "amsgrad": False,
    "maximize": False,
    "capturable": False,
    "differentiable": False,
    "decoupled_weight_decay": False,
}


def _aligned_zeros(size: int) -> np.ndarray:
    """``size`` float32 zeros whose first one sits on a 64-byte boundary."""
    raw = np.zeros(size + _ALIGN_FLOATS, dtype=np.float32)
    skip = (-raw.ctypes.data // raw.itemsize) % _ALIGN_FLOATS
    return raw[skip : skip + size]


def _check_options(group: dict[str, Any]) -> None:
    """Raises ``ValueError`` for an Adam option the numpy step does not implement."""
    odd = [name for name, plain in _PLAIN.items() if group.get(name, plain) != plain]
    if group.get("fused"):
        odd.append("fused")
    if not isinstance(group["lr"], float | int) or not all(
        isinstance(beta, float | int) for beta in group["betas"]
    ):
        odd.append("a tensor learning rate or betas")
    if odd:
        raise ValueError(
            f"NumpyAdam implements Adam with its default options only; got {', '.join(odd)}"
        )


class NumpyAdam:
    """Adam (torch's single-tensor arithmetic, every parameter at the same step) with gradient
    clipping, on one flat copy of the trainable parameters.

    Args:
        params: the parameters, as SB3's policy passes them (one group).
        lr, betas, eps: as for ``torch.optim.Adam``.
        **options: the rest of ``torch.optim.Adam``'s options, at their defaults.

    Raises:
        TypeError: an option ``torch.optim.Adam`` does not have.
        ValueError: an option at a value the numpy step does not implement.
    """

    def __init__(
        self,
        params: Iterable[torch.Tensor],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        **options: Any,
    ) -> None:
        unknown = sorted(set(options) - set(_TORCH_ADAM_DEFAULTS))
        if unknown:
            raise TypeError(f"torch.optim.Adam has no option {', '.join(unknown)}")
        group = {**_TORCH_ADAM_DEFAULTS, **options, "lr": lr, "betas": tuple(betas), "eps": eps}
        _check_options(group)
        self.params: list[torch.Tensor] = list(params)
        self.param_groups: list[dict[str, Any]] = [{"params": self.params, **group}]
        self.steps = 0
        self._trainable: tuple[bool, ...] | None = None
        self._slots: dict[int, slice] = {}
        empty = np.zeros(0, np.float32)
        self.values = self.grad = self.exp_avg = self.exp_avg_sq = self._scratch = empty

    # -- the flat buffers ------------------------------------------------------------------

    def _lay_out(self) -> None:
        """Gives every trainable parameter its slot, keeping the moments of those that had one
        (the trainable set changes when a caller freezes or thaws a layer)."""
        trainable = tuple(p.requires_grad for p in self.params)
        if trainable == self._trainable:
            return
        old = {i: (self.exp_avg[s], self.exp_avg_sq[s]) for i, s in self._slots.items()}
        slots, end = {}, 0
        for i, p in enumerate(self.params):
            if p.requires_grad:
                slots[i] = slice(end, end + p.numel())
                end += -(-p.numel() // _ALIGN_FLOATS) * _ALIGN_FLOATS
        self.values, self.grad = _aligned_zeros(end), _aligned_zeros(end)
        self.exp_avg, self.exp_avg_sq = _aligned_zeros(end), _aligned_zeros(end)
        self._scratch = np.empty_like(self.values)
        for i, s in slots.items():
            if i in old:
                self.exp_avg[s], self.exp_avg_sq[s] = old[i]
        self._slots, self._trainable = slots, trainable

    def slot(self, param: torch.Tensor) -> tuple[np.ndarray, np.ndarray] | None:
        """``param``'s value and gradient as views of the flat buffers, shaped as ``param``
        (None for a parameter that is not trained)."""
        for i, p in enumerate(self.params):
            if p is param:
                s = self._slots.get(i)
                if s is None:
                    return None
                return self.values[s].reshape(p.shape), self.grad[s].reshape(p.shape)
        raise ValueError("not a parameter of this optimizer")

    def pull(self) -> None:
        """Copies the parameters into the flat buffer (laying it out again if the trainable set
        changed)."""
        self._lay_out()
        for i, s in self._slots.items():
            self.values[s] = self.params[i].detach().numpy().reshape(-1)

    def push(self) -> None:
        """Copies the flat buffer back into the parameters."""
        with torch.no_grad():
            for i, s in self._slots.items():
                p = self.params[i]
                p.copy_(torch.from_numpy(self.values[s]).view(p.shape))

    # -- the step --------------------------------------------------------------------------

    def clip_and_step(self, max_grad_norm: float) -> None:
        """``clip_grad_norm_(max_grad_norm)`` then an Adam step, with the gradient the caller
        wrote into :attr:`grad`, on :attr:`values`."""
        grad = self.grad
        total_norm = math.sqrt(float(np.dot(grad, grad)))
        grad *= np.float32(min(max_grad_norm / (total_norm + 1e-6), 1.0))
        self._adam(grad)

    def _adam(self, grad: np.ndarray) -> None:
        group = self.param_groups[0]
        lr, eps = group["lr"], group["eps"]
        beta1, beta2 = group["betas"]
        self.steps += 1
        bias_correction1 = 1 - beta1**self.steps
        bias_correction2 = 1 - beta2**self.steps
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
        self.values -= scratch

    def step(self, closure: None = None) -> None:
        """An Adam step with the parameters' ``.grad``, as ``torch.optim.Adam.step`` takes it
        (no clipping: SB3 clips the gradients before).

        Raises:
            ValueError: a closure, or a trained parameter without a gradient (NumpyAdam steps
                every parameter together).
        """
        if closure is not None:
            raise ValueError("NumpyAdam.step takes no closure")
        self.pull()
        for i, s in self._slots.items():
            grad = self.params[i].grad
            if grad is None:
                raise ValueError("NumpyAdam steps every trained parameter; one has no gradient")
            self.grad[s] = grad.detach().numpy().reshape(-1)
        self._adam(self.grad)
        self.push()

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears the parameters' ``.grad`` (torch's ``zero_grad``)."""
        for p in self.params:
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.zero_()

    # -- saving and loading, in torch's format ----------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The state as ``torch.optim.Adam.state_dict`` gives it (copies)."""
        group = {k: v for k, v in self.param_groups[0].items() if k != "params"}
        group["params"] = list(range(len(self.params)))
        state: dict[int, dict[str, torch.Tensor]] = {}
        if self.steps:
            for i, s in self._slots.items():
                shape = self.params[i].shape
                state[i] = {
                    "step": torch.tensor(float(self.steps), dtype=_scalar_dtype()),
                    "exp_avg": torch.from_numpy(self.exp_avg[s].reshape(shape).copy()),
                    "exp_avg_sq": torch.from_numpy(self.exp_avg_sq[s].reshape(shape).copy()),
                }
        return {"state": state, "param_groups": [group]}

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        """Loads a state written by :meth:`state_dict` or by ``torch.optim.Adam`` (``strict`` is
        accepted because SB3 passes it to what is not a torch optimizer; a mismatch always
        raises).

        Raises:
            ValueError: another number of groups or parameters, options the numpy step does
                not implement, or parameters at different steps.
        """
        del strict
        groups = state_dict["param_groups"]
        if len(groups) != 1 or len(groups[0]["params"]) != len(self.params):
            raise ValueError("the state is not of one group holding this optimizer's parameters")
        group = {**self.param_groups[0], **{k: v for k, v in groups[0].items() if k != "params"}}
        group["params"] = self.params
        group["betas"] = tuple(group["betas"])
        _check_options(group)
        # A parameter the state holds no moments for (one that was frozen) starts from zero
        # moments at the common step.
        saved = {groups[0]["params"].index(k): v for k, v in state_dict["state"].items()}
        steps = {float(s["step"]) for s in saved.values()}
        if len(steps) > 1:
            raise ValueError("NumpyAdam steps every parameter together; these are at several steps")
        self.param_groups = [group]
        self._trainable = None  # lay out afresh, every moment from the state
        self._slots = {}
        self._lay_out()
        for i, s in self._slots.items():
            if i in saved:
                self.exp_avg[s] = saved[i]["exp_avg"].detach().numpy().reshape(-1)
                self.exp_avg_sq[s] = saved[i]["exp_avg_sq"].detach().numpy().reshape(-1)
        self.steps = int(steps.pop()) if steps else 0


def _scalar_dtype() -> torch.dtype:
    """The dtype torch's Adam gives its step counters (float32 unless the default is float64)."""
    return torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32
