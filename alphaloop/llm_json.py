"""JSON to and from the model: tool schemas we send, objects we read back.

:func:`openai_tool` turns a pydantic argument model into the tool spec servers accept.

For endpoints without tool calling, :func:`parse_json_object` finds the one JSON object in a reply.

Models asked for "JSON only" still wrap it in prose or a ```json fence, leave trailing commas,
add ``//`` comments, or answer with a Python-style dict. :func:`parse_json_object` repairs that
*syntax* and nothing else: values come back exactly as written (``"3e-4"`` stays a string,
``"5%"`` too), because deciding what a value means is :func:`alphaloop.knobs.parse_number`'s job.

Reasoning traces (``<think>...</think>``) are removed with :func:`strip_think`, which lives here
so the parser and :mod:`alphaloop.llm` share one definition.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from alphaloop.exceptions import ReplyParseError

__all__ = ["openai_tool", "parse_json_object", "strip_think"]

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_FENCE = re.compile(
    r"```[ \t]*(?:json5?|jsonc|javascript|js|python)?[ \t]*\n?(.*?)(?:```|\Z)",
    re.DOTALL | re.IGNORECASE,
)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_BARE_KEY = re.compile(r"([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)(\s*:)")
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}
_PY_LITERAL = re.compile(r"\b(True|False|None)\b")


def strip_think(text: str | None) -> str:
    """Removes reasoning traces from a reply and trims the rest.

    Handles closed ``<think>...</think>`` blocks anywhere, a leading trace whose ``<think>`` was
    part of the prompt (the text starts mid-thought and only ``</think>`` appears; DeepSeek-R1
    and Qwen3 chat templates do this), and a trailing ``<think>`` that never closed because
    the reply was cut off.

    Args:
        text: the raw message content (``None`` is treated as empty).

    Returns:
        The content a reader should see.
    """
    if not text:
        return ""
    text = _THINK_BLOCK.sub("", text)
    close = _THINK_CLOSE.search(text)
    if close:
        text = text[close.end() :]
    opened = _THINK_OPEN.search(text)
    if opened:
        text = text[: opened.start()]
    return text.strip()


def _read_string(text: str, i: int) -> tuple[int, str] | None:
    """Reads the quoted string starting at ``text[i]``; returns (end, JSON-encoded string)."""
    quote = text[i]
    out: list[str] = []
    j = i + 1
    while j < len(text):
        ch = text[j]
        if ch == "\\" and j + 1 < len(text):
            nxt = text[j + 1]
            # \' is not a JSON escape: a single-quoted Python string uses it for an apostrophe.
            out.append("'" if nxt == "'" else ch + nxt)
            j += 2
            continue
        if ch == quote:
            return j + 1, '"' + "".join(out) + '"'
        out.append('\\"' if ch == '"' else ch)
        j += 1
    return None


def _scan_object(text: str, start: int, single_quotes: bool = True) -> tuple[int, str] | None:
    """Finds the end of the object opening at ``text[start]`` and repairs its syntax.

    Strings (double-quoted, and single-quoted unless ``single_quotes`` is off) are kept
    verbatim apart from re-quoting; outside them, comments are dropped, trailing commas
    removed, bare keys quoted and Python literals translated. Returns
    ``(end, repaired_text)``, or None if the object never closes.
    """
    pieces: list[str] = []
    plain: list[str] = []

    def flush() -> None:
        chunk = "".join(plain)
        chunk = _TRAILING_COMMA.sub(r"\1", chunk)
        chunk = _BARE_KEY.sub(r'\1"\2"\3', chunk)
        chunk = _PY_LITERAL.sub(lambda m: _PY_LITERALS[m.group(1)], chunk)
        pieces.append(chunk)
        plain.clear()

    depth = 0
    i = start
    while i < len(text):
        ch = text[i]
        if ch == '"' or (ch == "'" and single_quotes):
            read = _read_string(text, i)
            if read is None:
                return None
            i, encoded = read
            flush()
            pieces.append(encoded)
            continue
        if text.startswith("//", i) or ch == "#":
            newline = text.find("\n", i)
            i = len(text) if newline < 0 else newline
            continue
        if text.startswith("/*", i):
            close = text.find("*/", i + 2)
            i = len(text) if close < 0 else close + 2
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        plain.append(ch)
        i += 1
        if depth == 0:
            flush()
            return i, "".join(pieces)
    return None


def _candidates(text: str) -> tuple[list[dict[str, Any]], list[str], bool]:
    """Every top-level object in ``text``: (parsed dicts, parse errors, truncated?)."""
    found: list[dict[str, Any]] = []
    errors: list[str] = []
    i = text.find("{")
    while i >= 0:
        # An apostrophe in prose ("it's") is not a string opener: retry without single quotes.
        scanned = _scan_object(text, i) or _scan_object(text, i, single_quotes=False)
        if scanned is None:
            # Everything after an unclosed brace is inside it: a nested object found there
            # would be a fragment of the real answer, so stop looking.
            return found, errors, True
        end, repaired = scanned
        last = ""
        for attempt in (text[i:end], repaired):
            try:
                value = json.loads(attempt, strict=False)
            except ValueError as err:
                last = f"invalid JSON ({err.msg} at char {err.pos})"
                continue
            if isinstance(value, dict):
                found.append(value)
                break
        else:
            errors.append(last)
        i = text.find("{", end)
    return found, errors, False


def parse_json_object(text: str | None) -> dict[str, Any]:
    """Returns the single JSON object a model reply contains.

    Looks inside fenced code blocks first (```json ... ```, also an unclosed fence), else at
    the whole reply, skipping prose around the object. Repairs syntax only: ``//``, ``#`` and
    ``/* */`` comments, trailing commas, unquoted keys, single-quoted strings and Python's
    ``True``/``False``/``None``. Values are returned as written.

    Args:
        text: the reply content (think blocks are stripped here too; doing it twice is harmless).

    Returns:
        The object as a dict.

    Raises:
        ReplyParseError: no object, an object cut off before its closing brace, invalid JSON
            even after repair, or several different objects (which one was meant would be a
            guess).
    """
    original = text or ""
    body = strip_think(original)
    if not body:
        raise ReplyParseError("empty reply (nothing left after removing reasoning)", original)
    fenced = [block for block in _FENCE.findall(body) if "{" in block]
    found: list[dict[str, Any]] = []
    errors: list[str] = []
    truncated = False
    for source in fenced or [body]:
        objs, errs, cut = _candidates(source)
        found += objs
        errors += errs
        truncated = truncated or cut
    distinct: list[dict[str, Any]] = []
    for obj in found:
        if obj not in distinct:
            distinct.append(obj)
    if len(distinct) == 1:
        return distinct[0]
    if len(distinct) > 1:
        raise ReplyParseError(
            f"reply holds {len(distinct)} different JSON objects; expected exactly one", body
        )
    if truncated:
        raise ReplyParseError("JSON object is not closed (was the reply cut off?)", body)
    if errors:
        raise ReplyParseError(errors[-1], body)
    raise ReplyParseError("no JSON object found in the reply", body)


def openai_tool(name: str, description: str, args_model: type[BaseModel]) -> dict[str, Any]:
    """An OpenAI tool spec whose parameters are ``args_model``'s JSON schema.

    References (``$ref``/``$defs``) are inlined and ``title`` keys dropped, because simple
    servers (llama.cpp grammars, some NIM builds) refuse references. Bounds, enums,
    descriptions and ``additionalProperties: false`` are kept: the schema *is* the edit space.

    Raises:
        ValueError: the model is recursive, so its schema cannot be inlined.
    """
    schema = args_model.model_json_schema()
    params = _inline(schema, schema.get("$defs", {}), frozenset())
    params.setdefault("type", "object")
    params.setdefault("properties", {})
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": params},
    }


_LITERAL_KEYS = {"default", "enum", "const", "examples"}  # data, not schemas: copy as is


def _inline(node: Any, defs: Mapping[str, Any], seen: frozenset[str]) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        key = str(node["$ref"]).rsplit("/", 1)[-1]
        if key in seen or key not in defs:
            raise ValueError(f"cannot inline schema reference {node['$ref']!r} (recursive?)")
        target = _inline(defs[key], defs, seen | {key})
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        return {**target, **_inline(siblings, defs, seen)}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("$defs", "title"):
            continue
        if key == "properties" and isinstance(value, dict):
            # Keys here are field names (a field may be called "title"), values are schemas.
            out[key] = {prop: _inline(sub, defs, seen) for prop, sub in value.items()}
        elif key in _LITERAL_KEYS:
            out[key] = value
        else:
            out[key] = _inline(value, defs, seen)
    return out
