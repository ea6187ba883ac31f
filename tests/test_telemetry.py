"""Spans: off by default, nested when on, JSON lines under the home in file mode."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from alphaloop import telemetry
from alphaloop.settings import Settings


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    telemetry.reset()
    yield
    telemetry.reset()


def test_tracing_is_off_by_default(settings: Settings) -> None:
    telemetry.configure(settings)
    with telemetry.span("research.iteration", {"trial.idx": 1}) as current:
        assert current is None
        telemetry.set_attributes(current, {"ignored": 1})  # a no-op, not an error
    assert not settings.traces_path.exists()


def test_spans_nest_and_drop_none_attributes() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.configure(provider=provider)
    with telemetry.span("research.iteration", {"trial.idx": 3, "absent": None}) as outer:
        with telemetry.span("chat m") as inner:
            telemetry.set_attributes(
                inner, telemetry.genai_attributes(provider="openai", request_model="m")
            )
        telemetry.set_attributes(outer, {"status": "keep"})
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert spans["chat m"].parent.span_id == spans["research.iteration"].context.span_id
    assert dict(spans["research.iteration"].attributes) == {"trial.idx": 3, "status": "keep"}
    chat = dict(spans["chat m"].attributes)
    assert chat["gen_ai.operation.name"] == "chat" and "gen_ai.usage.input_tokens" not in chat


def test_an_exception_is_recorded_and_raised() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.configure(provider=provider)
    with pytest.raises(ValueError, match="boom"), telemetry.span("research.trial"):
        raise ValueError("boom")
    (finished,) = exporter.get_finished_spans()
    assert finished.status.status_code.name == "ERROR"
    assert finished.events[0].name == "exception"


def test_file_mode_appends_one_json_document_per_span(
    settings: Settings, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("ALPHALOOP_OTEL", "file")
    file_settings = Settings()
    with telemetry.span("train.manual", {"session.id": "s-1"}):  # configures from the env
        pass
    with telemetry.span("dpo.train"):
        pass
    lines = file_settings.traces_path.read_text(encoding="utf-8").splitlines()
    names = [json.loads(line)["name"] for line in lines]
    assert names == ["train.manual", "dpo.train"]
    assert json.loads(lines[0])["attributes"] == {"session.id": "s-1"}
