"""Chart reading by a vision model (through the scripted OpenAI-compatible server and the real
``openai`` client), the bullet normalisation, and the journaling of every read."""

from __future__ import annotations

import base64
import json
import shutil
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from alphaloop.charts import (
    Chart,
    build_chart,
    interpret_chart,
    normalise_bullets,
    png_size,
    read_with_vlm,
    render_png,
)
from alphaloop.charts.interpret import VLM_HEIGHT, VLM_WIDTH
from alphaloop.journal import Journal
from alphaloop.ops.series import SessionSeries
from alphaloop.settings import Settings

from .conftest import VLM_MODEL, Lab

try:  # see tests/conftest.py
    from tests import fake_openai as fake
except ImportError:
    import fake_openai as fake  # type: ignore[no-redef]

FIVE = "- Sharpe rises\n- best at trial 2\n- flat after it\n- one invalid reply\n- band is wide"


@pytest.fixture(scope="session")
def progress_png(lab: Lab) -> bytes:
    with lab.journal() as j:
        chart = build_chart("research_progress", j, session_id=lab.research_id)
    return render_png(chart.figure, width=VLM_WIDTH, height=VLM_HEIGHT)


@pytest.fixture
def journal_copy(lab: Lab, tmp_path: Path) -> Path:
    """The lab's journal copied to where ``llm_settings`` puts its home."""
    target = tmp_path / "home" / "journal.db"
    target.parent.mkdir(parents=True)
    shutil.copyfile(lab.settings.journal_path, target)
    return target


def progress_chart(journal: Journal, lab: Lab) -> Chart:
    return build_chart("research_progress", journal, session_id=lab.research_id)


# --- normalisation -------------------------------------------------------------------------


def test_bullets_are_taken_from_bullet_lines() -> None:
    text = "Here is my read:\n\n- **Rising** trend\n* best at #2\n  (the only keep)\n1. flat\n2) ok"
    assert normalise_bullets(text) == ["Rising trend", "best at #2 (the only keep)", "flat", "ok"]


def test_too_many_bullets_are_trimmed_to_six() -> None:
    text = "\n".join(f"- point {i}" for i in range(9))
    assert normalise_bullets(text) == [f"point {i}" for i in range(6)]


def test_too_few_are_split_then_filled_from_the_data() -> None:
    two = "- Sharpe rose to 1.10 at trial 2. It stayed there.\n- Three trials; one invalid"
    assert normalise_bullets(two) == [
        "Sharpe rose to 1.10 at trial 2.",
        "It stayed there.",
        "Three trials",
        "one invalid",
    ]
    one = "The chart shows a single kept trial"
    assert normalise_bullets(one, spare=["a", "b", "c", "d"]) == [
        "The chart shows a single kept trial",
        "[data] a",
        "[data] b",
        "[data] c",
    ]


# --- the vision model ----------------------------------------------------------------------


