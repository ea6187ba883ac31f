"""Reading a chart in 4-6 bullets: by a vision model when one is configured, else embedded.

With ``ALPHALOOP_VLM_MODEL`` set, the chart is rendered to a size-capped PNG and sent as a base64
``image_url`` part, with ``{kind, context}`` as text (context: the goal, what the axes mean, the
key figures), to the OpenAI-compatible endpoint through :class:`~alphaloop.llm.LLMClient`; every
attempt is journaled in ``llm_calls`` (purpose ``chart_read``). A reply with fewer than 4 or more
than 6 bullets is normalised (:func:`normalise_bullets`) and its raw text kept. If the model
cannot be reached, or no PNG can be rendered, the embedded reader answers instead and the
journaled context says why. Without a vision model the embedded reader
(:mod:`alphaloop.charts.reader`) answers from the chart's own data. Every read is journaled in
``chart_reads``.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from alphaloop.charts.build import CHART_KINDS, Chart
from alphaloop.charts.export import capped_png, find_chromium, png_size
from alphaloop.charts.reader import read_figure
from alphaloop.exceptions import AlphaloopError
from alphaloop.journal import Journal
from alphaloop.settings import Settings

if TYPE_CHECKING:
    from alphaloop.llm import LLMCallRecord

EMBEDDED_MODEL = "embedded-reader"
MIN_BULLETS, MAX_BULLETS = 4, 6
# What is sent to a vision model: most accept ~20 MB, but a chart needs far less, and a small
# image keeps the request fast and the prompt-token bill low.
MAX_IMAGE_BYTES = 1_000_000
VLM_WIDTH, VLM_HEIGHT = 1024, 576
MAX_IMAGE_SIDE = 2048
DATA_PREFIX = "[data] "

SYSTEM_PROMPT = """\
You read charts made by alphaloop, a research system for portfolio strategies.
Answer with 4 to 6 bullets, one per line, each starting with "- ". Each bullet states one thing a \
reader can check on the chart or in the context: the trend, the best point and when it was \
reached, plateaus, drawdowns, outliers, and how the strategy compares with the baseline. Quote \
numbers from the context where they help. No title, no preamble, no advice."""

# The fields of a ChartRead that its chart_reads row keeps.
_JOURNALED = {"kind", "model", "bullets", "elapsed_s", "raw_text", "context"}
_BULLET = re.compile(r"^\s*(?:[-*+\u2022\u2023\u25aa\u2013]|\d{1,2}[.)])\s+(.*\S)\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])")


class ChartRead(BaseModel):
    """One reading of one chart, as shown and as journaled."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    model: str
    bullets: list[str]
    elapsed_s: float
    context: dict[str, Any]
    raw_text: str | None = None
    embedded: bool
    id: int | None = None  # the chart_reads row, once journaled

    @property
    def signature(self) -> str:
        """``-- nemotron-nano-vl, 3.2 s`` or ``-- embedded reader (data-grounded), 0.00 s``."""
        who = "embedded reader (data-grounded)" if self.embedded else self.model
        return f"\u2014 {who}, {self.elapsed_s:.2f} s"


