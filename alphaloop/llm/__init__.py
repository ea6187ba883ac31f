"""The one place alphaloop talks to an OpenAI-compatible LLM endpoint.

Any server speaking ``/v1/chat/completions`` works: vLLM, NVIDIA NIM, Ollama, llama.cpp's
server, serving Nemotron, Llama, Qwen and others. :class:`LLMClient` wraps the official
``openai`` client with the habits an unattended research loop needs:

* **Our own retries, of what ran no generation.** The ``openai`` client is built with
  ``max_retries=0`` so every attempt (failed ones too) is reported through ``on_call`` and can
  be journaled. A refused connection, 408/409/429 and 5xx are retried with exponential backoff
  and a little jitter, honouring ``Retry-After`` (capped by ``llm_backoff_max_s``). A request
  the server took and then timed out on or dropped is not: it was generating, and would again.
  400/401/403/404/422 are not retried, nor is a 5xx naming a missing capability, and they raise
  an :class:`~alphaloop.exceptions.LLMError` subclass saying what to change.
* **Bounded, whatever the server does.** Replies are streamed and cut at ``max_tokens`` (per
  purpose: proposals, chat, chart reads) on this side, the stream closed so the server stops;
  the journaled call keeps its ``finish_reason``, ``length`` when the cap cut it. Each request
  ends within ``llm_timeout_s``, and a caller's deadline (:meth:`LLMClient.within`, one chat
  answer) holds over every call, retry and wait. A server that cannot stream a request is asked
  for it whole. Assistant turns carrying tool calls go out with ``content: ""``, never null.
* **Reasoning stripped.** ``<think>`` blocks are removed from ``content``; ``reasoning_content``
  (vLLM/NIM reasoning parsers) is ignored.
* **Usage accounted.** Token counts of every call add up in :attr:`LLMClient.total_tokens`, for
  a session's token budget; a stream asks for them with ``stream_options``. A server that
  reports none gets an estimate (characters / 4, or the chunks that carried text if more)
  rather than zero, so a budget still bites; the reply says so in ``usage_estimated``.

This package imports nothing from the journal: callers pass ``on_call`` and write the rows.
Retry policy lives in :mod:`.retry`, time limits in :mod:`.deadline`, reading streams and
completions in :mod:`.replies`, token accounting in :mod:`.usage`, the reply models in
:mod:`.models`, message shapes in :mod:`.messages`.
"""

from alphaloop.llm.client import LLMClient
from alphaloop.llm.messages import image_part, nemotron_system_prompt
from alphaloop.llm.models import LLMCallRecord, LLMReply, ToolCall
from alphaloop.llm_json import openai_tool, strip_think

__all__ = [
    "LLMCallRecord",
    "LLMClient",
    "LLMReply",
    "ToolCall",
    "image_part",
    "nemotron_system_prompt",
    "openai_tool",
    "strip_think",
]
