"""Research prompts cut to fit a model's context, oldest history first.

A proposal prompt (``alphaloop/prompts/propose.md``) holds the goal, the knob table, the top
trials by objective, the recent failures and the recent clips. DPO trains on prompt + answer
sequences of at most ``max_length`` tokens, and TRL drops a pair whose prompt alone fills it.
:func:`fit_prompt` shortens a prompt that is too long by cutting history entries, the oldest
trial first (by trial index, across the three history sections), and leaves a note in each
section it cut from saying how many entries went. What stays, whatever the limit:

- everything outside the three history sections (the system prompt, the goal, the knob table
  with the current best config, the budget, the instruction);
- the best trial (the last row of the top-trials table, which is sorted ascending).

So a fitted prompt keeps the knob table and the best and most recent trials, which are what a
proposer edits from. A prompt that still does not fit is left for the caller to refuse.

Cutting works on the rendered text, not on the journal, so a prompt journaled by an earlier
version (or rendered for a TPE proposal) is fitted the same way, and the research loop's own
prompt builder is left as it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from alphaloop.flywheel.export import prompt_messages

TOP_TRIALS = "## Top trials by objective"
FAILURES = "## Recent failures"
CLIPS = "## Recent clips"
HISTORY_SECTIONS = (TOP_TRIALS, FAILURES, CLIPS)
_ENTRY = {
    TOP_TRIALS: re.compile(r"^\|\s*(\d+)\s*\|"),
    FAILURES: re.compile(r"^- trial (\d+)\b"),
    CLIPS: re.compile(r"^- trial (\d+)\b"),
}
_NOUN = {TOP_TRIALS: "trial(s)", FAILURES: "failure(s)", CLIPS: "clip(s)"}
# Config attributes that name a model's context length, most common first.
CONTEXT_FIELDS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")


@dataclass(frozen=True)
class Fitted:
    """A prompt after fitting: in its journaled form, its length, and how many history entries
    (table rows, failure and clip lines) were cut from it."""

    prompt: str
    length: int
    cut: int


@dataclass(frozen=True)
class _Entry:
    """A cuttable line: which message and line it is, and the trial it is about."""

    message: int
    line: int
    section: str
    trial: int


def context_length(config: Mapping[str, Any]) -> int | None:
    """A model's own context length from its config (``max_position_embeddings`` and the
    like, as in ``config.json``), or None when the config names none."""
    for name in CONTEXT_FIELDS:
        value = config.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _contents(prompt: str) -> tuple[list[dict[str, str]] | None, list[str]]:
    messages = prompt_messages(prompt)
    if messages is None:
        return None, [prompt]
    return messages, [m["content"] for m in messages]


def _entries(texts: list[list[str]]) -> list[_Entry]:
    """Every cuttable line, oldest trial first; the best trial (the top table's last row) is
    not one of them."""
    found: list[_Entry] = []
    for m, lines in enumerate(texts):
        section = None
        for i, line in enumerate(lines):
            if line.startswith("## "):
                section = next((s for s in HISTORY_SECTIONS if line.startswith(s)), None)
                continue
            match = _ENTRY[section].match(line) if section else None
            if match:
                found.append(_Entry(m, i, section, int(match.group(1))))
    # The best trial is the last row of a top-trials table (one table per message at most).
    best = {}
    for e in found:
        if e.section == TOP_TRIALS:
            best[e.message] = e.line
    kept = [e for e in found if best.get(e.message) != e.line or e.section != TOP_TRIALS]
    return sorted(kept, key=lambda e: (e.trial, e.message, e.line))


def _cut(texts: list[list[str]], drop: list[_Entry]) -> list[str]:
    """The texts without the ``drop`` lines, with a note in each section cut from."""
    gone = {(e.message, e.line) for e in drop}
    counts: dict[tuple[int, str], int] = {}
    for e in drop:
        counts[(e.message, e.section)] = counts.get((e.message, e.section), 0) + 1
    out = []
    for m, lines in enumerate(texts):
        kept: list[str] = []
        section = None
        for i, line in enumerate(lines):
            if line.startswith("## "):
                section = next((s for s in HISTORY_SECTIONS if line.startswith(s)), None)
                kept.append(line)
                n = counts.get((m, section or ""), 0)
                if n:
                    noun = _NOUN[section]  # type: ignore[index]
                    kept.append(f"({n} older {noun} cut to fit the model's context)")
                continue
            if (m, i) not in gone:
                kept.append(line)
        out.append("\n".join(kept))
    return out


def _render(prompt: str, texts: list[list[str]], drop: list[_Entry]) -> str:
    messages, _ = _contents(prompt)
    contents = _cut(texts, drop)
    if messages is None:
        return contents[0]
    return json.dumps(
        [{**m, "content": c} for m, c in zip(messages, contents, strict=True)],
        ensure_ascii=False,
    )


def fit_prompt(prompt: str, length: Callable[[str], int], limit: int) -> Fitted:
    """``prompt`` (plain text or journaled chat messages) with its oldest history cut until
    ``length(prompt) <= limit``, or with all but the best trial cut when nothing shorter fits.

    Args:
        prompt: the journaled prompt.
        length: the length of a prompt in the model's tokens, as it will be trained on (with
            its chat template and its longer answer).
        limit: the longest length allowed.
    """
    n = length(prompt)
    if n <= limit:
        return Fitted(prompt, n, 0)
    texts = [content.split("\n") for content in _contents(prompt)[1]]
    entries = _entries(texts)
    # Fewest cut entries that fit, oldest first. A linear walk, not a bisection: cutting one
    # short line adds a note, so the length does not always fall as more is cut.
    for k in range(1, len(entries) + 1):
        text = _render(prompt, texts, entries[:k])
        n = length(text)
        if n <= limit or k == len(entries):
            return Fitted(text, n, k)
    return Fitted(prompt, n, 0)  # nothing to cut
