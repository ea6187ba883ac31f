"""DPO on the preference pairs with TRL's ``DPOTrainer``, on a local causal LM directory.

Nothing is fetched: :func:`go_offline` switches the Hugging Face libraries to offline mode and
points their caches into the alphaloop scratch folder before they are imported.

Every pair is trained whole or not at all. ``max_length`` (default: the model's own context
length, ``max_position_embeddings`` in its config) bounds a prompt with its longer answer in the
model's tokens; a research prompt that is longer has its oldest history cut (see
:mod:`.fit`), and a run in which a pair still does not fit stops before training with
:class:`~alphaloop.exceptions.InvalidRequest`, since TRL would silently drop it (or cut its
answer).

A held-out fifth of the pairs (see :mod:`.heldout`) measures preference accuracy before and
after training. Before training the policy is the reference, every reward is 0, and a tie
counts one half: the accuracy before is 0.5 by construction, and what training adds is
measured against chance, with its Wilson interval. Scoring runs each distinct prompt once for
all its answers (see :mod:`.scoring`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import InvalidRequest
from alphaloop.flywheel.heldout import (
    MIN_HELDOUT,
    check_heldout,
    preference_accuracy,
    split_pairs,
    wilson_interval,
)
from alphaloop.flywheel.lengths import Texts, fit_pairs, model_prompt, resolve_max_length
from alphaloop.flywheel.scoring import sequence_logps
from alphaloop.journal.preferences import PreferenceRecord

__all__ = [
    "DpoOptions",
    "DpoOutcome",
    "check_model_dir",
    "fit_pairs",
    "go_offline",
    "model_prompt",
    "resolve_max_length",
    "sequence_logps",
    "train_pairs",
]

DEFAULT_BETA = 0.1
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")


class DpoOptions(BaseModel):
    """How a DPO run trains."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lora: bool = False
    max_steps: int = 50
    beta: float = DEFAULT_BETA
    learning_rate: float = 5e-5
    batch_size: int = 8
    max_length: int | None = None  # None: the model's own context length
    min_heldout: int = MIN_HELDOUT
    seed: int = 0


class DpoOutcome(BaseModel):
    """What a run measured; the journal row holds the same."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_train: int
    n_heldout: int
    accuracy_before: float
    accuracy_after: float
    accuracy_after_low: float
    accuracy_after_high: float
    max_length: int
    lengths: dict[str, float]
    margin_before: float
    margin_after: float
    loss_curve: list[dict[str, float]]
    reward_margins: list[dict[str, float]]
    elapsed_s: float


def go_offline(scratch: Path) -> None:
    """Offline mode and scratch caches for the Hugging Face libraries of this process and its
    children. Call before transformers, datasets or TRL is imported: they read these once."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
    os.environ["HF_HOME"] = str(scratch / "huggingface")
    os.environ["HF_DATASETS_CACHE"] = str(scratch / "huggingface" / "datasets")
    # Their loading and tokenizing bars are not the run's progress (the caller's ``on_log``
    # is); a user who wants them back sets these to 0.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")


def check_model_dir(path: Path) -> None:
    """Raises InvalidRequest unless ``path`` holds a config, weights and a tokenizer."""
    if not path.is_dir():
        raise InvalidRequest(f"model directory {path} does not exist (or is not a directory)")
    if not (path / "config.json").is_file():
        raise InvalidRequest(
            f"{path} is not a model directory: no config.json (save one with "
            "model.save_pretrained(DIR) and tokenizer.save_pretrained(DIR))"
        )
    if not any((path / f).is_file() for f in WEIGHT_FILES):
        raise InvalidRequest(f"{path} has no weights ({' or '.join(WEIGHT_FILES)})")
    if not any((path / f).is_file() for f in TOKENIZER_FILES):
        raise InvalidRequest(f"{path} has no tokenizer ({' or '.join(TOKENIZER_FILES)})")


