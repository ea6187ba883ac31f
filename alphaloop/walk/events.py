"""What a walk tells whoever runs it, typed: an epoch begun (its session journaled) and an
epoch traded (its result journaled). Epochs run in this process also pass on their sessions'
own events (:mod:`alphaloop.meta_agent.events`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from alphaloop.journal import EpochResult
from alphaloop.meta_agent.events import LoopEvent

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class EpochBegun(BaseModel):
    """An epoch's session is journaled (or found, on a resume) and about to run."""

    model_config = _FROZEN

    name: Literal["epoch_begun"] = "epoch_begun"
    epoch: int
    n_epochs: int
    session_id: str
    first_day: str
    last_day: str


class EpochTraded(BaseModel):
    """An epoch's session finished and what it traded over its period is journaled."""

    model_config = _FROZEN

    name: Literal["epoch_traded"] = "epoch_traded"
    n_epochs: int
    result: EpochResult


WalkEvent = EpochBegun | EpochTraded | LoopEvent
OnWalkEvent = Callable[[WalkEvent], None]


def ignore(event: WalkEvent) -> None:
    """The ``on_event`` of a walk nobody watches."""
