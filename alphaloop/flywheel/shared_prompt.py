"""TRL's ``DPOTrainer`` with each pair's prompt run through the model once a step.

A pair's chosen and rejected answers share their prompt, and the prompt is most of both
sequences (a research prompt runs to a thousand tokens and more, an answer to tens). TRL's step
runs prompt + chosen and prompt + rejected as two sequences, for the policy and again for the
reference. :class:`SharedPromptDPOTrainer` runs the prompt once, keeps its keys and values, and
runs both answers on top of them (:func:`.scoring.answers_logps`, which scores the held-out
pairs too), here with gradients flowing back through the kept keys and values. The
log-probabilities are the same, so are the loss and the gradients (the tests hold them to the
whole sequences' in float64, and a run to TRL's own), for less than half the arithmetic:
``dpo train --lora``'s two steps of 8 pairs at ~1,430-token prompts on a 135M model took
468.6 s -> 136.6 s on 2 cores (``benchmarks/bench_dpo.py``).

The kept keys and values cannot be rebuilt in a backward pass, so this step runs without
gradient checkpointing (TRL's default): one prompt's activations are kept instead of two
sequences' recomputed. That run's peak fell 6.7 -> 5.0 GB; one pair's step alone takes more
than TRL's checkpointed one (a process peak of 3.7 GB against 2.3 GB at ~1,460 tokens, 5.9 GB
against 5.2 GB at ~4,060).

Only standard DPO is computed here: the sigmoid loss against a frozen reference model or the
model with its LoRA adapter switched off, TRL's defaults. Any other setup (another loss, a
reference adapter, precomputed reference log-probabilities) takes TRL's own step. The logs
carry TRL's ``rewards/*`` and ``logps/*`` entries; the token-level ones (entropy, logits, token
accuracy) are TRL's own step's only.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F
from trl import DPOTrainer

from alphaloop.flywheel.scoring import answers_logps

__all__ = ["SharedPromptDPOTrainer"]

# The DPOConfig fields whose other values change the loss or its reference, at the values of
# standard DPO (TRL's defaults) this step computes.
_STANDARD = {
    "loss_type": ["sigmoid"],
    "loss_weights": None,
    "ld_alpha": None,
    "f_divergence_type": "reverse_kl",
    "label_smoothing": 0.0,
    "use_weighting": False,
    "precompute_ref_log_probs": False,
    "sync_ref_model": False,
    "use_liger_kernel": False,
}


def _prompt_and_answer(
    ids: torch.Tensor, attention: torch.Tensor, completion: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """A collated row's prompt and answer tokens (its padding dropped)."""
    kept = attention.bool()
    answer = completion[kept].bool()
    return ids[kept][~answer], ids[kept][answer]


def _one_prompt(chosen: tuple[torch.Tensor, ...], rejected: tuple[torch.Tensor, ...]) -> bool:
    """Whether a pair's two rows hold one prompt and two answers, none of them empty."""
    (prompt, answer), (other, answer_2) = chosen, rejected
    return min(len(prompt), len(answer), len(answer_2)) > 0 and torch.equal(prompt, other)


class SharedPromptDPOTrainer(DPOTrainer):
    """``DPOTrainer`` whose step runs each pair's prompt once (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shared = not self.args.gradient_checkpointing and all(
            getattr(self.args, name, value) == value for name, value in _STANDARD.items()
        )
        if self.ref_model is None:  # the reference is the model with its adapter off
            adapters = getattr(self.accelerator.unwrap_model(self.model), "peft_config", None)
            self._shared &= bool(adapters) and "ref" not in adapters
        self._pair_metrics: dict[str, list[float]] = defaultdict(list)

    @contextmanager
    def _reference(self, model: Any) -> Iterator[Any]:
        if self.ref_model is not None:
            yield self.ref_model
            return
        with self.accelerator.unwrap_model(model).disable_adapter():
            yield model

    def _logps(self, model: Any, pairs: list[tuple[torch.Tensor, ...]]) -> torch.Tensor:
        """(pairs, 2) log-probabilities of each pair's chosen and rejected answers."""
        return torch.stack([answers_logps(model, p, (c, r)) for p, c, r in pairs])

    def compute_loss(
        self,
        model: Any,
        inputs: dict[str, Any],
        return_outputs: bool = False,
        num_items_in_batch: Any = None,
    ) -> Any:
        if not self._shared:
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        columns = (inputs[k] for k in ("input_ids", "attention_mask", "completion_mask"))
        rows = [_prompt_and_answer(*row) for row in zip(*columns, strict=True)]
        n = len(rows) // 2  # the collator's rows: every chosen answer, then every rejected one
        if not all(_one_prompt(rows[i], rows[n + i]) for i in range(n)):
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        pairs = [(rows[i][0], rows[i][1], rows[n + i][1]) for i in range(n)]
        policy = self._logps(model, pairs)
        with torch.no_grad(), self._reference(model) as reference:
            ref = self._logps(reference, pairs)
        ratios = policy - ref  # (pairs, 2): chosen, rejected
        loss = -F.logsigmoid(self.args.beta * (ratios[:, 0] - ratios[:, 1])).mean()
        self._record(policy.detach(), self.args.beta * ratios.detach())
        return (loss, {}) if return_outputs else loss

    def _record(self, logps: torch.Tensor, rewards: torch.Tensor) -> None:
        """The micro-batch's means of TRL's ``rewards/*`` and ``logps/*`` log entries."""
        chosen, rejected = rewards[:, 0], rewards[:, 1]
        for name, value in (
            ("rewards/chosen", chosen),
            ("rewards/rejected", rejected),
            ("rewards/accuracies", (chosen > rejected).float()),
            ("rewards/margins", chosen - rejected),
            ("logps/chosen", logps[:, 0]),
            ("logps/rejected", logps[:, 1]),
        ):
            self._pair_metrics[name].append(float(value.mean()))

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if self._pair_metrics and "loss" in logs:
            logs.update({k: sum(v) / len(v) for k, v in self._pair_metrics.items()})
            self._pair_metrics.clear()
        super().log(logs, start_time)
