"""Streaming for the scripted server (``tests/fake_openai.py``): the chunks each server kind
sends, and the runaway models a test needs.

A reply step asked with ``"stream": true`` goes out as server-sent events in HTTP chunked
encoding (as llama.cpp, vLLM and Ollama send them), its text in pieces of four characters, one
"token" each (the fake's usage counts characters // 4), shaped as the server kind shapes them:

* ``openai`` / ``vllm`` (and NIM): a first delta with the role and ``""`` content; a tool call
  as a first delta with its id and name and empty arguments, then argument fragments; the
  ``finish_reason`` chunk; the usage in a chunk of its own with no choices, only when
  ``stream_options.include_usage`` asks.
* ``llama-server``: the role with ``null`` content first; the usage (and timings) on the
  ``finish_reason`` chunk, always.
* ``llama-cpp-python``: every tool-call delta repeats the call's id and name beside the next
  fragment, with a legacy ``function_call`` beside it; no usage, ever.
* ``ollama``: each delta repeats the role; a tool call comes whole in one chunk; usage only when
  asked.

Runaway steps (:func:`endless`, :func:`stall`, :func:`reset`) play a model and server that
misbehave; asked without streaming, they do the same without a byte of answer (an endless model
never answers, a stall never ends, a reset drops the connection). What the server saw of each
stream is logged in ``FakeOpenAI.streams``.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

PIECE = 4  # characters of one streamed "token"


@dataclass
class StreamLog:
    """What the server did with one streamed or runaway request."""

    max_tokens: int | None
    chunks: int = 0  # text-carrying chunks written
    end: str = "open"  # "done", "client closed", "stalled", "reset"


def pieces(text: str) -> list[str]:
    return [text[i : i + PIECE] for i in range(0, len(text), PIECE)]


def _chunk(cid: str, model: str, delta: dict[str, Any] | None, finish: str | None = None,
           **extra: Any) -> dict[str, Any]:  # fmt: skip
    choices = [] if delta is None else [
        {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    ]  # fmt: skip
    return {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model, "choices": choices, **extra}  # fmt: skip


def _first(kind: str) -> dict[str, Any]:
    if kind == "llama-server":
        return {"role": "assistant", "content": None}
    if kind == "llama-cpp-python":
        return {"role": "assistant"}
    return {"role": "assistant", "content": ""}


def text_delta(kind: str, field: str, piece: str) -> dict[str, Any]:
    delta = {field: piece}
    return {"role": "assistant", **delta} if kind == "ollama" else delta


def _tool_deltas(kind: str, index: int, cid: str, name: str, args: str) -> Iterator[dict]:
    if kind == "ollama":
        call = {"id": cid, "index": index, "type": "function",
                "function": {"name": name, "arguments": args}}  # fmt: skip
        yield {"role": "assistant", "content": "", "tool_calls": [call]}
        return
    if kind == "llama-cpp-python":
        for frag in pieces(args) or [""]:
            fn = {"name": name, "arguments": frag}
            call = {"index": index, "id": cid, "type": "function", "function": fn}
            yield {"role": None, "content": None, "function_call": fn, "tool_calls": [call]}
        return
    head = {"index": index, "id": cid, "type": "function",
            "function": {"name": name, "arguments": ""}}  # fmt: skip
    yield {"tool_calls": [head]}
    for frag in pieces(args):
        yield {"tool_calls": [{"index": index, "function": {"arguments": frag}}]}


def reply_chunks(kind: str, step: Any, model: str, usage: tuple[int, int] | None,
                 include_usage: bool) -> Iterator[tuple[dict[str, Any], bool]]:  # fmt: skip
    """(chunk, carries generated text) for a reply step, as ``kind`` streams it."""
    cid = f"chatcmpl-stream-{time.monotonic_ns()}"
    yield _chunk(cid, model, _first(kind)), False
    for piece in pieces(step.reasoning_content or ""):
        yield _chunk(cid, model, text_delta(kind, "reasoning_content", piece)), True
    for piece in pieces(step.content or ""):
        yield _chunk(cid, model, text_delta(kind, "content", piece)), True
    for index, (call_id, name, args) in enumerate(step.tool_calls):
        for delta in _tool_deltas(kind, index, call_id, name, args):
            yield _chunk(cid, model, delta), True
    finish = step.finish_reason or "stop"
    usage_body = None
    if usage is not None and step.include_usage:
        usage_body = {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                      "total_tokens": sum(usage)}  # fmt: skip
    last = {"role": "assistant", "content": ""} if kind == "ollama" else {}
    if kind == "llama-server" and usage_body is not None:
        timings = {"predicted_n": usage[1], "predicted_per_second": 25.0}
        yield _chunk(cid, model, last, finish, usage=usage_body, timings=timings), False
        return
    yield _chunk(cid, model, last, finish), False
    if kind != "llama-cpp-python" and include_usage and usage_body is not None:
        yield _chunk(cid, model, None, usage=usage_body), False


def runaway_chunks(kind: str, step: Any, model: str) -> Iterator[tuple[dict[str, Any], bool]]:
    """The chunks of a runaway step: ``step.after`` pieces (endless: without end)."""
    cid = f"chatcmpl-runaway-{time.monotonic_ns()}"
    yield _chunk(cid, model, _first(kind)), False
    n = 0
    while step.kind == "endless" or n < step.after:
        n += 1
        yield _chunk(cid, model, text_delta(kind, "content", step.content or "tok ")), True


class ChunkedWriter:
    """Server-sent events in HTTP/1.1 chunked encoding on a request handler's socket."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        handler.wfile.flush()

    def event(self, data: str) -> None:
        raw = f"data: {data}\n\n".encode()
        self.handler.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
        self.handler.wfile.flush()

    def end(self) -> None:
        self.event("[DONE]")
        self.handler.wfile.write(b"0\r\n\r\n")
        self.handler.wfile.flush()


