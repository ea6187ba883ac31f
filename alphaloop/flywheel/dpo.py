"""DPO on the preference pairs with TRL's ``DPOTrainer``, on a local causal LM directory.

Nothing is fetched: :func:`go_offline` switches the Hugging Face libraries to offline mode and
points their caches into the alphaloop scratch folder before they are imported. A held-out
slice of the pairs (a stable fifth, chosen by a hash of each pair's origin key, so a later run
never trains on what an earlier run held out) measures preference accuracy before and after
training: the share of held-out pairs whose implicit reward ``beta * (log p_policy(y | x) -
log p_ref(y | x))`` is higher for ``chosen`` than for ``rejected``. Before training the policy
is the reference, every reward is 0, and a tie counts one half: the accuracy before is 0.5 by
construction, and what training adds is measured against chance.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import ModelDirError
from alphaloop.flywheel.export import prompt_messages, prompt_text
from alphaloop.journal.flywheel import PreferenceRecord

HELDOUT_BUCKETS = 5  # one pair in five is held out
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
    max_length: int = 1024
    seed: int = 0


class DpoOutcome(BaseModel):
    """What a run measured; the journal row holds the same."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_train: int
    n_heldout: int
    accuracy_before: float
    accuracy_after: float
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


def check_model_dir(path: Path) -> None:
    """Raises ModelDirError unless ``path`` holds a config, weights and a tokenizer."""
    if not path.is_dir():
        raise ModelDirError(f"model directory {path} does not exist (or is not a directory)")
    if not (path / "config.json").is_file():
        raise ModelDirError(
            f"{path} is not a model directory: no config.json (save one with "
            "model.save_pretrained(DIR) and tokenizer.save_pretrained(DIR))"
        )
    if not any((path / f).is_file() for f in WEIGHT_FILES):
        raise ModelDirError(f"{path} has no weights ({' or '.join(WEIGHT_FILES)})")
    if not any((path / f).is_file() for f in TOKENIZER_FILES):
        raise ModelDirError(f"{path} has no tokenizer ({' or '.join(TOKENIZER_FILES)})")


def is_heldout(origin_key: str) -> bool:
    digest = hashlib.sha256(origin_key.encode()).digest()
    return digest[0] % HELDOUT_BUCKETS == 0


def split_pairs(
    prefs: Sequence[PreferenceRecord],
) -> tuple[list[PreferenceRecord], list[PreferenceRecord]]:
    """``(train, heldout)``: a stable fifth held out, at least one pair on each side.

    Raises:
        ModelDirError: fewer than two pairs (nothing to train on and measure with).
    """
    if len(prefs) < 2:
        raise ValueError(f"DPO needs at least 2 labelled pairs, found {len(prefs)}")
    train = [p for p in prefs if not is_heldout(p.origin_key)]
    held = [p for p in prefs if is_heldout(p.origin_key)]
    if not held:
        held, train = train[-1:], train[:-1]
    if not train:
        train, held = held[:1], held[1:]
    return train, held


def model_prompt(tokenizer: Any, prompt: str) -> str:
    """The text the model is trained on for a journaled prompt: chat messages through the
    tokenizer's chat template when it has one, plain text otherwise."""
    messages = prompt_messages(prompt)
    if messages is not None and getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return prompt_text(prompt)


def sequence_logps(
    model: Any, tokenizer: Any, prompts: Sequence[str], answers: Sequence[str], max_length: int
) -> list[float]:
    """Sum of log p(answer token | prompt, earlier tokens) per pair, answer closed by EOS (as
    TRL tokenizes a completion)."""
    import torch

    out = []
    model.eval()
    with torch.no_grad():
        for prompt, answer in zip(prompts, answers, strict=True):
            p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
            a_ids = tokenizer(answer, add_special_tokens=False)["input_ids"]
            if tokenizer.eos_token_id is not None:
                a_ids = [*a_ids, tokenizer.eos_token_id]
            ids = (p_ids + a_ids)[-max_length:]
            n_answer = min(len(a_ids), len(ids) - 1)
            x = torch.tensor([ids])
            logits = model(input_ids=x).logits[0, :-1].float()
            logp = torch.log_softmax(logits, dim=-1)
            targets = x[0, 1:]
            token_logp = logp.gather(1, targets[:, None])[:, 0]
            out.append(float(token_logp[-n_answer:].sum()))
    return out


