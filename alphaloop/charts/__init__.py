"""Charts: plotly figures of runs, sessions and trials; HTML and PNG export; chart reading.

Every figure function returns a ``go.Figure`` built from journal records (and, for a trial's
equity and weights, series replayed with the evaluator and handed over as a
:class:`SeriesSource`). :func:`build_chart` goes from a kind and ids to a :class:`Chart`;
:func:`export_figure` writes HTML or PNG (PNG through kaleido and a system Chromium);
:func:`interpret_chart` reads a chart in 4-6 bullets with a vision model or the embedded
data-grounded reader, and journals the read.
"""

from __future__ import annotations

from alphaloop.charts.build import CHART_KINDS, Chart, build_chart, chart_kind
from alphaloop.charts.export import (
    DEFAULT_HEIGHT,
    DEFAULT_WIDTH,
    capped_png,
    check_size,
    check_suffix,
    export_figure,
    find_chromium,
    plotlyjs_name,
    png_size,
    render_png,
    render_pngs,
    write_atomically,
    write_html,
    write_plotlyjs,
)
from alphaloop.charts.figures import ratio_curve, research_progress, training_curve
from alphaloop.charts.interpret import (
    EMBEDDED_MODEL,
    ChartRead,
    interpret_chart,
    normalise_bullets,
    read_embedded,
    read_with_vlm,
)
from alphaloop.charts.portfolio import equity_curves, weights
from alphaloop.charts.reader import read_figure
from alphaloop.charts.series import Allocation, SeriesSource, WindowReturns

__all__ = [
    "CHART_KINDS",
    "DEFAULT_HEIGHT",
    "DEFAULT_WIDTH",
    "EMBEDDED_MODEL",
    "Allocation",
    "Chart",
    "ChartRead",
    "SeriesSource",
    "WindowReturns",
    "build_chart",
    "capped_png",
    "chart_kind",
    "check_size",
    "check_suffix",
    "equity_curves",
    "export_figure",
    "find_chromium",
    "interpret_chart",
    "normalise_bullets",
    "plotlyjs_name",
    "png_size",
    "ratio_curve",
    "read_embedded",
    "read_figure",
    "read_with_vlm",
    "render_png",
    "render_pngs",
    "research_progress",
    "training_curve",
    "weights",
    "write_atomically",
    "write_html",
    "write_plotlyjs",
]
