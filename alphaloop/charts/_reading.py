"""What the embedded readers share: trace data by name, drawdowns, outliers, wording."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from alphaloop.charts._style import trace

# The share of a curve's whole range its last quarter may span and still count as a plateau.
PLATEAU_SHARE = 0.10
# A step is an outlier when it is this many median absolute deviations from the median step.
OUTLIER_MADS = 5.0

Reading = tuple[dict[str, Any], list[str]]


def figure_meta(fig: go.Figure) -> dict[str, Any]:
    meta = fig.layout.meta
    return dict(meta) if isinstance(meta, dict) else {}


def xy(fig: go.Figure, name: str) -> tuple[list[Any], np.ndarray, list[Any]]:
    t = trace(fig, name)
    if t is None or t.y is None:
        return [], np.array([]), []
    return list(t.x), np.asarray(t.y, dtype=float), list(t.customdata or [])


def plural(count: int, noun: str) -> str:
    """``1 trial``, ``3 trials``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def pct(share: float) -> str:
    return f"{share:.0%}"


def drawdown(y: np.ndarray, *, relative: bool = False) -> tuple[float, int, int]:
    """Largest fall from a running high: (size, index of the high, index of the low).

    ``relative`` measures falls as a fraction of their high, as a wealth curve's drawdown is:
    on a curve that grows, the largest fall in units is often not the largest in percent.
    """
    running = np.maximum.accumulate(y)
    falls = (running - y) / np.where(running > 0, running, 1.0) if relative else running - y
    low = int(np.argmax(falls))
    high = int(np.argmax(y[: low + 1]))
    return float(falls[low]), high, low


def outliers(y: np.ndarray) -> list[int]:
    """Indices ``i`` whose step ``y[i] - y[i-1]`` is far from the typical step."""
    if len(y) < 6:
        return []
    steps = np.diff(y)
    center = float(np.median(steps))
    mad = float(np.median(np.abs(steps - center)))
    if mad <= 0:
        return []
    return [int(i) + 1 for i in np.flatnonzero(np.abs(steps - center) > OUTLIER_MADS * mad)]
