"""DPO with TRL on a tiny GPT-2 built in the test: held-out preference accuracy rises above
its starting value, and the run is journaled."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from alphaloop.exceptions import InvalidRequest
from alphaloop.journal import Journal
from alphaloop.ops.dpo import DpoOptions, dpo_check, list_dpo_runs, train_dpo
from alphaloop.settings import Settings

from .helpers import build_tiny_model, separable_pairs


def _few_heldout(settings: Settings) -> Settings:
    """The settings with a minimum of one held-out pair: these runs are about training, on
    fewer pairs than an accuracy is reported on by default."""
    return settings.model_copy(update={"dpo_min_heldout": 1})


def _journal_pairs(settings: Settings, n: int) -> None:
    with Journal(settings.journal_path) as journal:
        for pair in separable_pairs(n):
            journal.preferences.add(**pair)


@pytest.mark.slow
def test_dpo_raises_heldout_accuracy(settings: Settings, tmp_path: Path) -> None:
    model = build_tiny_model(tmp_path / "tiny")
    _journal_pairs(settings, 20)
    out = tmp_path / "out"
    options = DpoOptions(max_steps=6, learning_rate=5e-3, seed=0)
    run = train_dpo(_few_heldout(settings), model, out, options)
    assert run.status == "finished"
    assert run.n_train + run.n_heldout == 20 and run.n_heldout >= 1
    assert run.accuracy_before == 0.5  # policy == reference: every implicit reward ties
    assert run.margin_before == 0.0
    assert run.accuracy_after == 1.0 > run.accuracy_before
    assert run.margin_after > 0
    # The interval of the held-out accuracy, and the lengths: the tiny model's context is 256.
    assert run.accuracy_after_low < run.accuracy_after <= run.accuracy_after_high
    assert run.max_length == 256 and 0 < run.lengths["sequence_max"] <= 256
    assert run.lengths["pairs_cut"] == 0
    assert len(run.loss_curve) == 6
    assert run.loss_curve[-1]["loss"] < run.loss_curve[0]["loss"]
    # the step's reward entries, journaled: one a step, the first at policy == reference
    margins = list_dpo_runs(settings)[0].reward_margins
    assert [m["step"] for m in margins] == [1, 2, 3, 4, 5, 6]
    assert margins[0]["rewards/margins"] == 0.0 < margins[-1]["rewards/margins"]
    assert 0 <= margins[-1]["rewards/accuracies"] <= 1
    assert (out / "config.json").is_file() and (out / "tokenizer.json").is_file()
    assert list_dpo_runs(settings)[0].id == run.id


@pytest.mark.slow
def test_dpo_lora_writes_an_adapter(settings: Settings, tmp_path: Path) -> None:
    model = build_tiny_model(tmp_path / "tiny")
    _journal_pairs(settings, 10)
    out = tmp_path / "adapter"
    options = DpoOptions(lora=True, max_steps=4, learning_rate=1e-2)
    run = train_dpo(_few_heldout(settings), model, out, options)
    assert run.status == "finished" and run.lora
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["peft_type"] == "LORA"


def test_not_a_model_dir_is_refused(settings: Settings, tmp_path: Path) -> None:
    _journal_pairs(settings, 4)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidRequest, match=r"no config\.json"):
        train_dpo(settings, tmp_path / "empty", tmp_path / "out")
    assert list_dpo_runs(settings) == []  # refused before a run was journaled


def test_check_skips_below_min_pairs(settings: Settings, tmp_path: Path) -> None:
    _journal_pairs(settings, 3)
    check = dpo_check(settings, tmp_path / "model")
    assert not check.trained and check.new_pairs == 3 and check.min_pairs == 32
    assert check.run.status == "skipped" and "fewer than the 32" in check.run.reason


def _float64_dpo(tmp_path: Path, lora: bool) -> tuple[Any, Any, DpoOptions]:
    """A tiny float64 model, the separable pairs' texts and options for two steps of 3."""
    import torch
    from transformers import AutoModelForCausalLM

    model_dir = build_tiny_model(tmp_path / "tiny")
    AutoModelForCausalLM.from_pretrained(model_dir).to(torch.float64).save_pretrained(model_dir)
    pairs = separable_pairs(6)
    texts = tuple([p[k] for p in pairs] for k in ("prompt", "chosen", "rejected"))
    options = DpoOptions(lora=lora, max_steps=2, learning_rate=1e-2, batch_size=3, max_length=256)
    return model_dir, texts, options


