"""Manual PPO training: one run outside any research session, journaled like a session."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from alphaloop.settings import Settings

if TYPE_CHECKING:
    from alphaloop.meta_agent.manual import ManualRun, ManualRunSpec


def train(
    spec: ManualRunSpec,
    settings: Settings,
    *,
    on_start: Callable[[Any, int], None] | None = None,
    on_update: Callable[[int, float], None] | None = None,
) -> ManualRun:
    """Trains PPO once and scores it on the validation window; the run is journaled as a
    session of one trial, its reward curve written as it trains.

    Args:
        spec: data, knob changes, seed, metric and budget.
        settings: the alphaloop home.
        on_start: told ``(trial, planned env steps)`` when training starts.
        on_update: told ``(env steps so far, mean episode reward)`` as it trains.

    Raises:
        DataError: the data cannot be loaded.
        ManualRunFailed: training or evaluation failed (the crashed trial is journaled).
    """
    from alphaloop.meta_agent.manual import train_manual

    return train_manual(spec, settings, on_start=on_start, on_update=on_update)
