"""A model shaped like SmolLM2-135M-Instruct, built on this machine: nothing is downloaded.

The architecture is SmolLM2-135M's (a Llama of 30 layers, width 576, 9 heads over 3 key-value
heads, MLP 1,536, vocabulary 49,152, 8,192 positions, tied embeddings), with random weights
saved in float32 as a GGUF dequantizes to. The tokenizer is a byte-level BPE of the same
vocabulary size trained here on Python's standard library and this project's docs and prompt
templates, with SmolLM2's ChatML chat template and special tokens. Its characters per token on
the research prompts are printed by the benchmark, so its sequence lengths can be read against
the real tokenizer's.

What it is for: the time DPO takes on a 135M model (the work per token is the architecture's,
whatever the weights). What it is not for: accuracy (the weights are noise).
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VOCAB = 49_152
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# SmolLM2-Instruct's template: ChatML, with its default system line when none is given.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def _corpus() -> list[str]:
    """Python's standard library (code and docstrings) and this project's prose."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    code = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts)
    prose = sorted([*(REPO / "docs").glob("*.md"), *(REPO / "alphaloop" / "prompts").glob("*.md")])
    texts = [p.read_text(encoding="utf-8", errors="ignore") for p in code]
    # The prose is small beside the code: weighed up so its words get merges of their own.
    return texts + [p.read_text(encoding="utf-8") for p in prose] * 5


def build_tokenizer() -> object:
    """A ``PreTrainedTokenizerFast`` with SmolLM2's vocabulary size, specials and template."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(_corpus(), vocab_size=VOCAB, min_frequency=2, special_tokens=SPECIAL)
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        unk_token="<|endoftext|>",
        pad_token="<|im_end|>",
        chat_template=CHAT_TEMPLATE,
        model_max_length=8192,
    )


def build(out: Path, seed: int = 0) -> Path:
    """The model directory at ``out`` (built once: an existing one is reused)."""
    if (out / "config.json").is_file():
        return out
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = build_tokenizer()
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        hidden_act="silu",
        max_position_embeddings=8192,
        initializer_range=0.041666666666666664,
        rms_norm_eps=1e-5,
        rope_theta=100_000.0,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.convert_tokens_to_ids("<|im_start|>"),
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).to(torch.float32)
    tmp = out.with_name(out.name + ".part")
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    tmp.rename(out)
    return out