def _log_series(history: list[dict[str, Any]], keys: Sequence[str]) -> list[dict[str, float]]:
    rows = []
    for entry in history:
        picked = {k: float(entry[k]) for k in keys if k in entry}
        if picked and "step" in entry:
            rows.append({"step": float(entry["step"]), **picked})
    return rows


@dataclass(frozen=True)
class _Run:
    """One :func:`train_pairs` call: where the model comes from and goes, how it trains."""

    model_dir: Path
    out_dir: Path
    options: DpoOptions
    on_log: Callable[[dict[str, Any]], None] | None


def train_pairs(
    prefs: Sequence[PreferenceRecord],
    model_dir: Path,
    out_dir: Path,
    options: DpoOptions,
    *,
    on_log: Callable[[dict[str, Any]], None] | None = None,
) -> DpoOutcome:
    """Runs DPO on ``prefs`` and saves the model (or the LoRA adapter) and tokenizer in
    ``out_dir``. Call :func:`go_offline` first. Everything that can refuse the run (the model
    directory, the held-out count, the lengths) is checked before the model is loaded.

    Raises:
        InvalidRequest: ``model_dir`` is not a model directory, or ``max_length`` exceeds its
            context.
        InvalidRequest: fewer held-out pairs than ``options.min_heldout``.
        InvalidRequest: a pair does not fit ``max_length`` even with its history cut.
        ValueError: fewer than two pairs.
    """
    check_model_dir(model_dir)
    train, held = split_pairs(prefs)
    check_heldout(len(held), len(prefs), options.min_heldout)
    start = time.perf_counter()
    max_length = resolve_max_length(options.max_length, model_dir)
    run = _Run(model_dir, out_dir, options.model_copy(update={"max_length": max_length}), on_log)
    tokenizer = _load_tokenizer(run)
    texts, lengths = fit_pairs(tokenizer, [*train, *held], max_length)
    n = len(train)
    t_texts: Texts = (texts[0][:n], texts[1][:n], texts[2][:n])
    h_texts: Texts = (texts[0][n:], texts[1][n:], texts[2][n:])
    model = _load_model(run)
    ref_logps = _pair_logps(model, tokenizer, h_texts, max_length)
    acc_before, margin_before = preference_accuracy(ref_logps, ref_logps, options.beta)

    trainer = _dpo_trainer(run, model, tokenizer, t_texts)
    trainer.train()
    trainer.save_model(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))

    pol_logps = _pair_logps(trainer.model, tokenizer, h_texts, max_length)
    acc_after, margin_after = preference_accuracy(ref_logps, pol_logps, options.beta)
    low, high = wilson_interval(acc_after, len(held))
    history = trainer.state.log_history
    return DpoOutcome(
        n_train=len(train),
        n_heldout=len(held),
        accuracy_before=acc_before,
        accuracy_after=acc_after,
        accuracy_after_low=low,
        accuracy_after_high=high,
        max_length=max_length,
        lengths=lengths,
        margin_before=margin_before,
        margin_after=margin_after,
        loss_curve=_log_series(history, ("loss",)),
        reward_margins=_log_series(
            history, ("rewards/margins", "rewards/accuracies", "rewards/chosen", "rewards/rejected")
        ),
        elapsed_s=time.perf_counter() - start,
    )


def _load_tokenizer(run: _Run) -> Any:
    """The model directory's tokenizer, with a pad token.

    Raises:
        InvalidRequest: the directory holds no loadable tokenizer.
    """
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(run.model_dir, local_files_only=True)
    except (OSError, ValueError) as err:
        raise InvalidRequest(f"cannot load a tokenizer from {run.model_dir}: {err}") from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _load_model(run: _Run) -> Any:
    """The causal language model of the model directory, seeded.

    Raises:
        InvalidRequest: the directory holds no loadable causal language model.
    """
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(run.options.seed)
    try:
        return AutoModelForCausalLM.from_pretrained(run.model_dir, local_files_only=True)
    except (OSError, ValueError) as err:
        raise InvalidRequest(
            f"cannot load a causal language model from {run.model_dir}: {err}"
        ) from None


