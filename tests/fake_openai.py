"""A scripted OpenAI-compatible server for tests: real HTTP, real wire format, strict requests.

Tests push *steps* (what the "model" answers next) and then drive the real ``openai`` client
against ``server.base_url``. Each ``POST /v1/chat/completions`` takes the next queued step; when
the queue is empty the ``responder`` callable (if any) is asked for one; with neither, the server
answers 500 so a test that under-scripts fails loudly.

Requests are validated the way a strict server would (vLLM and NIM reject malformed tool specs,
dangling tool-call ids and bad image parts with 400), so bugs in the client show up as
``BadRequestError`` in tests instead of passing silently. Every request is recorded.

``kind`` makes the server behave as a real one does where they differ (see :data:`KINDS`):

* ``llama-cpp-python``: an assistant turn with ``"content": null`` is a 500 (its chat templates
  concatenate the content as a string).
* ``llama-server``: an object ``tool_choice`` is downgraded to ``"auto"``; with
  ``tool_template=False`` (a chat template without tool support) ``tools`` are dropped; an
  image without ``--mmproj`` is a 500 "image input is not supported".
* ``vllm``: ``tool_choice: "auto"`` (the default when tools are sent) is a 400 unless the server
  was started with a tool-call parser (``tool_parser=True``); a named function is served through
  guided decoding either way.
* ``ollama``: ``tool_choice`` is ignored; ``tool_template=False`` is Ollama's 400 "does not
  support tools"; ``json_schema="ignored"`` (versions before 0.5) drops ``response_format``
  json_schema silently, ``"rejected"`` refuses it with a 400.

A request with ``"stream": true`` is answered as the server kind streams (see
``tests/fake_openai_stream.py``), and runaway steps play a model that never stops
(:func:`endless`), a stream that stalls (:func:`stall`) and a server that dies (:func:`reset`).

What the "model" sees is the request as served (after those rewrites): a responder gets it, and
a scripted tool call is answered as text when the served request has no tools.

Usage numbers are deterministic: ``prompt_tokens`` is the number of characters of text in the
request messages (string contents, text parts, assistant tool-call arguments) ``// 4``, and
``completion_tokens`` is the characters of the reply (content, reasoning_content, tool-call
arguments) ``// 4``; see :func:`prompt_tokens_for` and :func:`completion_tokens_for`.
"""

from __future__ import annotations

import base64
import binascii
import collections
import dataclasses
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

try:  # see conftest.py: ``tests`` is a package only under ``python -m pytest``
    from tests import fake_openai_stream as streaming
except ImportError:
    import fake_openai_stream as streaming  # type: ignore[no-redef]

ROLES = {"system", "developer", "user", "assistant", "tool"}
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SCHEMA_TYPES = {"object", "array", "string", "number", "integer", "boolean", "null"}
DATA_URL = re.compile(r"^data:image/(png|jpeg|gif|webp);base64,(?P<data>[A-Za-z0-9+/=\s]+)$")


@dataclass(frozen=True)
class Step:
    """One scripted answer. Build it with the helpers below rather than by hand."""

    kind: str  # "reply" | "error" | "malformed" | "endless" | "stall" | "reset"
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: tuple[tuple[str, str, str], ...] = ()  # (id, name, arguments JSON string)
    finish_reason: str | None = None
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    usage: tuple[int, int] | None = None  # (prompt_tokens, completion_tokens) override
    include_usage: bool = True  # False: no "usage" key, like some llama.cpp/Ollama builds
    after: int = 0  # runaway steps: pieces streamed before the stall or the reset
    every_s: float = 0.0  # streamed steps: a pause after each chunk (a slow model)


_ids = itertools.count(1)


def text(
    content: str,
    *,
    reasoning_content: str | None = None,
    finish_reason: str = "stop",
    include_usage: bool = True,
) -> Step:
    """A plain assistant message (``content`` may hold ``<think>`` blocks)."""
    return Step(
        "reply",
        content=content,
        reasoning_content=reasoning_content,
        finish_reason=finish_reason,
        include_usage=include_usage,
    )


def reasoning(reasoning_content: str, content: str) -> Step:
    """A reply as vLLM/NIM reasoning parsers send it: the trace in ``reasoning_content``."""
    return text(content, reasoning_content=reasoning_content)


