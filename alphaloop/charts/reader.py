"""The embedded, data-grounded chart reader: key figures and 4-6 bullets from a figure's own data.

It reads the traces of the ``go.Figure`` (found by name) and its ``layout.meta``, nothing else,
so every bullet states a fact computable from what is drawn: trend, best point and when it was
reached, plateau, drawdown, outliers, comparison with the baseline. It needs no model and no
network, and it answers in milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import plotly.graph_objects as go
from scipy import stats

from alphaloop.charts import figures as F
from alphaloop.charts._reading import (
    PLATEAU_SHARE,
    Reading,
    drawdown,
    figure_meta,
    outliers,
    pct,
    plural,
    xy,
)
from alphaloop.charts.portfolio_reader import read_equity, read_weights
from alphaloop.charts.validation import ValidationDrawn
from alphaloop.charts.validation_reader import read_validation
from alphaloop.exceptions import InvalidRequest

MAX_BULLETS = 6


# --- training curve ------------------------------------------------------------------------


def _single_point(x: list[Any], y: np.ndarray) -> list[str]:
    return [
        f"One update so far: mean episode reward {y[0]:.4f} at step {x[0]:,}.",
        "There is no trend, plateau or drawdown to read from a single point yet.",
        f"Best so far is that point: {y[0]:.4f} at step {x[0]:,}.",
        "No outliers: one point has nothing to stand out from.",
    ]


def _plateau_bullet(x: list[Any], y: np.ndarray, facts: dict[str, Any]) -> str:
    whole = float(y.max() - y.min())
    k = max(2, len(y) // 4)
    tail = y[-k:]
    spread = float(tail.max() - tail.min())
    facts["last_quarter_spread"] = spread
    if whole > 0 and spread <= PLATEAU_SHARE * whole:
        return (
            f"Plateau: the last {k} points (steps {x[-k]:,}-{x[-1]:,}) stay within {spread:.4f}, "
            f"{pct(spread / whole)} of the whole run's range."
        )
    share = f", {pct(spread / whole)} of the whole range" if whole > 0 else ""
    return (
        f"No plateau yet: the last {k} points (steps {x[-k]:,}-{x[-1]:,}) still span "
        f"{spread:.4f}{share}."
    )


def _setback_bullets(x: list[Any], y: np.ndarray, facts: dict[str, Any]) -> list[str]:
    """The largest fall from a high, and the outlying updates (or the largest change)."""
    bullets = []
    fall, high, low = drawdown(y)
    facts["largest_fall"] = fall
    if fall > 0:
        bullets.append(
            f"Largest setback: from {y[high]:.4f} at step {x[high]:,} down to {y[low]:.4f} at "
            f"step {x[low]:,} ({fall:.4f})."
        )
    else:
        bullets.append("The reward never fell below an earlier high.")
    odd = outliers(y)
    steps = np.diff(y)
    if odd:
        i = max(odd, key=lambda j: abs(steps[j - 1]))
        bullets.append(
            f"{plural(len(odd), 'outlying update')}; the largest jump is {steps[i - 1]:+.4f} "
            f"at step {x[i]:,} against a median change of {float(np.median(steps)):+.4f}."
        )
    elif len(y) >= 3:
        i = int(np.argmax(np.abs(steps))) + 1
        bullets.append(
            f"No outlying update: the largest single change is {steps[i - 1]:+.4f} at step "
            f"{x[i]:,}."
        )
    return bullets


def _training_curve(fig: go.Figure) -> Reading:
    x, y, _ = xy(fig, F.REWARD_TRACE)
    if not len(y):
        raise InvalidRequest("the training curve has no points to read")
    n = len(y)
    best = int(np.argmax(y))
    span = x[-1] - x[0]
    facts: dict[str, Any] = {
        "points": n,
        "first": {"step": x[0], "reward": float(y[0])},
        "last": {"step": x[-1], "reward": float(y[-1])},
        "best": {"step": x[best], "reward": float(y[best])},
    }
    if n == 1:
        return facts, _single_point(x, y)
    change = float(y[-1] - y[0])
    slope = float(np.polyfit(np.asarray(x, dtype=float), y, 1)[0]) if span else 0.0
    facts.update(change=change, slope_per_10k_steps=slope * 10_000)
    bullets = [
        f"Mean episode reward went from {y[0]:.4f} to {y[-1]:.4f} over steps {x[0]:,}-{x[-1]:,} "
        f"({n} points): {'up' if change > 0 else 'down' if change < 0 else 'flat'} "
        f"{abs(change):.4f}, a fitted slope of {slope * 10_000:+.4f} per 10k steps."
    ]
    where = (x[best] - x[0]) / span if span else 1.0
    line = f"Best point: {y[best]:.4f} at step {x[best]:,}, {pct(where)} of the way through"
    line += "." if best == n - 1 else f"; the last point is {y[best] - y[-1]:.4f} below it."
    bullets.append(line)
    bullets.append(_plateau_bullet(x, y, facts))
    bullets += _setback_bullets(x, y, facts)
    if figure_meta(fig).get("status") == "running":
        bullets.append(f"The run is still training: {n} points so far.")
    return facts, bullets


# --- research progress ---------------------------------------------------------------------


def _rows(fig: go.Figure, name: str) -> list[Row]:
    x, y, custom = xy(fig, name)
    return [
        (int(i), float(v), str(c[2]) if len(c) > 2 else "")
        for i, v, c in zip(x, y, custom or [[]] * len(x), strict=False)
    ]


Row = tuple[int, float, str]


def _best_bullets(
    kept: list[Row], best: Row | None, search_idx: list[int], metric: str, meta: dict[str, Any]
) -> list[str]:
    """Where the best came from, and how far it is from the baseline mean."""
    bullets = []
    bm, floor = meta.get("baseline_mean"), meta.get("noise_floor")
    if best is not None and best[0] in {r[0] for r in kept}:
        nth = search_idx.index(best[0]) + 1 if best[0] in search_idx else len(search_idx)
        bullets.append(
            f"Best: trial #{best[0]} with {metric} {best[1]:.3f}, reached at search trial {nth} "
            f"of {len(search_idx)}."
        )
    elif best is not None:
        who = (
            "Finalize picked the default: baseline run"
            if meta.get("pick")
            else "No search trial was kept; the best is baseline run"
        )
        bullets.append(f"{who} #{best[0]} with {metric} {best[1]:.3f}.")
    if bm is not None and best is not None:
        diff = best[1] - bm
        noise = f", {diff / floor:.1f} times the noise floor {floor:.3f}" if floor else ""
        bullets.append(f"That is {diff:+.3f} against the baseline mean {bm:.3f}{noise}.")
    elif bm is None:
        bullets.append("There is no baseline run to compare with.")
    return bullets


def _plateau_since(kept: list[Row], search_idx: list[int]) -> list[str]:
    if kept:
        last_keep = max(r[0] for r in kept)
        after = [i for i in search_idx if i > last_keep]
        if len(after) >= 2:
            return [
                f"Plateau: no new best in the last {len(after)} search trials "
                f"(#{after[0]}-#{after[-1]})."
            ]
        if after:
            return [f"One search trial (#{after[0]}) has run since the best, without beating it."]
        return [f"The latest search trial (#{last_keep}) set the best: no plateau yet."]
    if search_idx:
        return [
            f"None of the {plural(len(search_idx), 'search trial')} beat the incumbent with "
            "confidence (the keep rule's t-margin over the seed noise)."
        ]
    return []


def _outlier_and_failures(
    kept: list[Row], dropped: list[Row], best: Row | None, failed: list[tuple], bm: Any
) -> list[str]:
    bullets = []
    above = [r for r in dropped if best is not None and r[1] > best[1]]
    if above:
        top = max(above, key=lambda r: r[1])
        bullets.append(
            f"Outlier: trial #{top[0]} scored {top[1]:.3f}, above the best, but was discarded"
            + (f" ({top[2]})." if top[2] else ".")
        )
    elif kept or dropped:
        low = min(kept + dropped, key=lambda r: r[1])
        vs = f" ({low[1] - bm:+.3f} against the baseline mean)" if bm is not None else ""
        bullets.append(f"Lowest search result: trial #{low[0]} at {low[1]:.3f}{vs}.")
    if failed:
        idx, status, error, _ = failed[0]
        more = f" and {len(failed) - 1} more" if len(failed) > 1 else ""
        detail = f" ({error[:90]})" if error else ""
        bullets.append(f"Failures: trial #{idx} {status}{detail}{more}.")
    return bullets


def _research_progress(fig: go.Figure) -> Reading:
    meta = figure_meta(fig)
    metric = meta.get("metric", "objective")
    base, kept = _rows(fig, F.BASELINE_TRACE), _rows(fig, F.KEPT_TRACE)
    dropped, raced = _rows(fig, F.DISCARDED_TRACE), _rows(fig, F.RACED_TRACE)
    fx, _, fcustom = xy(fig, F.FAILED_TRACE)
    failed = [(int(i), str(c[1]), str(c[2]), str(c[3])) for i, c in zip(fx, fcustom, strict=False)]
    search_idx = sorted(
        [r[0] for r in kept + dropped + raced] + [f[0] for f in failed if f[3] == "search"]
    )
    bm, floor = meta.get("baseline_mean"), meta.get("noise_floor")
    # Ties go to the earlier trial, as in the journal's leaderboard.
    best = max(kept, key=lambda r: (r[1], -r[0])) if kept else None
    if best is None and base:
        best = max(base, key=lambda r: (r[1], -r[0]))
    pick = meta.get("pick")
    if pick:  # finalize's pick, as the page names it (not the luckiest baseline seed)
        best = (int(pick["idx"]), float(pick["objective"]), "")
    facts: dict[str, Any] = {
        "metric": metric,
        "search_trials": len(search_idx),
        "baseline_runs": len(base),
        "kept": len(kept),
        "discarded": len(dropped),
        "raced_out": len(raced),
        "failed": len(failed),
        "baseline_mean": bm,
        "noise_floor": floor,
        "best": {"trial": best[0], "objective": best[1], "kept": bool(kept)} if best else None,
    }
    budget = meta.get("budget")
    # Invalid rows are proposals that never ran: the budget counts only trials that did.
    invalid = sum(f[1] == "invalid" for f in failed if f[3] == "search")
    ran = len(search_idx) - invalid
    facts["counted_trials"], facts["invalid"] = ran, invalid
    of = f" of a budget of {budget}" if budget else ""
    unrun = f" ({plural(invalid, 'invalid proposal')}, not counted, never ran)" if invalid else ""
    bullets = [
        f"{plural(ran, 'search trial')}{of} ran after {plural(len(base), 'baseline run')}: "
        f"{len(kept)} kept, {len(dropped)} discarded, "
        + (f"{len(raced)} raced out (partial scores, not ranked), " if raced else "")
        + f"{len(failed) - invalid} crashed or timed out{unrun}."
    ]
    bullets += _best_bullets(kept, best, search_idx, metric, meta)
    bullets += _plateau_since(kept, search_idx)
    bullets += _outlier_and_failures(kept, dropped, best, failed, bm)
    if base:
        values = [r[1] for r in base]
        noise = f" (noise floor {floor:.3f})" if floor is not None else ""
        bullets.append(
            f"The {len(base)} baseline runs score {min(values):.3f} to {max(values):.3f}{noise}."
        )
    return facts, bullets


# --- ratio curve ---------------------------------------------------------------------------


def _ratio_curve(fig: go.Figure) -> Reading:
    ranks, sharpe, info = xy(fig, F.SHARPE_TRACE)
    _, dd, _ = xy(fig, F.DRAWDOWN_TRACE)
    if not len(sharpe):
        raise InvalidRequest("the ranking has no trials to read")
    n = len(sharpe)
    runs = {c[0] for c in info}
    manual = {c[0] for c in info if c[3] == "manual run"}

    def who(i: int) -> str:
        return f"trial #{info[i][1]} of {info[i][0]} ({info[i][3]})"

    deepest = int(np.nanargmax(dd))
    facts: dict[str, Any] = {
        "trials": n,
        "runs": len(runs),
        "manual_runs": len(manual),
        "best": {"session": info[0][0], "trial": info[0][1], "sharpe": float(sharpe[0])},
        "median_sharpe": float(np.median(sharpe)),
        "max_drawdown_range": [float(np.nanmin(dd)), float(np.nanmax(dd))],
    }
    bullets = [
        f"{n} completed trials from {len(runs)} runs ({len(manual)} manual) ranked by "
        "validation Sharpe.",
        f"Best: Sharpe {sharpe[0]:.3f}, {who(0)}, with a max drawdown of {dd[0]:.1%}.",
        f"Median Sharpe {np.median(sharpe):.3f}, worst {sharpe[-1]:.3f}; "
        f"{plural(int((sharpe < 0).sum()), 'trial')} below zero.",
        f"Max drawdowns run from {np.nanmin(dd):.1%} to {np.nanmax(dd):.1%}; the deepest is "
        f"{who(deepest)}, ranked {int(ranks[deepest])} of {n}.",
    ]
    if n >= 3 and np.ptp(sharpe) > 0 and np.nanmax(dd) > np.nanmin(dd):
        rho = float(stats.spearmanr(sharpe, dd).statistic)
        facts["rank_correlation_sharpe_drawdown"] = rho
        if abs(rho) < 0.2:
            bullets.append(f"Sharpe and drawdown are barely related (rank correlation {rho:+.2f}).")
        else:
            side = "smaller" if rho < 0 else "larger"
            bullets.append(
                f"Higher Sharpe goes with {side} drawdowns (rank correlation {rho:+.2f})."
            )
    base = [i for i, c in enumerate(info) if c[2] == "baseline"]
    if base:
        bullets.append(
            f"The best baseline run ranks {base[0] + 1} of {n}: {plural(base[0], 'trial')} beat it."
        )
    return facts, bullets


READERS: dict[str, Callable[[go.Figure], Reading]] = {
    "training_curve": _training_curve,
    "research_progress": _research_progress,
    "ratio_curve": _ratio_curve,
    "equity_curves": read_equity,
    "weights": read_weights,
}


def read_figure(fig: go.Figure, validation: ValidationDrawn | None = None) -> Reading:
    """The key figures of a chart and at most six bullets about them (``validation``: the
    model a validation chart was drawn from, which its reader reads).

    Raises:
        InvalidRequest: a figure this reader does not know, or one with no data.
    """
    kind = figure_meta(fig).get("kind")
    if kind == "validation":
        facts, bullets = read_validation(fig, validation)
        return facts, bullets[:MAX_BULLETS]
    reader = READERS.get(kind)
    if reader is None:
        raise InvalidRequest(f"no embedded reader for a chart of kind {kind!r}")
    facts, bullets = reader(fig)
    return facts, bullets[:MAX_BULLETS]
