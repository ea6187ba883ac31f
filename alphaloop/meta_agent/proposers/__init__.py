"""Proposers: what suggests the next config edit (TPE, random, later an LLM)."""

from alphaloop.meta_agent.proposers.base import (
    ProposalContext,
    Proposer,
    ProposerBase,
    TrialView,
)
from alphaloop.meta_agent.proposers.search import RandomProposer, TPEProposer, distributions

__all__ = [
    "ProposalContext",
    "Proposer",
    "ProposerBase",
    "RandomProposer",
    "TPEProposer",
    "TrialView",
    "distributions",
]
