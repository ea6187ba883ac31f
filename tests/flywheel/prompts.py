"""A research prompt as the proposal builder renders it, over a long made-up history, and a
byte-level tokenizer built on the spot (one token a byte, so lengths have an oracle)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alphaloop.knobs import BoundsClip, TrialConfig
from alphaloop.meta_agent.proposers import ProposalContext
from alphaloop.meta_agent.proposers.base import TrialView
from alphaloop.meta_agent.proposers.llm_prompt import messages_text, proposal_messages
from alphaloop.spec import Objective

BEST = 3  # the best trial is an old one, so "best" and "most recent" are different rows
CRASHED = (5, 9, 13)
CLIPPED = (2, 8, 14)
EOS = "<|endoftext|>"


def _view(idx: int) -> TrialView:
    config = TrialConfig(cvar_alpha=0.9 + idx / 1000, n_scenarios=2000 + 10 * idx)
    if idx in CRASHED:
        return TrialView(
            idx=idx, kind="search", status="crash", config=config,
            changes={"n_scenarios": 2000.0 + idx}, error=f"solver failed at trial {idx}",
        )  # fmt: skip
    clip = BoundsClip(
        knob="max_position_pct", proposed=0.5, applied=0.3, low=0.02, high=0.3,
        reason="above the upper bound",
    )  # fmt: skip
    clips = [clip] if idx in CLIPPED else []
    # Objectives rise with recency, except the old best: the top-trials table is the best and
    # the seven most recent scored trials.
    return TrialView(
        idx=idx,
        kind="baseline" if idx == 0 else "search",
        status="keep" if idx in (0, BEST) else "discard",
        config=config,
        changes={} if idx == 0 else {"cvar_alpha": 0.9 + idx / 1000},
        rationale=f"trial {idx}: a longer tail estimate should steady the solve",
        objective=2.0 if idx == BEST else 1.0 + idx / 100,
        metrics={"sharpe": 1.0, "annual_return": 0.1, "max_drawdown": 0.2},
        clips=clips,
    )


def research_prompt(n_trials: int = 20) -> str:
    """The journaled form (chat messages as JSON) of a proposal prompt after ``n_trials``."""
    views = [_view(i) for i in range(n_trials)]
    best = views[BEST]
    ctx = ProposalContext(
        session_id="s-fit",
        goal="maximise Sharpe",
        objective=Objective(),
        mode="cufolio_only",
        n_assets=20,
        budget_total=40,
        budget_left=40 - n_trials,
        noise_floor=0.05,
        best_config=best.config,
        best_objective=best.objective,
        history=views,
        seed=0,
    )
    return messages_text(proposal_messages(ctx, "You propose one bounded edit.", use_tools=True))


def byte_tokenizer() -> Any:
    """A byte-level tokenizer with no merges: every UTF-8 byte is one token, plus EOS."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([EOS])
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, pad_token=EOS)


def build_byte_model(path: Path, n_positions: int) -> Path:
    """A one-layer GPT-2 of context ``n_positions`` with :func:`byte_tokenizer`, saved."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer = byte_tokenizer()
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(tokenizer), n_positions=n_positions, n_embd=8, n_layer=1, n_head=1,
        bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id,
    )  # fmt: skip
    path.mkdir(parents=True, exist_ok=True)
    GPT2LMHeadModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
