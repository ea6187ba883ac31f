"""The meta-agent: the research loop (a LangGraph graph), its proposers and the chat agent.

Importing this package does not import the chat agent or the LLM proposer; they load with
``alphaloop.meta_agent.chat`` and ``alphaloop.meta_agent.proposers.llm``.
"""

from alphaloop.meta_agent.graph import compile_graph, graph
from alphaloop.meta_agent.objective import Objective
from alphaloop.meta_agent.proposers import (
    ProposalContext,
    Proposer,
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

__all__ = [
    "Objective",
    "ProposalContext",
    "Proposer",
    "RandomProposer",
    "SessionBusy",
    "SessionSpec",
    "TPEProposer",
    "TrialView",
    "compile_graph",
    "create_session",
    "graph",
    "request_stop",
    "run_session",
]