def reset_connection(handler: Any) -> None:
    """Drops the connection with a TCP reset, as a server process that crashed does."""
    handler.close_connection = True
    sock = handler.connection
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    except OSError:
        pass


def serve(
    handler: Any, fake: Any, served: dict[str, Any], step: Any, usage: tuple[int, int]
) -> None:
    """Answers a chat request with ``step``: streamed when it asked to, a runaway either way
    (``usage``: the fake's count of the request and reply)."""
    log = StreamLog(max_tokens=served.get("max_tokens"))
    with fake._lock:
        fake.streams.append(log)
    streamed = bool(served.get("stream"))
    if step.kind in ("endless", "stall") and not streamed:
        log.end = "stalled"
        fake._stop.wait()  # no byte of the answer, ever (until the server shuts down)
        return
    if step.kind == "reset" and (not streamed or step.after == 0):
        log.end = "reset"
        reset_connection(handler)
        return
    include = bool((served.get("stream_options") or {}).get("include_usage"))
    if step.kind == "reply":
        chunks = reply_chunks(fake.kind, step, served["model"], usage, include)
    else:
        chunks = runaway_chunks(fake.kind, step, served["model"])
    try:
        writer = ChunkedWriter(handler)
        for chunk, text in chunks:
            if fake._stop.is_set():
                return
            writer.event(json.dumps(chunk))
            log.chunks += text
            if step.every_s:
                time.sleep(step.every_s)
        if step.kind == "malformed":
            writer.event('{"id": "chatcmpl-trunc", "choi')
        if step.kind == "stall":
            log.end = "stalled"
            fake._stop.wait()
            return
        if step.kind == "reset":
            log.end = "reset"
            reset_connection(handler)
            return
        writer.end()
        log.end = "done"
    except (BrokenPipeError, ConnectionResetError):
        log.end = "client closed"
