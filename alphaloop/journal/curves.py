"""Training curves as the journal keeps them: at most :data:`MAX_CURVE_POINTS` points, evenly
spread over the run (``journal.trials.set_curve`` stores them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Training curves are journaled as at most this many points, evenly spread over the run: enough
# for any chart, small enough to rewrite several times a second while PPO trains.
MAX_CURVE_POINTS = 200


def check_max_points(max_points: int | None) -> None:
    """Refuses a cap that could not keep both the first and the newest point.

    Raises:
        ValueError: ``max_points`` below 2.
    """
    if max_points is not None and max_points < 2:
        raise ValueError(
            f"max_points must be at least 2 (the first and the newest), got {max_points}"
        )


def downsample_curve(points: Sequence[Any], max_points: int) -> list[Any]:
    """At most ``max_points`` of ``points``, evenly spaced over the whole run: the first and the
    last are always kept, the ones between are the nearest to an even grid.

    Raises:
        ValueError: ``max_points`` below 2.
    """
    check_max_points(max_points)
    n = len(points)
    if n <= max_points:
        return list(points)
    # Even spacing with step (n - 1) / (max_points - 1) > 1, so rounding never repeats an index.
    step = (n - 1) / (max_points - 1)
    return [points[round(i * step)] for i in range(max_points)]
