"""What a trial is given beyond its knobs (the session's ``TrialBudget``, declared with the
session's spec in :mod:`alphaloop.spec`) and what it returns (``TrialResult``).

Part of the frozen evaluator (:mod:`alphaloop.trials`): proposers never edit it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from alphaloop.market import Window
from alphaloop.metrics import Metrics
from alphaloop.spec import TrialBudget
from alphaloop.trials.version import EVALUATOR_VERSION

__all__ = ["TrialBudget", "TrialResult", "Window"]


class TrialResult(BaseModel):
    """What one evaluation produced on one window: a search trial on VALIDATION, a final one on
    TEST, or any subject on explicit rows (``window`` is then ``"explicit"``; the dates say
    which). ``evaluator_version`` names the evaluator that produced the numbers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: str
    window: str
    metric: str
    objective: float
    metrics: Metrics
    baselines: dict[str, Metrics]
    daily_returns: list[float]
    final_weights: list[float]
    elapsed_s: float
    seed: int
    config_hash: str
    data_fingerprint: str
    start_date: str
    end_date: str
    policy_path: str | None = None
    timesteps: int | None = None
    curve: list[tuple[int, float]] = Field(default_factory=list)
    evaluator_version: str = EVALUATOR_VERSION
