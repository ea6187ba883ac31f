"""The embedded reader for a trial's portfolio charts: equity against the baselines, and weights.

Like :mod:`alphaloop.charts.reader`, it reads only the figure's traces and ``layout.meta``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from alphaloop.charts._reading import Reading, drawdown, figure_meta, pct, xy
from alphaloop.charts._style import BASELINE_NAMES
from alphaloop.charts.portfolio import equity_trace_name
from alphaloop.exceptions import InvalidRequest

# --- equity curves -------------------------------------------------------------------------


def _validation_bullets(
    label: str, x: list[Any], y: np.ndarray, others: dict[str, np.ndarray], facts: dict[str, Any]
) -> list[str]:
    """What the validation window says: the end against the baselines, the deepest drawdown,
    the highest equity, the worst and best day."""
    fall, high, low = drawdown(y, relative=True)
    peak = int(np.argmax(y))
    recovered = next((i for i in range(low, len(y)) if y[i] >= y[high]), None)
    vs = "; ".join(f"{k} {v[-1]:.3f}" for k, v in others.items() if len(v))
    bullets = [
        f"Validation {x[0]} to {x[-1]}: {label} turns 1 into {y[-1]:.3f} "
        f"({y[-1] - 1:+.1%}); baselines: {vs}."
    ]
    gaps = [f"{y[-1] - v[-1]:+.3f} vs {k}" for k, v in others.items() if len(v)]
    if gaps:
        bullets.append(f"Against the baselines at the end: {', '.join(gaps)}.")
    if fall > 0:
        back = (
            f", recovered by {x[recovered]}"
            if recovered is not None
            else ", not recovered by the window's end"
        )
        bullets.append(
            f"Deepest drawdown: {facts['max_drawdown']:.1%}, from the high on "
            f"{x[high]} to the low on {x[low]}{back}."
        )
    else:
        bullets.append(f"{label} never fell below an earlier high.")
    bullets.append(
        f"Highest equity {y[peak]:.3f} on {x[peak]}, "
        f"{pct(peak / max(len(y) - 1, 1))} of the way through the window."
    )
    daily = y[1:] / y[:-1] - 1.0
    worst, best = int(np.argmin(daily)), int(np.argmax(daily))
    bullets.append(
        f"Worst day {x[worst + 1]} ({daily[worst]:+.2%}); best day {x[best + 1]} "
        f"({daily[best]:+.2%})."
    )
    return bullets


def _window_facts(x: list[Any], y: np.ndarray, others: dict[str, np.ndarray]) -> dict[str, Any]:
    fall, _, _ = drawdown(y, relative=True)
    peak = int(np.argmax(y))
    return {
        "start": x[0],
        "end": x[-1],
        "final": float(y[-1]),
        "max_drawdown": fall,
        "peak": {"date": x[peak], "equity": float(y[peak])},
        "baselines": {k: float(v[-1]) for k, v in others.items() if len(v)},
    }


def read_equity(fig: go.Figure) -> Reading:
    meta = figure_meta(fig)
    label = meta.get("trial_label", "trial")
    facts: dict[str, Any] = {}
    bullets: list[str] = []
    for window in meta.get("windows", []):
        x, y, _ = xy(fig, equity_trace_name(label, window))
        if not len(y):
            continue
        others = {
            name: xy(fig, equity_trace_name(name, window))[1] for name in BASELINE_NAMES.values()
        }
        facts[window] = _window_facts(x, y, others)
        if window == "validation":
            bullets += _validation_bullets(label, x, y, others, facts[window])
        else:
            vs = "; ".join(f"{k} {v[-1]:.3f}" for k, v in others.items() if len(v))
            bullets.insert(
                1,
                f"Held-out test {x[0]} to {x[-1]}: {y[-1]:.3f} ({y[-1] - 1:+.1%}), max drawdown "
                f"{facts[window]['max_drawdown']:.1%}; baselines: {vs}.",
            )
    if not bullets:
        raise InvalidRequest("the equity chart has no curve to read")
    if "test" not in facts:
        bullets.append("No test-window result is journaled for this trial.")
    return facts, bullets


# --- weights -------------------------------------------------------------------------------


def read_weights(fig: go.Figure) -> Reading:
    meta = figure_meta(fig)
    names = [t.name for t in fig.data]
    if not names:
        raise InvalidRequest("the allocation chart has no assets to read")
    dates = list(fig.data[0].x)
    w = np.column_stack([np.asarray(t.y, dtype=float) for t in fig.data])
    mean = w.mean(axis=0)
    top = int(np.argmax(mean))
    day, col = np.unravel_index(int(np.argmax(w)), w.shape)
    held = (w > 0.01).sum(axis=1)
    change = np.abs(np.diff(w, axis=0)).sum(axis=1) if len(w) > 1 else np.zeros(1)
    moved = int(np.argmax(np.abs(w[-1] - w[0])))
    final = meta.get("final_weights") or dict(zip(names, w[-1], strict=True))
    ranked = sorted(final.items(), key=lambda kv: -kv[1])[:3]
    facts: dict[str, Any] = {
        "assets": len(names),
        "days": len(dates),
        "mean_assets_above_1pct": float(held.mean()),
        "largest_mean_weight": {"symbol": names[top], "weight": float(mean[top])},
        "largest_weight": {"symbol": names[col], "date": dates[day], "weight": float(w[day, col])},
        "final_top": dict(ranked),
    }
    bullets = [
        f"{len(names)} assets over {len(dates)} days ({dates[0]} to {dates[-1]}) of the "
        f"{meta.get('window', 'evaluation')} window.",
        f"On average {held.mean():.1f} assets hold more than 1%; the largest average position is "
        f"{names[top]} at {mean[top]:.1%}.",
        f"The largest single weight is {w[day, col]:.1%} in {names[col]} on {dates[day]}.",
    ]
    if len(w) > 1:
        big = int(np.argmax(change))
        bullets.append(
            f"Day-to-day allocation change averages {change.mean():.1%} (sum of absolute "
            f"changes); the largest is {change[big]:.1%} on {dates[big + 1]}."
        )
        bullets.append(
            f"{names[moved]} moved the most from first to last day: {w[0, moved]:.1%} to "
            f"{w[-1, moved]:.1%}."
        )
    bullets.append(
        "At the end the top holdings are " + ", ".join(f"{k} {v:.1%}" for k, v in ranked) + "."
    )
    return facts, bullets
