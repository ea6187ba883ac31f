"""Log-probabilities of answers given their prompts, as the held-out evaluation of a DPO run
scores them, computed once per distinct prompt.

A pair's chosen and rejected answers share their prompt, and research pairs from one state
share it with each other; the prompt is most of each sequence (a research prompt runs to
thousands of tokens, an answer to tens). So each distinct prompt is run through the model once,
its keys and values kept, and each of its answers scored on top of them: the same numbers as
running every prompt-and-answer sequence whole (:func:`sequence_logps_whole`, the reference the
tests hold this to), for about half the work of a pair and less where prompts repeat. Only the
answer positions are projected onto the vocabulary (``logits_to_keep``): a prompt's positions
would cost a ``(tokens, vocabulary)`` matrix each to be thrown away.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Sequence
from typing import Any


def _ids(tokenizer: Any, prompt: str, answer: str) -> tuple[list[int], list[int]]:
    """Prompt and answer tokens as TRL tokenizes a pair: the answer closed by EOS."""
    p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    a_ids = tokenizer(answer, add_special_tokens=False)["input_ids"]
    if tokenizer.eos_token_id is not None:
        a_ids = [*a_ids, tokenizer.eos_token_id]
    return p_ids, a_ids


def cache_of(output: Any) -> tuple[str, Any]:
    """The keys and values a forward with ``use_cache`` kept, and the name a forward takes
    them back by: ``cache`` in transformers 5, ``past_key_values`` before."""
    key = "cache" if getattr(output, "cache", None) is not None else "past_key_values"
    return key, getattr(output, key)


def _answer_logp(logits: Any, targets: Any) -> float:
    """Sum of log-softmax(logits)[i, targets[i]] (logits in float32)."""
    import torch

    logp = torch.log_softmax(logits.float(), dim=-1)
    return float(logp.gather(1, targets[:, None])[:, 0].sum())


def sequence_logps(
    model: Any, tokenizer: Any, prompts: Sequence[str], answers: Sequence[str], max_length: int
) -> list[float]:
    """Sum of log p(answer token | prompt, earlier tokens) per pair, the answer closed by EOS
    (as TRL tokenizes a completion); a sequence longer than ``max_length`` loses its oldest
    tokens first, as :func:`sequence_logps_whole` does."""
    import torch

    out = [0.0] * len(prompts)
    by_prompt: dict[str, list[int]] = defaultdict(list)
    for i, prompt in enumerate(prompts):
        by_prompt[prompt].append(i)
    model.eval()
    with torch.no_grad():
        for prompt, rows in by_prompt.items():
            tokens = [_ids(tokenizer, prompt, answers[i]) for i in rows]
            p_ids = tokens[0][0]
            fits = [
                i
                for i, (_, a) in zip(rows, tokens, strict=True)
                if len(p_ids) + len(a) <= max_length
            ]
            if not p_ids or len(fits) < len(rows):  # an empty or too long prompt: scored whole
                for i in rows:
                    out[i] = sequence_logps_whole(
                        model, tokenizer, [prompt], [answers[i]], max_length
                    )[0]
                continue
            run = model(input_ids=torch.tensor([p_ids]), use_cache=True, logits_to_keep=1)
            key, cache = cache_of(run)
            first = run.logits[0, -1:]
            for k, (i, (_, a_ids)) in enumerate(zip(rows, tokens, strict=True)):
                total = _answer_logp(first, torch.tensor(a_ids[:1]))
                if len(a_ids) > 1:
                    # The model appends the answer to the cache it is given: the prompt's is
                    # copied for every answer but the last.
                    past = cache if k == len(rows) - 1 else copy.deepcopy(cache)
                    rest = model(
                        input_ids=torch.tensor([a_ids[:-1]]),
                        use_cache=True,
                        logits_to_keep=len(a_ids) - 1,
                        **{key: past},
                    )
                    total += _answer_logp(rest.logits[0], torch.tensor(a_ids[1:]))
                out[i] = total
    return out


def sequence_logps_whole(
    model: Any, tokenizer: Any, prompts: Sequence[str], answers: Sequence[str], max_length: int
) -> list[float]:
    """:func:`sequence_logps`, each prompt-and-answer sequence run whole: the reference."""
    import torch

    out = []
    model.eval()
    with torch.no_grad():
        for prompt, answer in zip(prompts, answers, strict=True):
            p_ids, a_ids = _ids(tokenizer, prompt, answer)
            ids = (p_ids + a_ids)[-max_length:]
            n_answer = min(len(a_ids), len(ids) - 1)
            x = torch.tensor([ids])
            logits = model(input_ids=x, logits_to_keep=n_answer + 1).logits[0, :-1]
            out.append(_answer_logp(logits, x[0, -n_answer:]))
    return out
