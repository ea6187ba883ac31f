"""Pairs as TRL's standard preference format: one JSON object a line with ``prompt``,
``chosen`` and ``rejected`` text (what ``DPOTrainer`` and ``datasets.load_dataset("json")``
read).

A prompt journaled as chat messages (a JSON list of ``{"role", "content"}``, what an LLM
proposal stores) is written as plain text, the messages' contents in order separated by blank
lines, so every line of a file has the same schema; training applies the model's chat template
to such prompts when it has one (see :func:`prompt_messages`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from alphaloop.journal.preferences import PreferenceRecord


def prompt_messages(prompt: str) -> list[dict[str, str]] | None:
    """The chat messages a prompt holds, or None when it is plain text."""
    text = prompt.lstrip()
    if not text.startswith("["):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if (
        isinstance(value, list)
        and value
        and all(
            isinstance(m, dict) and isinstance(m.get("content"), str) and "role" in m for m in value
        )
    ):
        return [{"role": str(m["role"]), "content": m["content"]} for m in value]
    return None


def prompt_text(prompt: str) -> str:
    """A journaled prompt as plain text (see the module docstring)."""
    messages = prompt_messages(prompt)
    if messages is None:
        return prompt
    return "\n\n".join(m["content"] for m in messages)


def trl_row(pref: PreferenceRecord) -> dict[str, Any]:
    return {"prompt": prompt_text(pref.prompt), "chosen": pref.chosen, "rejected": pref.rejected}


def write_jsonl(prefs: Iterable[PreferenceRecord], out: Path) -> int:
    """Writes the pairs to ``out`` (replacing it atomically); returns how many were written."""
    tmp = out.with_name(out.name + ".part")
    n = 0
    with tmp.open("w", encoding="utf-8") as f:
        for pref in prefs:
            f.write(json.dumps(trl_row(pref), ensure_ascii=False) + "\n")
            n += 1
    tmp.replace(out)
    return n
