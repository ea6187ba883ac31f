"""What the research loop tells whoever runs it, typed: a session created, a trial started, a
trial finished, the session finalized.

An ``on_event`` callback takes a :data:`LoopEvent` and tells the kinds apart by ``name`` (a
literal, so a type checker narrows on it). The events carry journal records, already written:
a view that shows them reads what the journal holds. This module is light (the journal's
models and the knobs), so a front end may import it before the loop is loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from alphaloop.journal import FinalReport, TrialKind, TrialRecord
from alphaloop.knobs import BoundsClip, ConfigDelta

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class Proposal(BaseModel):
    """An edit a proposer made, and who made it (journaled with the trial it becomes), with
    the exact prompt an LLM made it from (chat messages as JSON text; None for TPE)."""

    model_config = _FROZEN

    changes: dict[str, float]
    rationale: str
    proposer: str
    prompt: str | None = None

    @classmethod
    def of(cls, delta: ConfigDelta, proposer: str, prompt: str | None = None) -> Self:
        return cls(
            changes=dict(delta.changes),
            rationale=delta.rationale,
            proposer=proposer,
            prompt=prompt,
        )

    def delta(self) -> ConfigDelta:
        return ConfigDelta(changes=self.changes, rationale=self.rationale)


class SessionCreated(BaseModel):
    """A session was journaled; its loop starts next."""

    model_config = _FROZEN

    name: Literal["session_created"] = "session_created"
    session_id: str


class TrialStarted(BaseModel):
    """A trial's row was journaled and it is running: a baseline or confirmation seed, or a
    search trial with the proposal it runs and the knobs clipped to their bounds."""

    model_config = _FROZEN

    name: Literal["trial_started"] = "trial_started"
    idx: int
    kind: TrialKind
    proposal: Proposal | None = None
    clips: tuple[BoundsClip, ...] = ()


class TrialFinished(BaseModel):
    """A trial finished with its verdict, as journaled."""

    model_config = _FROZEN

    name: Literal["trial_finished"] = "trial_finished"
    trial: TrialRecord


class Finalized(BaseModel):
    """The session was finalized: its report, as journaled."""

    model_config = _FROZEN

    name: Literal["finalized"] = "finalized"
    report: FinalReport


LoopEvent = Annotated[
    SessionCreated | TrialStarted | TrialFinished | Finalized, Field(discriminator="name")
]
OnEvent = Callable[[LoopEvent], None]


def ignore(event: LoopEvent) -> None:
    """The ``on_event`` of a run nobody watches."""
