"""The meta-agent: the research loop (a LangGraph graph) and its proposers.

Importing this package does not import the LLM proposer; it loads with
``alphaloop.meta_agent.proposers.llm``. The chat agent is a front end: ``alphaloop.chat``.
"""

from alphaloop.meta_agent.graph import compile_graph, graph
from alphaloop.meta_agent.objective import Objective
from alphaloop.meta_agent.proposers import (
    ProposalContext,
    Proposer,
    ProposerBase,
    ProposerName,
    RandomProposer,
    TPEProposer,
    TrialView,
)
from alphaloop.meta_agent.session import (
    SessionBusy,
    SessionSpec,
    create_session,
    request_stop,
    run_session,
)
from alphaloop.meta_agent.state import LoopEvent, OutcomeStatus, Proposal, TrialOutcome

__all__ = [
    "LoopEvent",
    "Objective",
    "OutcomeStatus",
    "Proposal",
    "ProposalContext",
    "Proposer",
    "ProposerBase",
    "ProposerName",
    "RandomProposer",
    "SessionBusy",
    "SessionSpec",
    "TPEProposer",
    "TrialOutcome",
    "TrialView",
    "compile_graph",
    "create_session",
    "graph",
    "request_stop",
    "run_session",
]
