"""The proposer protocol and the validation-only view of the journal a proposer is given."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from alphaloop.knobs import BoundsClip, ConfigDelta, TrialConfig
from alphaloop.meta_agent.objective import Objective


class TrialView(BaseModel):
    """One finished trial as a proposer sees it: validation figures only."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    idx: int
    kind: str
    status: str
    config: TrialConfig
    changes: dict[str, float]
    rationale: str = ""
    objective: float | None = None
    metrics: dict[str, float] = {}
    reason: str | None = None
    violation: str | None = None
    error: str | None = None
    clips: list[BoundsClip] = []


class ProposalContext(BaseModel):
    """Everything a proposer may know when it proposes the next trial.

    Built from the journal's baseline and search trials on the VALIDATION window; by
    construction it has no field that could carry a test-window figure.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: str
    goal: str
    objective: Objective
    mode: str
    n_assets: int
    budget_total: int
    budget_left: int
    noise_floor: float
    best_config: TrialConfig
    best_objective: float | None
    history: list[TrialView]
    seed: int


@runtime_checkable
class Proposer(Protocol):
    """Proposes the next edit. ``name`` is journaled with every trial it proposed."""

    name: str

    def propose(self, ctx: ProposalContext) -> ConfigDelta: ...


def changed_knobs(ctx: ProposalContext, values: dict[str, float]) -> dict[str, float]:
    """The subset of ``values`` that differs from the best config (what a delta should carry)."""
    best = ctx.best_config.model_dump()
    return {k: v for k, v in values.items() if best[k] != v}
