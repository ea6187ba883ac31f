"""Messages as the servers take them: Nemotron's reasoning switch, image parts, assistant turns
with tool calls, and the optional features a request uses (to pin a refusal on one)."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any


def nemotron_system_prompt(base_text: str, reasoning: bool) -> str:
    """Puts Nemotron's reasoning switch on the first line of a system prompt.

    NVIDIA's Llama-Nemotron models turn their reasoning trace on or off with the system
    line ``detailed thinking on`` / ``detailed thinking off``. Other models read it as a
    harmless instruction. An existing switch line is replaced, not repeated.
    """
    switch = f"detailed thinking {'on' if reasoning else 'off'}"
    lines = base_text.splitlines()
    if lines and re.fullmatch(r"\s*detailed thinking (on|off)\s*", lines[0], re.IGNORECASE):
        lines = lines[1:]
    return "\n".join([switch, *lines])


def image_part(png_bytes: bytes, *, mime: str = "image/png") -> dict[str, Any]:
    """A user-message content part carrying an image as a base64 data URL (for a VLM)."""
    if not png_bytes:
        raise ValueError("image_part needs non-empty image bytes")
    data = base64.b64encode(png_bytes).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}


def wire_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message as every server accepts it.

    An assistant turn carrying tool calls gets ``content: ""`` instead of null or nothing:
    llama-cpp-python answers a null content with 500, and an empty string means the same to
    every other server.
    """
    out = dict(message)
    if out.get("role") == "assistant" and out.get("tool_calls") and out.get("content") is None:
        out["content"] = ""
    return out


def features(request: Mapping[str, Any]) -> frozenset[str]:
    """The optional features a request uses, to pin a refusal on one of them."""
    used = set()
    if request.get("tools"):
        used.add("tools")
    if request.get("response_format"):
        used.add("response_format")
    for m in request.get("messages", ()):
        content = m.get("content")
        if isinstance(content, list) and any(
            isinstance(p, Mapping) and p.get("type") == "image_url" for p in content
        ):
            used.add("images")
    return frozenset(used)
