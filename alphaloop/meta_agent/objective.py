"""What a session maximises, and the limits that turn a trial into a discard."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from alphaloop.metrics import Metrics, objective_value
from alphaloop.vocabulary import DEFAULT_METRIC, Metric


class Objective(BaseModel):
    """A metric to maximise on validation, with optional hard limits.

    ``max_drawdown`` and ``max_turnover`` are fractions (0.15 = 15%; turnover is annual one-way).
    Limits must be finite: ``nan`` would compare false and never discard anything, and an
    infinite limit is no limit (leave it out instead).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: Metric = DEFAULT_METRIC
    max_drawdown: float | None = Field(default=None, gt=0, le=1, allow_inf_nan=False)
    max_turnover: float | None = Field(default=None, gt=0, allow_inf_nan=False)

    def value(self, metrics: Metrics) -> float:
        return objective_value(metrics, self.metric)

    def violation(self, metrics: Metrics) -> str | None:
        """Why these metrics break a limit, or None when they respect all of them."""
        if self.max_drawdown is not None and metrics.max_drawdown > self.max_drawdown:
            return (
                f"max drawdown {metrics.max_drawdown:.1%} exceeds the limit {self.max_drawdown:.1%}"
            )
        if self.max_turnover is not None and metrics.annual_turnover > self.max_turnover:
            return (
                f"annual turnover {metrics.annual_turnover:.2f} exceeds the limit "
                f"{self.max_turnover:.2f}"
            )
        return None

    def describe(self) -> str:
        parts = [f"maximise validation {self.metric}"]
        if self.max_drawdown is not None:
            parts.append(f"max drawdown <= {self.max_drawdown:.0%}")
        if self.max_turnover is not None:
            parts.append(f"annual turnover <= {self.max_turnover:g}")
        return ", ".join(parts)