def tool_call(
    name: str,
    args: dict[str, Any] | str,
    *,
    content: str | None = None,
    reasoning_content: str | None = None,
    call_id: str | None = None,
) -> Step:
    """A reply calling one tool; ``args`` is a dict (JSON-encoded) or a raw arguments string."""
    raw = args if isinstance(args, str) else json.dumps(args)
    cid = call_id or f"call_{next(_ids):06d}"
    return Step(
        "reply",
        content=content,
        reasoning_content=reasoning_content,
        tool_calls=((cid, name, raw),),
        finish_reason="tool_calls",
    )


def error(status: int, body: Any = None, headers: dict[str, str] | None = None) -> Step:
    """An HTTP error; ``body`` defaults to an OpenAI-style error object (str -> its message)."""
    if body is None or isinstance(body, str):
        body = error_body(body or f"scripted error {status}", status=status)
    return Step("error", status=status, body=body, headers=dict(headers or {}))


def delay(seconds: float, then: Step | None = None) -> Step:
    """Waits ``seconds`` before answering with ``then`` (default a short text), to hit timeouts."""
    base = then or text("late reply")
    return dataclasses.replace(base, delay_s=seconds)


def endless(piece: str = "tok ", *, every_s: float = 0.001) -> Step:
    """A model that never stops and a server that ignores ``max_tokens``: it streams ``piece``
    until the client goes away (asked without streaming, it never answers)."""
    return Step("endless", content=piece, every_s=every_s)


def stall(after: int = 3, piece: str = "tok ") -> Step:
    """A stream that stops mid-answer after ``after`` pieces and never ends (asked without
    streaming, no byte of an answer ever comes)."""
    return Step("stall", content=piece, after=after)


def reset(after: int = 0, piece: str = "tok ") -> Step:
    """A server that dies while answering: a TCP reset after ``after`` streamed pieces (0:
    before any response)."""
    return Step("reset", content=piece, after=after)


def slow(step: Step, every_s: float) -> Step:
    """``step`` streamed with a pause after each chunk (a model of a few tokens a second)."""
    return dataclasses.replace(step, every_s=every_s)


def malformed() -> Step:
    """A 200 whose body is not valid JSON (a truncated completion)."""
    return Step("malformed")


def error_body(message: str, *, status: int = 400, kind: str | None = None) -> dict[str, Any]:
    """The error object OpenAI-compatible servers send."""
    default = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": message, "type": kind or default, "param": None, "code": None}}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def prompt_tokens_for(messages: list[dict[str, Any]]) -> int:
    """The fake's prompt token count: characters of message text // 4."""
    chars = 0
    for m in messages:
        chars += len(_text_of(m.get("content")))
        for tc in m.get("tool_calls") or []:
            chars += len(tc.get("function", {}).get("arguments", ""))
    return chars // 4


def completion_tokens_for(step: Step) -> int:
    """The fake's completion token count: characters of the reply // 4."""
    chars = len(step.content or "") + len(step.reasoning_content or "")
    chars += sum(len(args) for _, _, args in step.tool_calls)
    return chars // 4


KINDS = ("openai", "llama-cpp-python", "llama-server", "vllm", "ollama")
# The servers' own words, so the client's classification is tested against them.
VLLM_AUTO_TOOL_CHOICE = (
    '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
)
LLAMA_CPP_PYTHON_NULL_CONTENT = 'can only concatenate str (not "NoneType") to str'
LLAMA_SERVER_NO_IMAGES = (
    "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj"
)
JSON_SCHEMA_REJECTED = "response_format type 'json_schema' is not supported"
LLAMA_SERVER_NO_STREAM_TOOLS = "Cannot use tools with stream"


