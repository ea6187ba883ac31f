"""The proposer protocol and the validation-only view of the journal a proposer is given."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from alphaloop.knobs import BoundsClip, ConfigDelta, TrialConfig
from alphaloop.spec import Objective


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
    # Trials proposed but still running (only with parallel workers): a proposer must not
    # propose them again (TPE treats them as "constant liars", the LLM is shown them).
    pending: list[TrialView] = []
    # Edits of this step already refused because they clip to a config the session has run
    # ("... clips to trial 7's config"); a proposer must propose something else.
    rejected: list[str] = []


@runtime_checkable
class Proposer(Protocol):
    """Proposes the next edit: everything the research loop uses of a proposer.

    Attributes:
        name: what the proposer is (``tpe``, ``random``, ``llm``).
        last_name: who made the last proposal, journaled with its trial: ``name``, or e.g.
            ``tpe (fallback)`` when an LLM proposer's fallback answered.
    """

    name: str

    @property
    def last_name(self) -> str: ...

    def tokens_used(self) -> int:
        """LLM tokens this session has spent proposing (what its token budget counts)."""
        ...

    def propose(self, ctx: ProposalContext) -> ConfigDelta: ...


class ProposerBase:
    """What a proposer that spends no tokens and never delegates has in common."""

    name: str = "proposer"
    last_prompt: str | None = None  # only an LLM proposal has a prompt to journal

    @property
    def last_name(self) -> str:
        return self.name

    def tokens_used(self) -> int:
        return 0


def changed_knobs(ctx: ProposalContext, values: dict[str, float]) -> dict[str, float]:
    """The subset of ``values`` that differs from the best config (what a delta should carry)."""
    best = ctx.best_config.model_dump()
    return {k: v for k, v in values.items() if best[k] != v}
