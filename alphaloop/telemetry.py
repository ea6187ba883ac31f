"""OpenTelemetry spans: one per research iteration (with children for propose, the trial and the
record step), one per manual PPO run and per DPO run.

Off by default. ``ALPHALOOP_OTEL=file`` appends one JSON document per span to
``$ALPHALOOP_HOME/traces/spans.jsonl``, ``console`` prints them to stderr (stdout stays the
command's own), and when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set and the OTLP exporter package is
installed, spans are sent there too. alphaloop keeps its own tracer provider (never the global
one), so a host application's tracing is left alone; tests hand :func:`configure` a provider
with an in-memory exporter.

LLM calls carry the GenAI semantic-convention attributes (``gen_ai.operation.name``,
``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.response.model``,
``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``): see :func:`genai_attributes`.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

    from alphaloop.settings import Settings

log = logging.getLogger(__name__)

INSTRUMENTATION = "alphaloop"
_lock = threading.Lock()
_tracer: Tracer | None = None
_owned: TracerProvider | None = None  # a provider built from the settings (reset shuts it down)
_configured = False


def configure(settings: Settings | None = None, *, provider: TracerProvider | None = None) -> None:
    """Sets up where spans go: ``provider`` when given (tests), else from ``settings``.

    With tracing off and no provider, spans are no-ops that cost a function call.
    """
    global _tracer, _owned, _configured
    with _lock:
        _configured = True
        if provider is None and settings is not None:
            provider = _owned = _provider_from(settings)
        _tracer = provider.get_tracer(INSTRUMENTATION) if provider is not None else None


def reset() -> None:
    """Forgets the configuration (flushing and closing what it built): the next span reads the
    settings again."""
    global _tracer, _owned, _configured
    with _lock:
        if _owned is not None:
            _owned.shutdown()
        _tracer, _owned, _configured = None, None, False


def _provider_from(settings: Settings) -> TracerProvider | None:
    if settings.otel == "off" and not settings.otlp_endpoint:
        return None
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    provider = TracerProvider(resource=Resource.create({"service.name": "alphaloop"}))
    if settings.otel == "file":
        provider.add_span_processor(SimpleSpanProcessor(_json_lines(settings.traces_path)))
    elif settings.otel == "console":
        provider.add_span_processor(
            SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr, formatter=_one_line))
        )
    if settings.otlp_endpoint:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            log.warning(
                "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OTLP exporter is not installed; "
                "pip install opentelemetry-exporter-otlp-proto-http to send spans there"
            )
        else:
            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


def _one_line(span: Any) -> str:
    return span.to_json(indent=None) + "\n"


def _json_lines(path: Path) -> Any:
    """An exporter appending each span to ``path`` as one JSON line. The file is opened per
    export, so a session process and a server can append to the same file without holding it
    open. (Defined here so the SDK is imported only when tracing is on.)"""
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class JsonLines(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as out:
                out.write("".join(_one_line(s) for s in spans))
            return SpanExportResult.SUCCESS

    return JsonLines()


def _current_tracer() -> Tracer | None:
    if not _configured:
        from alphaloop.settings import get_settings

        try:
            configure(get_settings())
        except Exception as err:  # a bad setting must not break the work being traced
            log.warning("tracing is off: %s", err)
            configure(None)
    return _tracer


@contextmanager
def span(name: str, attributes: Mapping[str, Any] | None = None) -> Iterator[Span | None]:
    """A span around the block (a child of the current one), or None when tracing is off.

    Attributes whose value is None are left out; an exception escaping the block is recorded
    on the span and re-raised.
    """
    tracer = _current_tracer()
    if tracer is None:
        yield None
        return
    attrs = {k: v for k, v in (attributes or {}).items() if v is not None}
    with tracer.start_as_current_span(name, attributes=attrs) as current:
        yield current


def set_attributes(current: Span | None, attributes: Mapping[str, Any]) -> None:
    """Adds attributes to ``current`` (a :func:`span`), skipping None values; no-op when off."""
    if current is not None:
        current.set_attributes({k: v for k, v in attributes.items() if v is not None})


def genai_attributes(
    *,
    provider: str,
    request_model: str,
    response_model: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    operation: str = "chat",
) -> dict[str, Any]:
    """The OpenTelemetry GenAI semantic-convention attributes of one model call."""
    return {
        "gen_ai.operation.name": operation,
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": request_model,
        "gen_ai.response.model": response_model,
        "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens,
    }
