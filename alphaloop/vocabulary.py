"""The words a session is described in, declared once: what its trials run (modes), what they
are ranked by (metrics), what judges its pick (gates) and who proposes its configs (proposers).

The session spec (:mod:`alphaloop.spec`), the requests every front end accepts
(:mod:`alphaloop.ops.requests`), the journal and the loop read them from here. It imports
nothing, so every layer may.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, get_args

# What a session's trials run: PPO alone, Mean-CVaR alone, or PPO under the CVaR overlay.
Mode = Literal["ppo_only", "cufolio_only", "unified"]
MODES: tuple[str, ...] = get_args(Mode)

# What a session maximises on its validation folds (``return``: the total return).
Metric = Literal["sharpe", "sortino", "calmar", "return"]
METRICS: tuple[str, ...] = get_args(Metric)
DEFAULT_METRIC: Metric = "sharpe"

# The go/no-go gates a pick is judged by (``alphaloop.spec.Gates`` has a threshold for each).
GateName = Literal[
    "min_sharpe",
    "max_drawdown",
    "min_hit_rate",
    "min_profit_factor",
    "min_deflated_sharpe",
    "max_pbo",
    "max_excess_p_value",
    "min_walk_forward_share",
]
GATE_NAMES: tuple[str, ...] = get_args(GateName)


class ProposerName(StrEnum):
    """The proposers a session may ask for; ``auto`` is the LLM when one is configured, else
    TPE."""

    auto = "auto"
    tpe = "tpe"
    random = "random"
    llm = "llm"


# The same names as a schema's enum (a request's JSON schema lists them in place).
ProposerChoice = Literal[tuple(p.value for p in ProposerName)]  # type: ignore[valid-type]
# The proposer a manual training run is journaled with: no session may ask for it, and a
# session journaled with it is a run of one trial, never resumed.
MANUAL_PROPOSER = "manual"

# Missing prices: refused, or carried forward.
Fill = Literal["none", "ffill"]

# How PPO estimates advantages (``alphaloop.rl_engine.advantages`` implements each).
Advantage = Literal["gae", "grpo", "reinforce_pp"]

__all__ = [
    "DEFAULT_METRIC",
    "GATE_NAMES",
    "MANUAL_PROPOSER",
    "METRICS",
    "MODES",
    "Advantage",
    "Fill",
    "GateName",
    "Metric",
    "Mode",
    "ProposerChoice",
    "ProposerName",
]