def _trainer(model_dir: Path, out: Path, texts: Any, options: DpoOptions) -> Any:
    from alphaloop.flywheel import dpo

    run = dpo._Run(model_dir, out, options, None)
    return dpo._dpo_trainer(run, dpo._load_model(run), dpo._load_tokenizer(run), texts)


@pytest.mark.slow
@pytest.mark.parametrize("lora", [False, True], ids=["reference-model", "lora"])
def test_the_shared_prompt_loss_and_gradients_are_the_whole_sequences(
    tmp_path: Path, lora: bool
) -> None:
    # The oracle: each collated row run whole, in float64, the DPO loss written out.
    import contextlib

    import torch
    import torch.nn.functional as F

    model_dir, texts, options = _float64_dpo(tmp_path, lora)
    trainer = _trainer(model_dir, tmp_path / "out", texts, options)
    assert trainer._shared
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(3)])  # 3 prompts
    model = trainer.model
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    ours = trainer.compute_loss(model, batch)

    def logps(m: Any) -> torch.Tensor:
        ids, answer = batch["input_ids"], batch["completion_mask"][:, 1:]
        logits = m(input_ids=ids, attention_mask=batch["attention_mask"]).logits[:, :-1]
        token = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:, None])[..., 0]
        return (token * answer).sum(dim=1)

    off = model.disable_adapter() if lora else contextlib.nullcontext()
    with torch.no_grad(), off:
        ref = logps(trainer.ref_model if trainer.ref_model is not None else model)
    ratio = logps(model) - ref
    whole = -F.logsigmoid(options.beta * (ratio[:3] - ratio[3:])).mean()
    assert ours.dtype == torch.float64
    assert ours.item() == pytest.approx(whole.item(), rel=1e-12)
    for mine, oracle in zip(
        torch.autograd.grad(ours, params), torch.autograd.grad(whole, params), strict=True
    ):
        torch.testing.assert_close(mine, oracle, rtol=1e-9, atol=1e-13)


@pytest.mark.slow
def test_answers_of_a_model_that_keeps_no_cache_run_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    from alphaloop.flywheel import scoring

    model_dir, _, _ = _float64_dpo(tmp_path, lora=False)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    prompt, answers = torch.arange(3, 12), (torch.tensor([5, 7, 2]), torch.tensor([9]))
    shared = scoring.answers_logps(model, prompt, answers)
    monkeypatch.setattr(scoring, "cache_of", lambda run: ("cache", None))
    whole = scoring.answers_logps(model, prompt, answers)
    torch.testing.assert_close(whole, shared, rtol=1e-12, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("change", ["ipo", "checkpointed"])
def test_other_setups_take_trls_own_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    import dataclasses

    from trl import DPOConfig, DPOTrainer

    from alphaloop.flywheel import dpo

    changes = {
        "ipo": {"loss_type": ["ipo"]},
        "checkpointed": {dpo._checkpointing_field(DPOConfig): True},
    }[change]
    model_dir, texts, options = _float64_dpo(tmp_path, lora=True)
    config = dpo._dpo_config
    monkeypatch.setattr(
        dpo, "_dpo_config", lambda r, n: dataclasses.replace(config(r, n), **changes)
    )
    trainer = _trainer(model_dir, tmp_path / "out", texts, options)
    assert not trainer._shared
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(3)])
    trainer.model.train()
    ours = trainer.compute_loss(trainer.model, batch)
    theirs = DPOTrainer.compute_loss(trainer, trainer.model, batch)
    assert ours.detach().item() == theirs.detach().item()