class ServerRefusal(Exception):
    """What a particular server kind answers instead of a completion."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received (``json`` is None for GETs and bad JSON; header names lower)."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any
    rejected: str | None = None  # the 400 message if validation failed
    served: Any = None  # the request as the model saw it (after the server kind's rewrites)


class RequestInvalid(Exception):
    """A request body a strict server would refuse (becomes a 400)."""


def _check_schema(schema: Any, where: str) -> None:
    if not isinstance(schema, dict):
        raise RequestInvalid(f"{where}: a JSON schema must be an object")
    for key in ("$ref", "$defs", "definitions"):
        if key in schema:
            raise RequestInvalid(f"{where}: '{key}' is not supported by this server; inline it")
    types = schema.get("type")
    for t in types if isinstance(types, list) else [types] if types is not None else []:
        if t not in SCHEMA_TYPES:
            raise RequestInvalid(f"{where}: unknown JSON-schema type {t!r}")
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        raise RequestInvalid(f"{where}.properties must be an object")
    for name, sub in props.items():
        _check_schema(sub, f"{where}.properties.{name}")
    required = schema.get("required", [])
    if not isinstance(required, list) or any(r not in props for r in required):
        raise RequestInvalid(f"{where}.required must list declared properties")
    if "enum" in schema and (not isinstance(schema["enum"], list) or not schema["enum"]):
        raise RequestInvalid(f"{where}.enum must be a non-empty list")
    for bound in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if bound in schema and not isinstance(schema[bound], int | float):
            raise RequestInvalid(f"{where}.{bound} must be a number")
    for key in ("anyOf", "oneOf", "allOf"):
        for i, sub in enumerate(schema.get(key, [])):
            _check_schema(sub, f"{where}.{key}[{i}]")
    if "items" in schema:
        _check_schema(schema["items"], f"{where}.items")
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        _check_schema(extra, f"{where}.additionalProperties")


def _check_content(content: Any, role: str, where: str) -> None:
    if isinstance(content, str):
        return
    if not isinstance(content, list) or not content:
        raise RequestInvalid(f"{where}.content must be a string or a non-empty list of parts")
    for i, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            continue
        if kind == "image_url" and role == "user":
            url = (part.get("image_url") or {}).get("url")
            match = DATA_URL.match(url) if isinstance(url, str) else None
            if isinstance(url, str) and url.startswith(("http://", "https://")):
                continue
            try:
                if match and base64.b64decode(match["data"], validate=False):
                    continue
            except binascii.Error:
                pass
            raise RequestInvalid(f"{where}.content[{i}]: image_url needs a base64 data URL")
        raise RequestInvalid(f"{where}.content[{i}]: invalid part {part!r:.80}")


def validate_chat_request(body: Any) -> None:
    """Raises :class:`RequestInvalid` for anything a strict OpenAI-compatible server refuses."""
    if not isinstance(body, dict):
        raise RequestInvalid("request body must be a JSON object")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise RequestInvalid("'model' must be a non-empty string")
    if body.get("stream_options") is not None and not body.get("stream"):
        raise RequestInvalid("'stream_options' is only allowed when 'stream' is true")
    tools = body.get("tools")
    names: set[str] = set()
    if tools is not None:
        if not isinstance(tools, list) or not tools:
            raise RequestInvalid("'tools' must be a non-empty list")
        for i, tool in enumerate(tools):
            fn = tool.get("function") if isinstance(tool, dict) else None
            if tool.get("type") != "function" or not isinstance(fn, dict):
                raise RequestInvalid(f"tools[{i}] must be {{'type': 'function', 'function': ...}}")
            if not isinstance(fn.get("name"), str) or not TOOL_NAME.match(fn["name"]):
                raise RequestInvalid(f"tools[{i}].function.name must match {TOOL_NAME.pattern}")
            if not isinstance(fn.get("description", ""), str):
                raise RequestInvalid(f"tools[{i}].function.description must be a string")
            params = fn.get("parameters", {"type": "object", "properties": {}})
            _check_schema(params, f"tools[{i}].function.parameters")
            if params.get("type") != "object":
                raise RequestInvalid(f"tools[{i}].function.parameters must be of type 'object'")
            names.add(fn["name"])
    choice = body.get("tool_choice")
    if choice is not None:
        if tools is None:
            raise RequestInvalid("'tool_choice' is only allowed when 'tools' are given")
        if isinstance(choice, dict):
            name = (choice.get("function") or {}).get("name")
            if choice.get("type") != "function" or name not in names:
                raise RequestInvalid(f"tool_choice names an undeclared tool: {choice!r:.120}")
        elif choice not in ("none", "auto", "required"):
            raise RequestInvalid(f"invalid tool_choice {choice!r}")
    temp = body.get("temperature")
    if temp is not None and (not isinstance(temp, int | float) or not 0 <= temp <= 2):
        raise RequestInvalid("'temperature' must be a number in [0, 2]")
    max_tokens = body.get("max_tokens")
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
        raise RequestInvalid("'max_tokens' must be a positive integer")
    fmt = body.get("response_format")
    if fmt is not None:
        kind = fmt.get("type") if isinstance(fmt, dict) else None
        if kind not in ("text", "json_object", "json_schema"):
            raise RequestInvalid(f"invalid response_format {fmt!r:.80}")
        if kind == "json_schema":
            spec = fmt.get("json_schema")
            if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
                raise RequestInvalid("response_format.json_schema needs a name and a schema")
            _check_schema(spec.get("schema"), "response_format.json_schema.schema")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestInvalid("'messages' must be a non-empty list")
    call_ids: set[str] = set()
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            raise RequestInvalid(f"{where} must be an object with a role in {sorted(ROLES)}")
        role = m["role"]
        if role == "assistant" and m.get("tool_calls"):
            for tc in m["tool_calls"]:
                fn = tc.get("function") or {}
                if tc.get("type") != "function" or not isinstance(fn.get("arguments"), str):
                    raise RequestInvalid(f"{where}.tool_calls entries need function.arguments")
                call_ids.add(tc.get("id"))
            if m.get("content") is not None:
                _check_content(m["content"], role, where)
            continue
        if "content" not in m:
            raise RequestInvalid(f"{where} has no content")
        _check_content(m["content"], role, where)
        if role == "tool" and m.get("tool_call_id") not in call_ids:
            raise RequestInvalid(f"{where}.tool_call_id does not match an earlier tool call")


class FakeOpenAI:
    """A scripted OpenAI-compatible HTTP server on 127.0.0.1 (a context manager).

    Args:
        models: model ids the server serves; a chat request naming another model gets the 404
            vLLM sends for unknown models.
        api_key: if set, requests without ``Authorization: Bearer <api_key>`` get a 401.
        responder: called with the request JSON when the step queue is empty; returns a
            :class:`Step`. Settable later as ``server.responder``.
        kind: which real server to behave as (:data:`KINDS`; see the module docstring).
        tool_template: the model's chat template supports tools (llama-server, Ollama).
        tool_parser: vLLM was started with ``--enable-auto-tool-choice --tool-call-parser``.
        json_schema: ``"enforced"``, ``"ignored"`` or ``"rejected"`` (default: ``"ignored"``
            for Ollama, as before 0.5, else ``"enforced"``).
        vision: the model takes images (llama-server: started with ``--mmproj``).
        stream_tools: llama-server streams a request with tools (builds of early 2025 answer
            it with a 500 "Cannot use tools with stream").
        port: the port to listen on (0: any free one).
    """

    def __init__(
        self,
        models: tuple[str, ...] = ("fake-model",),
        *,
        api_key: str | None = None,
        responder: Callable[[dict[str, Any]], Step] | None = None,
        kind: str = "openai",
        tool_template: bool = True,
        tool_parser: bool = False,
        json_schema: str | None = None,
        vision: bool = True,
        stream_tools: bool = True,
        port: int = 0,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        self.models = tuple(models)
        self.api_key = api_key
        self.responder = responder
        self.kind, self.tool_template, self.tool_parser = kind, tool_template, tool_parser
        self.json_schema = json_schema or ("ignored" if kind == "ollama" else "enforced")
        self.vision, self.stream_tools, self.port = vision, stream_tools, port
        self.requests: list[RecordedRequest] = []
        self.streams: list[streaming.StreamLog] = []
        self._steps: collections.deque[Step] = collections.deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ------------------------------------------------------------------------
    def push(self, *steps: Step) -> FakeOpenAI:
        """Queues steps; each chat request consumes one."""
        with self._lock:
            self._steps.extend(steps)
        return self

    @property
    def pending(self) -> int:
        """Steps pushed but not consumed yet."""
        return len(self._steps)

    @property
    def served_requests(self) -> list[dict[str, Any]]:
        """The chat requests that were served, as the model saw them."""
        return [r.served for r in self.requests if r.served is not None]

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of every chat completion request, in order (rejected ones too)."""
        return [r.json for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> FakeOpenAI:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False  # a delayed step must not hold up shutdown
        # A short poll interval keeps shutdown (once per test) from costing the default 0.5 s.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- request handling (called from handler threads) -----------------------------------
    def serve(self, body: dict[str, Any]) -> dict[str, Any]:
        """The request as this server kind hands it to the model, or :class:`ServerRefusal`."""
        served = json.loads(json.dumps(body))
        if self.kind == "llama-cpp-python":
            for m in served["messages"]:
                if m["role"] == "assistant" and m.get("tool_calls") and m.get("content") is None:
                    raise ServerRefusal(500, LLAMA_CPP_PYTHON_NULL_CONTENT)
        if not self.vision and any(
            isinstance(m.get("content"), list)
            and any(p.get("type") == "image_url" for p in m["content"])
            for m in served["messages"]
        ):
            raise ServerRefusal(500 if self.kind == "llama-server" else 400, LLAMA_SERVER_NO_IMAGES)
        fmt = served.get("response_format") or {}
        if fmt.get("type") == "json_schema" and self.json_schema != "enforced":
            if self.json_schema == "rejected":
                raise ServerRefusal(400, JSON_SCHEMA_REJECTED)
            del served["response_format"]
        return self._serve_tools(served)

    def _serve_tools(self, served: dict[str, Any]) -> dict[str, Any]:
        if not served.get("tools"):
            return served
        if self.kind == "llama-server" and served.get("stream") and not self.stream_tools:
            raise ServerRefusal(500, LLAMA_SERVER_NO_STREAM_TOOLS)
        choice = served.get("tool_choice", "auto")
        if self.kind == "vllm" and choice == "auto" and not self.tool_parser:
            raise ServerRefusal(400, VLLM_AUTO_TOOL_CHOICE)
        if self.kind == "ollama":
            if not self.tool_template:
                raise ServerRefusal(
                    400, f"registry.ollama.ai/library/{served['model']} does not support tools"
                )
            served.pop("tool_choice", None)  # Ollama has no tool_choice: the model decides
        if self.kind == "llama-server":
            if not self.tool_template:  # the template cannot render tools: they are dropped
                served.pop("tools", None)
                served.pop("tool_choice", None)
            elif isinstance(choice, dict):  # only "auto", "none" and "required" are understood
                served["tool_choice"] = "auto"
        return served

    def _next_step(self, body: dict[str, Any]) -> Step:
        with self._lock:
            if self._steps:
                return self._steps.popleft()
        if self.responder is not None:
            return self.responder(body)
        return error(500, "fake server: no scripted step left for this request")

    def _completion(self, body: dict[str, Any], step: Step) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": step.content}
        if step.reasoning_content is not None:
            message["reasoning_content"] = step.reasoning_content
        if step.tool_calls:
            message["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                for cid, name, args in step.tool_calls
            ]
        prompt, completion = step.usage or (
            prompt_tokens_for(body["messages"]),
            completion_tokens_for(step),
        )
        reply = {
            "id": f"chatcmpl-{next(_ids):08d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": step.finish_reason or "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
        if not step.include_usage:
            del reply["usage"]
        return reply


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Keeps test output quiet."""

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test); nothing to answer

    def _record(self, body: Any, rejected: str | None = None, served: Any = None) -> None:
        with self.fake._lock:
            self.fake.requests.append(
                RecordedRequest(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                    rejected,
                    served,
                )
            )

    def _authorised(self) -> bool:
        if self.fake.api_key is None or (
            self.headers.get("Authorization") == f"Bearer {self.fake.api_key}"
        ):
            return True
        self._send(
            401, error_body("Incorrect API key provided.", status=401, kind="authentication_error")
        )
        return False

    def do_GET(self) -> None:
        self._record(None)
        if self.path.rstrip("/") != "/v1/models":
            self._send(404, error_body(f"no route {self.path}", status=404))
        elif self._authorised():
            self._send(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                        for m in self.fake.models
                    ],
                },
            )

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            self._record(None, "body is not JSON")
            self._send(400, error_body("request body is not valid JSON"))
            return
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._record(body, "unknown route")
            self._send(404, error_body(f"no route {self.path}", status=404))
            return
        try:
            validate_chat_request(body)
        except RequestInvalid as err:
            self._record(body, str(err))
            self._send(400, error_body(str(err)))
            return
        try:
            served = self.fake.serve(body)
        except ServerRefusal as refusal:
            self._record(body, refusal.message)
            kind = "server_error" if refusal.status >= 500 else "invalid_request_error"
            self._send(
                refusal.status, error_body(refusal.message, status=refusal.status, kind=kind)
            )
            return
        self._record(body, served=served)
        if not self._authorised():
            return
        if body["model"] not in self.fake.models:
            self._send(
                404,
                error_body(
                    f"The model `{body['model']}` does not exist.", status=404, kind="NotFoundError"
                ),
            )
            return
        step = self.fake._next_step(served)
        if step.tool_calls and not served.get("tools"):
            # The model was never shown the tools: it answers in prose.
            prose = step.content or "I would change a few knobs; see my reasoning above."
            step = dataclasses.replace(step, tool_calls=(), content=prose, finish_reason="stop")
        if step.delay_s and self.fake._stop.wait(step.delay_s):
            return  # server shutting down
        if step.kind == "error":
            self._send(step.status, step.body, step.headers)
        elif body.get("stream") or step.kind in ("endless", "stall", "reset"):
            usage = step.usage or (
                prompt_tokens_for(served["messages"]),
                completion_tokens_for(step),
            )
            streaming.serve(self, self.fake, served, step, usage)
        elif step.kind == "malformed":
            self._send(200, b'{"id": "chatcmpl-trunc", "object": "chat.completion", "choi')
        else:
            self._send(200, self.fake._completion(served, step), step.headers)
