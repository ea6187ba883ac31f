"""Charts of the journal: draw one (replaying the series it needs), export it, read it."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import AlphaloopError, InvalidRequest, check_folder
from alphaloop.ops._journal import open_journal
from alphaloop.settings import Settings

if TYPE_CHECKING:
    from alphaloop.charts import Chart, ChartRead


class ExportedChart(BaseModel):
    """Where a chart was written, and its PNG bytes when it was rendered to PNG."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Path
    format: str
    png: bytes | None = None


def build_chart(
    kind: str, settings: Settings, *, session_id: str | None = None, trial_idx: int | None = None
) -> Chart:
    """Draws chart ``kind`` from the journal; a trial's equity or weights are replayed with the
    frozen evaluator (checked against the journal) before they are drawn.

    Args:
        kind: one of ``alphaloop.charts.CHART_KINDS`` (hyphens allowed).
        settings: where the journal is.
        session_id: the session (default: the newest).
        trial_idx: the trial's index within the session (default: the session's best trial,
            or its trial with a curve).

    Raises:
        NoJournal: there is no journal.
        InvalidRequest, InvalidRequest, NotFound, NotFound, AlphaloopError: see
            :func:`alphaloop.charts.build_chart`.
    """
    from alphaloop.charts import build_chart as draw
    from alphaloop.ops.series import SessionSeries

    with open_journal(settings) as journal:
        return draw(
            kind, journal, session_id=session_id, trial_idx=trial_idx, series=SessionSeries()
        )


def export_chart(
    chart: Chart,
    settings: Settings,
    *,
    out: Path | None = None,
    size: tuple[int, int] | None = None,
) -> ExportedChart:
    """Writes ``chart`` as HTML, or as PNG when ``out`` ends in ``.png``.

    Args:
        chart: a drawn chart.
        settings: the alphaloop home (default folder, Chromium for PNG).
        out: the file (default: ``<home>/charts/<chart name>.html``).
        size: PNG width and height in pixels (default 1100 x 620).

    Raises:
        InvalidRequest: a suffix that is neither .html nor .png, a size out of range.
        AlphaloopError: PNG asked for and no Chromium found, or the file could not be written.
    """
    from alphaloop.charts import (
        DEFAULT_HEIGHT,
        DEFAULT_WIDTH,
        check_suffix,
        export_figure,
        find_chromium,
        render_png,
    )

    fmt = check_suffix(out) if out is not None else "html"
    target = out or settings.charts_dir / f"{chart.name}.html"
    png = None
    if fmt == "png":
        width, height = size or (DEFAULT_WIDTH, DEFAULT_HEIGHT)
        png = render_png(
            chart.figure, width=width, height=height, chromium=find_chromium(settings.chromium)
        )
    try:
        written = export_figure(chart.figure, target, png=png)
    except OSError as err:  # a full disk, a read-only folder: the work failed
        raise AlphaloopError(f"cannot write the chart: {err}") from err
    return ExportedChart(path=written, format=fmt, png=png)


def interpret_chart(
    chart: Chart,
    settings: Settings,
    *,
    png: bytes | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> ChartRead:
    """Reads ``chart`` in 4-6 bullets (the vision model when configured, else the embedded
    data-grounded reader) and journals the read.

    Raises:
        NoJournal: there is no journal.
    """
    from alphaloop.charts import interpret_chart as read

    with open_journal(settings) as journal:
        return read(chart, settings, journal, png=png, on_warning=on_warning)


# The largest image of a chart a client may send to be read (decoded bytes).
MAX_IMAGE_BYTES = 2 * 1024 * 1024


def chart_image(image_b64: str) -> bytes | None:
    """The PNG a client sent of a chart (base64), checked by its first bytes; None for a JPEG,
    which is checked but not read (the vision model is sent PNG).

    Raises:
        InvalidRequest: not base64, over :data:`MAX_IMAGE_BYTES`, or neither PNG nor JPEG.
    """
    try:
        raw = base64.b64decode(image_b64, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequest("image_b64 is not base64; send the image's bytes encoded") from None
    if len(raw) > MAX_IMAGE_BYTES:
        raise InvalidRequest(
            f"image of {len(raw):,} bytes is over the {MAX_IMAGE_BYTES:,}-byte cap; send a "
            "smaller PNG or JPEG"
        )
    if raw.startswith(b"\x89PNG\r\n\x1a\n"):
        return raw
    if raw.startswith(b"\xff\xd8\xff"):
        return None
    raise InvalidRequest("image_b64 is not a PNG or JPEG (checked by its first bytes)")


def chart_kind(kind: str) -> str:
    """``kind`` as a known chart kind (``training-curve`` is ``training_curve``).

    Raises:
        InvalidRequest: not a chart kind (the message lists them).
    """
    from alphaloop.charts import chart_kind as known

    return known(kind)


def check_export(
    out: Path | None, width: int | None = None, height: int | None = None
) -> tuple[str, tuple[int, int]]:
    """The format (``html`` or ``png``) and PNG size an export will use, checked before any
    chart is drawn.

    Raises:
        InvalidRequest: a suffix that is neither .html nor .png, a size out of range.
        InvalidRequest: ``out`` is in a folder that does not exist (the default folder
            under the home is ours to create).
    """
    from alphaloop.charts import DEFAULT_HEIGHT, DEFAULT_WIDTH, check_size, check_suffix

    if out is not None:
        check_folder(out)
    fmt = check_suffix(out) if out is not None else "html"
    size = (width or DEFAULT_WIDTH, height or DEFAULT_HEIGHT)
    if fmt == "png" or width or height:
        check_size(*size)
    return fmt, size