def preference_accuracy(
    ref: tuple[list[float], list[float]], policy: tuple[list[float], list[float]], beta: float
) -> tuple[float, float]:
    """``(accuracy, mean margin)`` of implicit rewards; a tie counts one half."""
    (ref_c, ref_r), (pol_c, pol_r) = ref, policy
    margins = [
        beta * ((pc - rc) - (pr - rr))
        for rc, rr, pc, pr in zip(ref_c, ref_r, pol_c, pol_r, strict=True)
    ]
    if not margins:
        return math.nan, math.nan
    wins = sum(1.0 if m > 1e-12 else 0.5 if abs(m) <= 1e-12 else 0.0 for m in margins)
    return wins / len(margins), sum(margins) / len(margins)


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
    ``out_dir``. Call :func:`go_offline` first.

    Raises:
        ModelDirError: ``model_dir`` is not a model directory.
        ValueError: fewer than two pairs.
    """
    check_model_dir(model_dir)
    train, held = split_pairs(prefs)
    start = time.perf_counter()
    run = _Run(model_dir, out_dir, options, on_log)
    tokenizer, model = _load_model(run)
    h_texts = _texts(tokenizer, held)
    ref_logps = _pair_logps(model, tokenizer, h_texts, options.max_length)
    acc_before, margin_before = preference_accuracy(ref_logps, ref_logps, options.beta)

    trainer = _dpo_trainer(run, model, tokenizer, _texts(tokenizer, train))
    trainer.train()
    trainer.save_model(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))

    pol_logps = _pair_logps(trainer.model, tokenizer, h_texts, options.max_length)
    acc_after, margin_after = preference_accuracy(ref_logps, pol_logps, options.beta)
    history = trainer.state.log_history
    return DpoOutcome(
        n_train=len(train),
        n_heldout=len(held),
        accuracy_before=acc_before,
        accuracy_after=acc_after,
        margin_before=margin_before,
        margin_after=margin_after,
        loss_curve=_log_series(history, ("loss",)),
        reward_margins=_log_series(
            history, ("rewards/margins", "rewards/accuracies", "rewards/chosen", "rewards/rejected")
        ),
        elapsed_s=time.perf_counter() - start,
    )


def _load_model(run: _Run) -> tuple[Any, Any]:
    """``(tokenizer, model)`` from the model directory, seeded, with a pad token.

    Raises:
        ModelDirError: the directory holds no loadable causal language model.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(run.options.seed)
    try:
        tokenizer = AutoTokenizer.from_pretrained(run.model_dir, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(run.model_dir, local_files_only=True)
    except (OSError, ValueError) as err:
        raise ModelDirError(
            f"cannot load a causal language model from {run.model_dir}: {err}"
        ) from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer, model


def _texts(
    tokenizer: Any, rows: Sequence[PreferenceRecord]
) -> tuple[list[str], list[str], list[str]]:
    """``(prompts, chosen, rejected)`` of ``rows`` as the model sees them."""
    return (
        [model_prompt(tokenizer, p.prompt) for p in rows],
        [p.chosen for p in rows],
        [p.rejected for p in rows],
    )


def _pair_logps(
    model: Any, tokenizer: Any, texts: tuple[list[str], list[str], list[str]], max_length: int
) -> tuple[list[float], list[float]]:
    """Sequence log-probabilities of the chosen and of the rejected answers."""
    prompts, chosen, rejected = texts
    return (
        sequence_logps(model, tokenizer, prompts, chosen, max_length),
        sequence_logps(model, tokenizer, prompts, rejected, max_length),
    )


def _dpo_trainer(
    run: _Run, model: Any, tokenizer: Any, texts: tuple[list[str], list[str], list[str]]
) -> Any:
    """TRL's ``DPOTrainer`` on the training pairs, against a frozen reference or with LoRA."""
    from datasets import Dataset
    from transformers.trainer_callback import PrinterCallback
    from trl import DPOTrainer

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
    trainer = DPOTrainer(
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
    """The ``DPOConfig`` of the options: a log line per step, nothing saved or reported."""
    import torch
    from trl import DPOConfig

    options = run.options
    return DPOConfig(
        output_dir=str(run.out_dir),
        max_steps=options.max_steps,
        per_device_train_batch_size=min(options.batch_size, n_train),
        learning_rate=options.learning_rate,
        beta=options.beta,
        max_length=options.max_length,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=options.seed,
        use_cpu=not torch.cuda.is_available(),
        disable_tqdm=True,
        dataloader_num_workers=0,
    )


def _log_callback(on_log: Callable[[dict[str, Any]], None] | None) -> Any:
    """A Trainer callback handing each log dict, with its step, to ``on_log``."""
    from transformers import TrainerCallback

    class _Logs(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if on_log is not None and logs:
                on_log(dict(logs, step=state.global_step))

    return _Logs()
