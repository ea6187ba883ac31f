"""Held-out scoring runs each distinct prompt once and scores its answers on its keys and
values: the same numbers as scoring every prompt-and-answer sequence whole, by hand, on a
GPT-2 (learned positions) and a Llama (rotary positions, grouped key-value heads)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .helpers import build_tiny_model

PROMPTS = [
    "State 1: holding AAPL. Propose the next edit.",
    "State 2: holding MSFT and JPM. Propose the next edit, as a JSON object.",
]
ANSWERS = [
    "good answer: calm steady diversified weights",
    "bad answer: wild noisy concentrated bets",
    '{"changes": {"learning_rate": 0.001}, "rationale": "calm and steady"}',
]


def by_hand(model: Any, tokenizer: Any, prompt: str, answer: str, max_length: int) -> float:
    """log p(answer + EOS | prompt) from the full logits of the whole sequence."""
    import torch

    p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    a_ids = [*tokenizer(answer, add_special_tokens=False)["input_ids"], tokenizer.eos_token_id]
    ids = (p_ids + a_ids)[-max_length:]
    n = min(len(a_ids), len(ids) - 1)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0]
    logp = torch.log_softmax(logits.double(), dim=-1)
    return float(sum(logp[t - 1, ids[t]] for t in range(len(ids) - n, len(ids))))


def llama(path: Path) -> Path:
    """The tiny model's tokenizer on a 2-layer Llama with rotary positions and 2 key-value
    heads for 4 query heads."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    gpt2 = build_tiny_model(path.with_name(path.name + "-tok"))
    tokenizer = AutoTokenizer.from_pretrained(gpt2)
    torch.manual_seed(1)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )  # fmt: skip
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.mark.parametrize("per_run", [8, 2], ids=["all-answers-at-once", "two-at-a-time"])
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_each_prompt_once_gives_the_whole_sequence_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, arch: str, per_run: int
) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from alphaloop.flywheel import scoring

    monkeypatch.setattr(scoring, "ANSWERS_PER_RUN", per_run)  # 3 answers a prompt below

    path = build_tiny_model(tmp_path / "m") if arch == "gpt2" else llama(tmp_path / "m")
    model = AutoModelForCausalLM.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    # Each prompt with every answer, interleaved: prompts repeat, out of order.
    prompts = [PROMPTS[i % 2] for i in range(6)]
    answers = [ANSWERS[i % 3] for i in range(6)]
    got = scoring.sequence_logps(model, tokenizer, prompts, answers, max_length=256)
    expected = [by_hand(model, tokenizer, p, a, 256) for p, a in zip(prompts, answers, strict=True)]
    assert got == pytest.approx(expected, rel=1e-5, abs=1e-4)
    assert len(set(expected)) == 6  # six different numbers: the order is the pairs' own

    # Past max_length the oldest tokens go first, as whole-sequence scoring does.
    short = scoring.sequence_logps(model, tokenizer, prompts[:2], answers[:2], max_length=12)
    expected = [by_hand(model, tokenizer, p, a, 12) for p, a in zip(prompts, answers, strict=False)]
    assert short == pytest.approx(expected[:2], rel=1e-5, abs=1e-4)