def test_vlm_read_sends_the_png_and_context_and_is_journaled(
    lab: Lab,
    journal_copy: Path,
    progress_png: bytes,
    fake_openai: fake.FakeOpenAI,
    llm_settings: Callable[..., Settings],
) -> None:
    settings = llm_settings(vlm_model=VLM_MODEL)
    fake_openai.push(fake.text(FIVE))
    with Journal(journal_copy) as j:
        chart = progress_chart(j, lab)
        read = interpret_chart(chart, settings, j, png=progress_png)
        [row] = j.logs.chart_reads(lab.research_id)
        [call] = [c for c in j.logs.llm_calls(lab.research_id) if c.purpose == "chart_read"]
    [request] = fake_openai.chat_requests
    assert request["model"] == VLM_MODEL
    text_part, image = request["messages"][-1]["content"]
    # The image is the PNG, base64 in a data URL, at the size asked for.
    url = image["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    sent = base64.b64decode(url.split(",", 1)[1], validate=True)
    assert sent == progress_png and png_size(sent) == (VLM_WIDTH, VLM_HEIGHT)
    payload = json.loads(text_part["text"].split("\n\n")[0])
    assert payload["kind"] == "research_progress"
    context = payload["context"]
    assert context["goal"] == "maximise Sharpe on a planted market"
    assert context["axes"] == {"x": "trial", "y": "validation sharpe"}
    assert context["key_figures"]["best"]["trial"] == 3
    # The read, as shown and as journaled.
    expected = [
        "Sharpe rises",
        "best at trial 2",
        "flat after it",
        "one invalid reply",
        "band is wide",
    ]
    assert read.bullets == row.bullets == expected
    assert read.model == row.model == VLM_MODEL and not read.embedded
    assert row.elapsed_s == read.elapsed_s > 0
    assert read.signature == f"\u2014 {VLM_MODEL}, {read.elapsed_s:.2f} s"
    assert row.raw_text == FIVE and row.id == read.id
    assert row.context["image"] == {
        "width": VLM_WIDTH,
        "height": VLM_HEIGHT,
        "bytes": len(progress_png),
    }
    assert (row.kind, row.session_id, row.trial_id) == ("research_progress", lab.research_id, None)
    assert (call.model, call.ok) == (VLM_MODEL, True) and call.prompt_tokens > 0


def test_a_short_reply_is_normalised_and_its_raw_text_kept(
    lab: Lab,
    journal_copy: Path,
    progress_png: bytes,
    fake_openai: fake.FakeOpenAI,
    llm_settings: Callable[..., Settings],
) -> None:
    reply = "<think>look at the stars</think>The best trial is #2. Nothing beat it since."
    fake_openai.push(fake.text(reply))
    with Journal(journal_copy) as j:
        read = interpret_chart(
            progress_chart(j, lab), llm_settings(vlm_model=VLM_MODEL), j, png=progress_png
        )
        [row] = j.logs.chart_reads(lab.research_id)
    assert read.bullets[:2] == ["The best trial is #2.", "Nothing beat it since."]
    assert len(read.bullets) == 4 and all(b.startswith("[data] ") for b in read.bullets[2:])
    assert row.raw_text == reply and row.bullets == read.bullets


def test_a_failing_vlm_falls_back_to_the_embedded_reader(
    lab: Lab,
    journal_copy: Path,
    progress_png: bytes,
    fake_openai: fake.FakeOpenAI,
    llm_settings: Callable[..., Settings],
) -> None:
    fake_openai.push(fake.error(400, "image too large for this model"))
    warnings: list[str] = []
    with Journal(journal_copy) as j:
        read = interpret_chart(
            progress_chart(j, lab),
            llm_settings(vlm_model=VLM_MODEL),
            j,
            png=progress_png,
            on_warning=warnings.append,
        )
        [row] = j.logs.chart_reads(lab.research_id)
        [call] = [c for c in j.logs.llm_calls(lab.research_id) if c.purpose == "chart_read"]
    assert read.embedded and row.model == "embedded-reader" and 4 <= len(row.bullets) <= 6
    assert "image too large" in row.context["fallback"] and "image too large" in warnings[0]
    assert (call.purpose, call.ok) == ("chart_read", False)


def test_a_llama_server_without_mmproj_is_asked_once_and_the_embedded_reader_answers(
    lab: Lab,
    journal_copy: Path,
    progress_png: bytes,
    llm_settings: Callable[..., Settings],
) -> None:
    with (
        fake.FakeOpenAI(models=(VLM_MODEL,), kind="llama-server", vision=False) as server,
        Journal(journal_copy) as j,
    ):
        settings = llm_settings(
            llm_base_url=server.base_url, vlm_model=VLM_MODEL, llm_max_retries=4
        )
        read = interpret_chart(progress_chart(j, lab), settings, j, png=progress_png)
        [call] = [c for c in j.logs.llm_calls(lab.research_id) if c.purpose == "chart_read"]
    # llama-server answers 500 "image input is not supported": a capability, not a hiccup.
    assert len(server.chat_requests) == 1 and not call.ok
    assert read.embedded and "ALPHALOOP_VLM_MODEL" in read.context["fallback"]
    assert server.chat_requests[0]["max_tokens"] == settings.vlm_max_tokens


def test_an_oversized_image_is_refused_before_any_request(
    lab: Lab, fake_openai: fake.FakeOpenAI, llm_settings: Callable[..., Settings]
) -> None:
    ihdr = struct.pack(">IIBBBBB", 5000, 3000, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    huge = (
        b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk))
    )
    with lab.journal() as j:
        chart = progress_chart(j, lab)
    with pytest.raises(ValueError, match=r"5000x3000 PNG .* over the cap"):
        read_with_vlm(chart, huge, llm_settings(vlm_model=VLM_MODEL))
    assert fake_openai.chat_requests == []


def test_without_a_vlm_the_embedded_read_is_journaled(lab: Lab, journal_copy: Path) -> None:
    settings = Settings(ALPHALOOP_HOME=str(journal_copy.parent))
    with Journal(journal_copy) as j:
        chart = build_chart("equity_curves", j, session_id=lab.research_id, series=SessionSeries())
        read = interpret_chart(chart, settings.model_copy(update={"vlm_model": None}), j)
        [row] = j.logs.chart_reads(lab.research_id)
    assert row.model == "embedded-reader" and row.bullets == read.bullets
    assert row.trial_id == chart.trial_id and row.context["trial"] == chart.trial_idx
    assert row.raw_text is None and row.elapsed_s == read.elapsed_s
