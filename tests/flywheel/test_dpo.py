"""DPO with TRL on a tiny GPT-2 built in the test: held-out preference accuracy rises above
its starting value, and the run is journaled."""

from __future__ import annotations

import json
from pathlib import Path

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


@pytest.mark.slow
def test_a_step_taking_its_pairs_one_at_a_time_is_trls_step_of_the_whole_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reference: TRL's own step over the batch in one forward, from the same model and seed.
    import dataclasses

    import torch
    from transformers import AutoModelForCausalLM

    from alphaloop.flywheel import dpo

    model_dir = build_tiny_model(tmp_path / "tiny")
    # In float64, so that the comparison sees the arithmetic, not float32's rounding (which
    # the chosen and rejected gradients' near cancellation magnifies to ~1e-4).
    AutoModelForCausalLM.from_pretrained(model_dir).to(torch.float64).save_pretrained(model_dir)
    pairs = separable_pairs(6)
    texts = tuple([p[k] for p in pairs] for k in ("prompt", "chosen", "rejected"))
    options = DpoOptions(max_steps=2, learning_rate=1e-2, batch_size=3, max_length=256)

    def trained(out: str) -> tuple[dict[str, torch.Tensor], list[dict]]:
        run = dpo._Run(model_dir, tmp_path / out, options, None)
        trainer = dpo._dpo_trainer(run, dpo._load_model(run), dpo._load_tokenizer(run), texts)
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
