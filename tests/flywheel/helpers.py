"""Test helpers of the flywheel: a tiny GPT-2-style model built on the spot, decision rows
inserted as the portfolio manager journals them, and a separable preference set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from alphaloop.journal import Journal
from alphaloop.journal.codec import now

SENTENCES = [
    "Propose the target weights as a JSON object.",
    "The portfolio holds AAPL MSFT JPM XOM and cash.",
    '{"changes": {"learning_rate": 0.001}, "rationale": "calm and steady"}',
    '{"changes": {"ent_coef": 0.05}, "rationale": "wild and noisy"}',
    "good answer: calm steady diversified weights",
    "bad answer: wild noisy concentrated bets",
]


def build_tiny_model(path: Path, seed: int = 0) -> Path:
    """A 2-layer GPT-2 (n_embd 32) with a byte-level BPE tokenizer trained on a few sentences,
    saved to ``path`` (no download)."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        SENTENCES * 4, vocab_size=300, min_frequency=1, special_tokens=["<|endoftext|>", "<pad>"]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, eos_token="<|endoftext|>", pad_token="<pad>"
    )
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=256,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def separable_pairs(n: int) -> list[dict[str, Any]]:
    """``n`` pairs where the chosen answer is always the calm one, the rejected the wild one."""
    symbols = ["AAPL", "MSFT", "JPM", "XOM"]
    return [
        {
            "source": "research",
            "origin_key": f"test:{i}",
            "origin": {"i": i},
            "prompt": f"State {i}: holding {symbols[i % 4]}. Propose the next edit.",
            "chosen": "good answer: calm steady diversified weights",
            "rejected": "bad answer: wild noisy concentrated bets",
            "margin": 1.0,
            "labelled": True,
        }
        for i in range(n)
    ]


def add_book(journal: Journal, name: str = "main") -> None:
    stamp = now()
    with journal._write() as conn:
        conn.execute(
            "INSERT OR IGNORE INTO pm_books (name, broker, initial_cash, cash, positions, "
            "peak_equity, created_at, updated_at) VALUES (?, 'paper', 1e5, 1e5, '{}', 1e5, ?, ?)",
            (name, stamp, stamp),
        )


def add_decision(
    journal: Journal,
    *,
    date: str,
    symbols: list[str],
    pre: dict[str, float] | None,
    target: dict[str, float],
    book: str = "main",
    policy_id: int | None = None,
    status: str = "sent",
) -> int:
    """A decision row as the portfolio manager journals one (no verdict yet), with an order
    for each symbol whose weight it changes (none: a hold day)."""
    add_book(journal, book)
    held = pre or {}
    orders = [
        {"symbol": s, "shares": 1.0, "price": 1.0, "cost": 0.0}
        for s in symbols
        if target.get(s, 0.0) != held.get(s, 0.0)
    ]
    with journal._write() as conn:
        cur = conn.execute(
            "INSERT INTO decisions (book, date, policy_id, status, symbols, pre_weights, "
            "target_weights, orders, fills, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, '[]', ?)",
            (
                book,
                date,
                policy_id,
                status,
                json.dumps(symbols),
                None if pre is None else json.dumps(pre),
                json.dumps(target),
                json.dumps(orders),
                now(),
            ),
        )
        return int(cur.lastrowid)


HF_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HOME",
           "HF_DATASETS_CACHE", "HF_HUB_DISABLE_TELEMETRY", "TORCHINDUCTOR_CACHE_DIR",
           "XDG_CACHE_HOME", "XDG_CONFIG_HOME")  # fmt: skip
# Switches training sets only when unset (removed here so the default is what runs).
HF_SWITCHES = ("HF_HUB_DISABLE_PROGRESS_BARS", "HF_DATASETS_DISABLE_PROGRESS_BARS")


def isolate_hf(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The Hugging Face variables training writes, set (or removed) through ``env`` so that
    what training writes into ``os.environ`` is undone afterwards."""
    for name in HF_VARS:
        env.setenv(name, str(tmp_path / "unused"))
    for name in HF_SWITCHES:
        env.delenv(name, raising=False)