def _pair_logps(
    model: Any, tokenizer: Any, texts: Texts, max_length: int
) -> tuple[list[float], list[float]]:
    """Sequence log-probabilities of the chosen and of the rejected answers, scored together:
    a pair's two answers share one run of its prompt."""
    prompts, chosen, rejected = texts
    logps = sequence_logps(model, tokenizer, [*prompts, *prompts], [*chosen, *rejected], max_length)
    return logps[: len(prompts)], logps[len(prompts) :]


def _dpo_trainer(run: _Run, model: Any, tokenizer: Any, texts: Texts) -> Any:
    """TRL's ``DPOTrainer`` on the training pairs, against a frozen reference or with LoRA, its
    step running each pair's prompt once (:mod:`.shared_prompt`)."""
    from datasets import Dataset
    from transformers.trainer_callback import PrinterCallback

    from alphaloop.flywheel.shared_prompt import SharedPromptDPOTrainer

    prompts, chosen, rejected = texts
    dataset = Dataset.from_dict({"prompt": prompts, "chosen": chosen, "rejected": rejected})
    args = _dpo_config(run, len(prompts))
    peft_config = ref_model = None
    if run.options.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=8, lora_alpha=16, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM"
        )
    else:
        from transformers import AutoModelForCausalLM

        # TRL would reload the reference from config._name_or_path; an explicit copy from the
        # same directory makes the reference unambiguous.
        ref_model = AutoModelForCausalLM.from_pretrained(run.model_dir, local_files_only=True)
    trainer = SharedPromptDPOTrainer(
        model=model,
        ref_model=ref_model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=[_log_callback(run.on_log)],
    )
    # With progress bars off the Trainer prints each log dict on stdout, which is the command's.
    trainer.remove_callback(PrinterCallback)
    return trainer


def _dpo_config(run: _Run, n_train: int) -> Any:
    """The ``DPOConfig`` of the options: a log line per step, nothing saved or reported.

    A step's pairs go through the model one at a time, their gradients accumulated: the same
    step (the loss is the mean over the step's pairs either way; the sampler draws the same
    pairs), but the activations of one pair's two sequences in memory instead of all of them.
    At the proposal prompts' ~1,000 tokens on a 135M model that made a step of 8 pairs 1.9x
    faster on 2 cores and the run's peak memory 8.9 -> 4.8 GB (``benchmarks/bench_dpo.py``):
    one forward of 16 long sequences is slower per sequence, not only larger. No gradient
    checkpointing: the step keeps each prompt's keys and values for its two answers, which a
    recomputation could not rebuild (:mod:`.shared_prompt`).
    """
    import torch
    from trl import DPOConfig

    options = run.options
    return DPOConfig(
        output_dir=str(run.out_dir),
        max_steps=options.max_steps,
        per_device_train_batch_size=1,
        gradient_accumulation_steps=min(options.batch_size, n_train),
        learning_rate=options.learning_rate,
        beta=options.beta,
        max_length=options.max_length,
        **{_checkpointing_field(DPOConfig): False},
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=options.seed,
        use_cpu=not torch.cuda.is_available(),
        disable_tqdm=True,
        dataloader_num_workers=0,
    )


def _checkpointing_field(config: type) -> str:
    """The config's switch of gradient checkpointing: ``activation_checkpointing`` from
    transformers 5 on, ``gradient_checkpointing`` (its deprecated alias there) before."""
    new = "activation_checkpointing"
    return new if new in config.__dataclass_fields__ else "gradient_checkpointing"


def _log_callback(on_log: Callable[[dict[str, Any]], None] | None) -> Any:
    """A Trainer callback handing each log dict, with its step, to ``on_log``."""
    from transformers import TrainerCallback

    class _Logs(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if on_log is not None and logs:
                on_log(dict(logs, step=state.global_step))

    return _Logs()
