"""The research loop's state (checkpointed) and its runtime context (not checkpointed).

The journal is the source of truth; the checkpointed state only carries what is in flight
between two nodes (a proposal, the clipped config, a finished trial awaiting its verdict), so a
resumed session can pick up mid-step without asking the proposer (or paying an LLM) again.

The in-flight values are frozen models. LangGraph's SQLite checkpointer stores them with their
class names, and :data:`CHECKPOINT_TYPES` is the list it may rebuild them from; the nodes read
them back through :func:`proposal_of`, :func:`outcome_of`, :func:`config_of` and
:func:`clips_of`, which also accept the plain dicts a checkpoint written by an older alphaloop
holds.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Self, TypedDict

from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import AlphaloopError, TrialTimeout
from alphaloop.journal import Journal
from alphaloop.knobs import BoundsClip, ConfigDelta, TrialConfig
from alphaloop.market import MarketData
from alphaloop.meta_agent.keep_rule import CONFIRM_SEEDS
from alphaloop.meta_agent.objective import Objective
from alphaloop.meta_agent.proposers import Proposer
from alphaloop.meta_agent.tracing import ITERATION, OpenSpan, iteration_attributes
from alphaloop.metrics import Metrics
from alphaloop.settings import Settings
from alphaloop.trials import TrialBudget, TrialResult

TRACEBACK_TAIL = 2000  # characters of a crashed trial's traceback kept in its row
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


class OutcomeStatus(StrEnum):
    """How running a trial ended: it produced a result, or it crashed or ran out of time."""

    ok = "ok"
    crash = "crash"
    timeout = "timeout"


class TrialOutcome(BaseModel):
    """What running one trial produced, awaiting its verdict (never raised: a failing trial
    is an outcome, journaled as a crash, and the loop goes on)."""

    model_config = _FROZEN

    status: OutcomeStatus
    result: TrialResult | None = None
    error: str | None = None
    traceback_tail: str | None = None

    @classmethod
    def failed(cls, err: BaseException) -> Self:
        """The outcome of a trial that raised ``err`` (call it inside the ``except`` block)."""
        if isinstance(err, TrialTimeout):
            return cls(status=OutcomeStatus.timeout, error=str(err))
        return cls(
            status=OutcomeStatus.crash,
            error=str(err) if isinstance(err, AlphaloopError) else repr(err),
            traceback_tail=traceback.format_exc()[-TRACEBACK_TAIL:],
        )

    @property
    def metrics(self) -> Metrics | None:
        return self.result.metrics if self.result is not None else None


class LoopEvent(StrEnum):
    """What the loop tells ``on_event`` (the payload is a dict: ``trial_started`` carries
    ``idx`` and ``kind``, and for a search trial the ``proposal`` and ``clips``;
    ``trial_finished`` the ``trial`` record; ``finalized`` the session's final record)."""

    trial_started = "trial_started"
    trial_finished = "trial_finished"
    finalized = "finalized"


class SessionState(TypedDict, total=False):
    session_id: str
    proposal: Proposal | None
    config: TrialConfig | None  # the clipped config of the trial about to run
    clips: list[BoundsClip]
    parent_id: int | None
    trial_id: int | None
    outcome: TrialOutcome | None  # what run_trial produced, awaiting record's verdict
    stop_reason: str | None


# (module, class) of every type the checkpointed state holds, for the checkpointer's allowlist.
CHECKPOINT_TYPES: tuple[tuple[str, str], ...] = tuple(
    (t.__module__, t.__name__)
    for t in (Proposal, TrialOutcome, OutcomeStatus, TrialResult, Metrics, TrialConfig, BoundsClip)
)


def proposal_of(state: SessionState) -> Proposal:
    return Proposal.model_validate(state["proposal"])


def outcome_of(state: SessionState) -> TrialOutcome:
    return TrialOutcome.model_validate(state["outcome"])


def config_of(state: SessionState) -> TrialConfig:
    return TrialConfig.model_validate(state["config"])


def clips_of(state: SessionState) -> list[BoundsClip]:
    return [BoundsClip.model_validate(c) for c in state.get("clips") or []]


@dataclass
class SessionContext:
    """What the nodes need at run time: live objects that are rebuilt on resume."""

    session_id: str
    goal: str
    mode: str
    journal: Journal
    data: MarketData
    objective: Objective
    proposer: Proposer
    trial_budget: TrialBudget
    budget: int
    seed: int
    noise_seeds: int
    policy_dir: Path
    confirm_seeds: int = CONFIRM_SEEDS
    time_budget_s: float | None = None
    max_tokens_total: int | None = None
    on_event: Callable[[str, dict[str, Any]], None] = lambda kind, payload: None
    workers: int = 1
    ray_address: str | None = None
    # The settings the session runs under (the ``auto_activate`` rule reads them at finalize).
    settings: Settings | None = None
    # The research.iteration span open across the graph's nodes (see :mod:`.tracing`).
    iteration: OpenSpan | None = None

    def open_iteration(self) -> OpenSpan:
        """The iteration span in progress, or a new one (a resumed session opens one at the
        node it resumes at)."""
        if self.iteration is None:
            self.iteration = OpenSpan(ITERATION, iteration_attributes(self.session_id, self.mode))
        return self.iteration

    def close_iteration(self, err: BaseException | None = None) -> None:
        if self.iteration is not None:
            self.iteration.end(err)
            self.iteration = None

    @property
    def confirm_seed_range(self) -> range:
        """The fresh seeds a candidate is confirmed on: the ``confirm_seeds`` seeds after the
        baseline's, so no confirmation shares a seed with a baseline run, and every candidate
        is confirmed on the same seeds (like with like, as the search trials share
        ``seed``)."""
        first = self.seed + self.noise_seeds
        return range(first, first + self.confirm_seeds)

    @property
    def session_policy_dir(self) -> Path:
        """Where this session's trained policies go."""
        return self.policy_dir / self.session_id
