"""Token accounting of an LLM client: running totals for a session's token budget, and an
estimate for servers that report no usage (characters / 4, so a budget still bites)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

CHARS_PER_TOKEN = 4


def _message_chars(messages: Sequence[Mapping[str, Any]]) -> int:
    """Characters of text in OpenAI-format messages (string contents and text parts)."""
    total = 0
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(len(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return total


def estimate_tokens(messages: Sequence[Mapping[str, Any]], reply_chars: int) -> tuple[int, int]:
    """(prompt, completion) tokens estimated from text length, for a reply without usage."""
    return _message_chars(messages) // CHARS_PER_TOKEN, reply_chars // CHARS_PER_TOKEN


class UsageMeter:
    """Prompt and completion tokens of every successful call so far (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.calls = 0

    def add(self, prompt_tokens: int, completion_tokens: int) -> None:
        with self._lock:
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            self.calls += 1

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens
