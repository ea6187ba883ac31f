"""The research loop's state (checkpointed) and its runtime context (not checkpointed).

The journal is the source of truth; the checkpointed state only carries what is in flight
between two nodes (a proposal, the clipped config, a finished trial awaiting its verdict), so a
resumed session can pick up mid-step without asking the proposer (or paying an LLM) again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from alphaloop.journal import Journal
from alphaloop.market import MarketData
from alphaloop.meta_agent.objective import Objective
from alphaloop.meta_agent.proposers import Proposer
from alphaloop.trials import TrialBudget


class SessionState(TypedDict, total=False):
    session_id: str
    proposal: dict[str, Any] | None  # {"changes", "rationale", "proposer"}
    config: dict[str, Any] | None  # the clipped config of the trial about to run
    clips: list[dict[str, Any]]
    parent_id: int | None
    trial_id: int | None
    outcome: dict[str, Any] | None  # what run_trial produced, awaiting record's verdict
    stop_reason: str | None


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
    fallback: Proposer
    trial_budget: TrialBudget
    budget: int
    seed: int
    noise_seeds: int
    policy_dir: Path
    time_budget_s: float | None = None
    max_tokens_total: int | None = None
    tokens_used: Callable[[], int] = lambda: 0
    on_event: Callable[[str, dict[str, Any]], None] = lambda kind, payload: None
    extra: dict[str, Any] = field(default_factory=dict)