def _plain(value: Any) -> Any:
    """JSON-safe: numpy scalars as Python numbers, non-finite floats as None."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def chart_context(chart: Chart, facts: dict[str, Any]) -> dict[str, Any]:
    """What a reader is told besides the image: the goal, what the axes mean, the key figures."""
    layout = chart.figure.layout.to_plotly_json()

    def title(axis: str) -> str | None:
        return ((layout.get(axis) or {}).get("title") or {}).get("text")

    axes = {"x": title("xaxis"), "y": title("yaxis")}
    if title("yaxis2"):
        axes["y2 (right)"] = title("yaxis2")
    context: dict[str, Any] = {
        "goal": chart.goal,
        "chart": CHART_KINDS.get(chart.kind, chart.kind),
        "axes": axes,
        "key_figures": facts,
    }
    if chart.session_id:
        context["session_id"] = chart.session_id
    if chart.trial_idx is not None:
        context["trial"] = chart.trial_idx
    return _plain(context)


def _clean(text: str) -> str:
    return " ".join(text.replace("**", "").replace("__", "").split()).strip()


def _split_once(items: list[str], pattern: re.Pattern[str] | str) -> bool:
    """Splits the longest item that can be split; returns whether one was."""
    for i in sorted(range(len(items)), key=lambda j: -len(items[j])):
        parts = [p.strip() for p in re.split(pattern, items[i]) if p.strip()]
        if len(parts) > 1:
            items[i : i + 1] = parts
            return True
    return False


def normalise_bullets(text: str, *, spare: Sequence[str] = ()) -> list[str]:
    """4-6 bullets from a model's reply.

    Bullet lines (``-``, ``*``, ``•``, ``1.``...) are taken, continuation lines joined to their
    bullet and any preamble dropped; a reply without bullets is taken line by line. Fewer than
    four are split at sentence ends, then at semicolons; if that still leaves fewer than four,
    ``spare`` bullets (the embedded reader's, marked ``[data]``) fill up. More than six are
    trimmed to the first six.
    """
    items: list[str] = []
    seen_bullet = False
    for line in text.splitlines():
        match = _BULLET.match(line)
        if match:
            items.append(match.group(1))
            seen_bullet = True
        elif line.strip() and seen_bullet:
            items[-1] += " " + line.strip()
    if not seen_bullet:
        items = [line for line in text.splitlines() if line.strip()]
    items = [c for c in (_clean(i) for i in items) if c]
    for pattern in (_SENTENCE_END, r";\s+"):
        while len(items) < MIN_BULLETS and _split_once(items, pattern):
            pass
    for extra in spare:
        if len(items) >= MIN_BULLETS:
            break
        items.append(DATA_PREFIX + extra)
    return items[:MAX_BULLETS]


def read_embedded(chart: Chart) -> ChartRead:
    """The embedded reader's bullets about ``chart`` (not journaled)."""
    started = time.perf_counter()
    facts, bullets = read_figure(chart.figure, chart.validation)
    context = chart_context(chart, facts)
    return ChartRead(
        kind=chart.kind,
        model=EMBEDDED_MODEL,
        bullets=bullets,
        elapsed_s=time.perf_counter() - started,
        context=context,
        embedded=True,
    )


def read_with_vlm(
    chart: Chart,
    png: bytes,
    settings: Settings,
    *,
    on_call: Callable[[LLMCallRecord], None] | None = None,
) -> ChartRead:
    """Asks the vision model for a 4-6 bullet read of ``png`` (not journaled).

    Raises:
        LLMError: the endpoint failed after its retries, or is not configured.
        ValueError: ``png`` is not a PNG or is over the size cap.
    """
    width, height = png_size(png)
    if len(png) > MAX_IMAGE_BYTES or max(width, height) > MAX_IMAGE_SIDE:
        raise ValueError(
            f"a {width}x{height} PNG of {len(png):,} bytes is over the cap "
            f"({MAX_IMAGE_BYTES:,} bytes, {MAX_IMAGE_SIDE} pixels a side)"
        )
    from alphaloop.llm import LLMClient, image_part  # the openai client: only when asked for

    facts, spare = read_figure(chart.figure, chart.validation)
    context = chart_context(chart, facts)
    client = LLMClient.for_vision(settings, on_call=on_call)
    question = json.dumps({"kind": chart.kind, "context": context}, separators=(",", ":"))
    messages = [
        {"role": "system", "content": client.system_prompt(SYSTEM_PROMPT)},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"{question}\n\nRead this chart in 4 to 6 bullets."},
                image_part(png),
            ],
        },
    ]
    started = time.perf_counter()
    reply = client.chat(
        messages,
        purpose="chart_read",
        session_id=chart.session_id,
        trial_id=chart.trial_id,
        temperature=0.2,
        max_tokens=settings.vlm_max_tokens,
    )
    elapsed = time.perf_counter() - started
    bullets = normalise_bullets(reply.content, spare=spare)
    context["image"] = {"width": width, "height": height, "bytes": len(png)}
    return ChartRead(
        kind=chart.kind,
        model=reply.model or client.model,
        bullets=bullets,
        elapsed_s=elapsed,
        context=context,
        raw_text=reply.raw_content if reply.raw_content is not None else reply.content,
        embedded=False,
    )


def _vlm_png(chart: Chart, settings: Settings, png: bytes | None) -> bytes:
    if png is not None:
        width, height = png_size(png)
        if len(png) <= MAX_IMAGE_BYTES and max(width, height) <= MAX_IMAGE_SIDE:
            return png
    return capped_png(
        chart.figure,
        max_bytes=MAX_IMAGE_BYTES,
        width=VLM_WIDTH,
        height=VLM_HEIGHT,
        chromium=find_chromium(settings.chromium),
    )


def interpret_chart(
    chart: Chart,
    settings: Settings,
    journal: Journal,
    *,
    png: bytes | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> ChartRead:
    """Reads ``chart`` (vision model if ``settings.vlm_model``, else embedded) and journals it.

    Args:
        chart: the chart.
        settings: the vision model, endpoint and Chromium.
        journal: where the read (and every LLM attempt) is journaled.
        png: a PNG of the chart already rendered (reused if under the size cap).
        on_warning: told why the vision model was not used, when it was asked for.

    Returns:
        The read, with ``id`` the journaled ``chart_reads`` row.
    """
    read: ChartRead | None = None
    fallback: str | None = None
    if settings.vlm_model:

        def journal_call(record: LLMCallRecord) -> None:
            journal.logs.add_llm_call(**record.model_dump())

        try:
            image = _vlm_png(chart, settings, png)
            read = read_with_vlm(chart, image, settings, on_call=journal_call)
        except (AlphaloopError, ValueError) as err:  # the PNG or the vision model failed
            fallback = f"vision model {settings.vlm_model!r} not used: {err}"
            if on_warning is not None:
                on_warning(f"{fallback}; the embedded reader answers instead")
    if read is None:
        read = read_embedded(chart)
        if fallback:
            read = read.model_copy(update={"context": {**read.context, "fallback": fallback}})
    row = journal.logs.add_chart_read(
        **read.model_dump(include=_JOURNALED),
        session_id=chart.session_id,
        trial_id=chart.trial_id,
    )
    return read.model_copy(update={"id": row.id})
