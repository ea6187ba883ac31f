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

:func:`answers_logps` is that computation on tokens, with or without gradients: the held-out
scoring runs it under ``no_grad``, a DPO step (:mod:`.shared_prompt`) with them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

# Answers scored on one run of their prompt: each holds its own copy of the prompt's keys and
# values (tens of MB at a thousand tokens on a 135M model), so many answers to one prompt are
# scored a few at a time, the prompt run again for each few.
ANSWERS_PER_RUN = 8


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
    """Sum of log-softmax(logits)[i, targets[i]]."""
    return float(_log_softmax(logits).gather(1, targets[:, None])[:, 0].sum())


def _log_softmax(logits: Any) -> Any:
    """Log-probabilities over the vocabulary, in float32 at least (half-precision logits of
    a mixed-precision step are widened; a float64 model's stay float64)."""
    import torch

    return torch.log_softmax(logits.to(torch.promote_types(logits.dtype, torch.float32)), dim=-1)


def _whole_logp(model: Any, prompt: Any, answer: Any) -> Any:
    """``log p(answer | prompt)``, the prompt and the answer run as one sequence."""
    import torch

    logits = model(input_ids=torch.cat([prompt, answer])[None], logits_to_keep=len(answer) + 1)
    logp = _log_softmax(logits.logits[0, :-1])
    return logp.gather(-1, answer[:, None])[:, 0].sum()


def answers_logps(model: Any, prompt: Any, answers: Sequence[Any]) -> Any:
    """``log p(answer | prompt)`` of each answer, as a tensor: the prompt and the answers are
    1-D token tensors (none empty), the prompt run once.

    The first answer token is scored on the prompt's last position; the rest run as one batch
    on top of the prompt's keys and values (right-padded, the padding masked out). A model
    that keeps no keys and values has each answer run whole.
    """
    import torch

    run = model(input_ids=prompt[None], use_cache=True, logits_to_keep=1)
    key, cache = cache_of(run)
    if cache is None:
        return torch.stack([_whole_logp(model, prompt, a) for a in answers])
    first = _log_softmax(run.logits[0, -1])
    total = first[torch.stack([a[0] for a in answers])]
    longest = max(len(a) for a in answers)
    if longest == 1:
        return total
    k, width = len(answers), longest - 1
    inputs = torch.zeros((k, width), dtype=prompt.dtype)
    targets = torch.zeros((k, width), dtype=prompt.dtype)
    real = torch.zeros((k, width), dtype=torch.long)
    for i, a in enumerate(answers):
        inputs[i, : len(a) - 1], targets[i, : len(a) - 1], real[i, : len(a) - 1] = a[:-1], a[1:], 1
    if k > 1:
        cache.batch_repeat_interleave(k)
    attention = torch.cat([torch.ones((k, len(prompt)), dtype=torch.long), real], dim=1)
    rest = model(
        input_ids=inputs,
        attention_mask=attention,
        use_cache=True,
        logits_to_keep=width,
        **{key: cache},
    )
    logp = _log_softmax(rest.logits)
    return total + (logp.gather(-1, targets[..., None])[..., 0] * real).sum(dim=1)


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
            if not p_ids or any(not a or len(p_ids) + len(a) > max_length for _, a in tokens):
                # an empty or too long sequence: scored whole, its oldest tokens cut
                for i in rows:
                    out[i] = sequence_logps_whole(
                        model, tokenizer, [prompt], [answers[i]], max_length
                    )[0]
                continue
            for start in range(0, len(rows), ANSWERS_PER_RUN):
                few = range(start, min(start + ANSWERS_PER_RUN, len(rows)))
                logps = answers_logps(
                    model, torch.tensor(p_ids), [torch.tensor(tokens[k][1]) for k in few]
                )
                for k, logp in zip(few, logps.tolist(), strict=True):
                    out[rows[k]] = logp
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