@pytest.mark.slow
@pytest.mark.parametrize("lora", [False, True], ids=["reference-model", "lora"])
def test_a_run_with_the_shared_prompt_step_follows_trls_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lora: bool
) -> None:
    # TRL's DPOTrainer itself, from the same model, config and seed. Its log-probabilities come
    # from its float32 LM head, so the runs agree to float32's rounding, not float64's: the
    # first step's gradient to ~6e-4 (the chosen and rejected gradients nearly cancel), and
    # after Adam's first update (it moves components of ~1e-8 gradient by what their last bits
    # say) the loss to ~5e-4 and the rewards to ~4e-4. The oracle test (above) holds the loss
    # and gradients to float64's.
    from trl import DPOTrainer

    from alphaloop.flywheel import shared_prompt

    model_dir, texts, options = _float64_dpo(tmp_path, lora)
    ours = _trainer(model_dir, tmp_path / "ours", texts, options)
    ours.train()
    monkeypatch.setattr(shared_prompt, "SharedPromptDPOTrainer", DPOTrainer)
    theirs = _trainer(model_dir, tmp_path / "theirs", texts, options)
    assert type(theirs) is DPOTrainer
    theirs.train()
    (mine_1, mine_2), (their_1, their_2) = (
        [e for e in t.state.log_history if "loss" in e] for t in (ours, theirs)
    )
    assert mine_1["loss"] == pytest.approx(np.log(2.0))  # policy == reference
    # the step's gradient: the accumulated micro-batches' loss scaled as TRL's is
    for key in ("grad_norm", "logps/chosen", "logps/rejected"):
        assert mine_1[key] == pytest.approx(their_1[key], rel=1e-3), key
    for key in ("loss", "rewards/margins", "rewards/chosen", "rewards/rejected"):
        assert mine_2[key] == pytest.approx(their_2[key], rel=1e-2, abs=1e-3), key
    assert mine_2["rewards/margins"] > 0.1  # the first step moved the pairs apart


@pytest.mark.slow
def test_a_step_taking_its_pairs_one_at_a_time_is_trls_step_of_the_whole_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reference: the step over the whole batch at once (no accumulation), from the same
    # model and seed, in float64 so that the comparison sees the arithmetic, not float32's
    # rounding (which the chosen and rejected gradients' near cancellation magnifies to ~1e-4).
    import dataclasses

    import torch

    from alphaloop.flywheel import dpo

    model_dir, texts, options = _float64_dpo(tmp_path, lora=False)

    def trained(out: str) -> tuple[dict[str, torch.Tensor], list[dict]]:
        trainer = _trainer(model_dir, tmp_path / out, texts, options)
        trainer.train()
        return dict(trainer.model.named_parameters()), trainer.state.log_history

    ours, our_logs = trained("ours")
    assert ours and our_logs[0]["loss"] == pytest.approx(np.log(2.0))  # policy == reference
    step = dpo._dpo_config
    monkeypatch.setattr(
        dpo,
        "_dpo_config",
        lambda run, n: dataclasses.replace(
            step(run, n), per_device_train_batch_size=3, gradient_accumulation_steps=1
        ),
    )
    whole, whole_logs = trained("whole")
    for key in ("loss", "grad_norm", "rewards/margins"):
        assert [e[key] for e in our_logs if key in e] == pytest.approx(
            [e[key] for e in whole_logs if key in e], rel=1e-7
        ), key
    # Adam divides by the gradient's size, so components of ~1e-8 (near its epsilon) move by
    # what their last bits say: up to ~5e-8 here, against weights of ~0.02 moved by ~1e-2.
    for name, value in whole.items():
        torch.testing.assert_close(ours[name], value, rtol=1e-5, atol=1e-6, msg=name)
