"""Pairs measured in the model's own tokens and fitted to its ``max_length`` before DPO.

TRL's ``DPOTrainer`` tokenizes ``prompt + answer + EOS`` with the model's tokenizer, drops a
pair whose prompt alone fills ``max_length`` and cuts the end of the rest. Either way the
model is trained on something else than the pair. So each pair is measured here exactly as TRL
will tokenize it, its prompt fitted (:func:`~alphaloop.flywheel.fit.fit_prompt`) until the
prompt and its longer answer fit, and a pair that still does not fit stops the run before any
training (:class:`~alphaloop.exceptions.InvalidRequest`), naming the lengths and the limit.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from alphaloop.exceptions import InvalidRequest
from alphaloop.flywheel.export import prompt_messages, prompt_text
from alphaloop.flywheel.fit import Fitted, context_length, fit_prompt
from alphaloop.journal.preferences import PreferenceRecord

# (prompts as the model reads them, chosen answers, rejected answers)
Texts = tuple[list[str], list[str], list[str]]
NAMED = 5  # pairs named in a too-long error, longest first


def model_prompt(tokenizer: Any, prompt: str) -> str:
    """The text the model is trained on for a journaled prompt: chat messages through the
    tokenizer's chat template when it has one, plain text otherwise."""
    messages = prompt_messages(prompt)
    if messages is not None and getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return prompt_text(prompt)


def _model_context_length(model_dir: Path) -> int | None:
    """The context length ``model_dir/config.json`` names (read as JSON: no library loads)."""
    try:
        config = json.loads((Path(model_dir) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(config, Mapping):
        return None
    return context_length(config) or context_length(config.get("text_config") or {})


def resolve_max_length(requested: int | None, model_dir: Path) -> int:
    """``requested``, or the model's own context length when None.

    Raises:
        InvalidRequest: no length requested and the config names none, or a requested length
            longer than the model's context (its position embeddings stop there).
    """
    context = _model_context_length(model_dir)
    if requested is None:
        if context is None:
            raise InvalidRequest(
                f"{model_dir}/config.json names no context length (max_position_embeddings); "
                "pass --max-length or set ALPHALOOP_DPO_MAX_LENGTH"
            )
        return context
    if context is not None and requested > context:
        raise InvalidRequest(
            f"max_length {requested} is longer than the model's context length {context} "
            f"(max_position_embeddings in {model_dir}/config.json)"
        )
    return requested


def _sequence_length(tokenizer: Any, answers: Sequence[str]) -> Any:
    """The length function :func:`fit_prompt` bisects on: the tokens of the model prompt and
    the longer answer, as TRL tokenizes them (the answer closed by EOS)."""
    eos = tokenizer.eos_token or ""
    closed = [a if a.endswith(eos) else a + eos for a in answers]

    def length(prompt: str) -> int:
        text = model_prompt(tokenizer, prompt)
        return max(len(tokenizer(text + a)["input_ids"]) for a in closed)

    return length


def fit_pairs(
    tokenizer: Any, rows: Sequence[PreferenceRecord], max_length: int
) -> tuple[Texts, dict[str, float]]:
    """``rows`` as the model is trained on them, each prompt fitted to ``max_length``, and the
    lengths measured (model prompt tokens after fitting, the longest sequence, and how many
    pairs and history entries were cut).

    Raises:
        InvalidRequest: a pair whose prompt and answer do not fit even with its history cut.
    """
    fitted: list[Fitted] = [
        fit_prompt(p.prompt, _sequence_length(tokenizer, (p.chosen, p.rejected)), max_length)
        for p in rows
    ]
    too_long = [(p, f) for p, f in zip(rows, fitted, strict=True) if f.length > max_length]
    if too_long:
        raise InvalidRequest(_too_long_message(too_long, len(rows), max_length))
    prompts = [model_prompt(tokenizer, f.prompt) for f in fitted]
    tokens = [len(tokenizer(text)["input_ids"]) for text in prompts]
    lengths = {
        "prompt_min": float(min(tokens, default=0)),
        "prompt_median": float(statistics.median(tokens)) if tokens else 0.0,
        "prompt_max": float(max(tokens, default=0)),
        "sequence_max": float(max((f.length for f in fitted), default=0)),
        "pairs_cut": float(sum(1 for f in fitted if f.cut)),
        "entries_cut": float(sum(f.cut for f in fitted)),
    }
    return (prompts, [p.chosen for p in rows], [p.rejected for p in rows]), lengths


def _too_long_message(
    too_long: list[tuple[PreferenceRecord, Fitted]], n_pairs: int, max_length: int
) -> str:
    worst = sorted(too_long, key=lambda pf: -pf[1].length)
    named = ", ".join(f"pair {p.id}: {f.length}" for p, f in worst[:NAMED])
    more = f" and {len(worst) - NAMED} more" if len(worst) > NAMED else ""
    return (
        f"{len(too_long)} of {n_pairs} pair(s) do not fit max_length {max_length} tokens "
        f"(prompt and longer answer, in the model's tokenizer) even with their older history "
        f"cut: {named}{more} tokens. TRL would drop them or cut their answers, so nothing was "
        "trained. Raise --max-length (ALPHALOOP_DPO_MAX_LENGTH; at most the model's context "
        "length) or train a model with a longer context"
    )
