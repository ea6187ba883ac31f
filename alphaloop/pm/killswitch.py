"""The kill switch: the reasons a tick sends nothing, checked in a fixed order."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["KillSwitch", "halt_reason"]


class KillSwitch(BaseModel):
    """The limits a tick is checked against (from the settings ``pm_*``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_turnover: float
    max_drawdown: float


def halt_reason(
    limits: KillSwitch,
    *,
    manual: str | None,
    stale: str | None,
    equity: float | None,
    peak_equity: float,
    turnover: float | None,
) -> str | None:
    """Why the tick must not trade, or None. Order: a manual halt, stale or missing prices,
    the book's drawdown from its peak, then the tick's turnover."""
    if manual:
        return f"manual halt: {manual}"
    if stale:
        return stale
    if equity is not None and peak_equity > 0:
        drawdown = 1.0 - equity / peak_equity
        if drawdown > limits.max_drawdown:
            return (
                f"drawdown {drawdown:.2%} from the book's peak exceeds pm_max_drawdown "
                f"{limits.max_drawdown:.2%}"
            )
    if turnover is not None and turnover > limits.max_turnover + 1e-12:
        return f"turnover {turnover:.4f} exceeds pm_max_turnover {limits.max_turnover:g}"
    return None
