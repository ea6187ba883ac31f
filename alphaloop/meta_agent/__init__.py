"""The meta-agent: the research loop (:mod:`.loop`) and its proposers.

Importing this package does not import the LLM proposer; it loads with
``alphaloop.meta_agent.proposers.llm``. Its names load on first use, so importing one module
of the loop loads neither the proposers nor the loop's steps. Where the trials run is
:mod:`alphaloop.placement`. The chat agent is a
front end: ``alphaloop.chat``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from alphaloop._lazy import lazy_attributes

if TYPE_CHECKING:
    from alphaloop.meta_agent.events import LoopEvent, Proposal
    from alphaloop.meta_agent.proposers import (
        ProposalContext,
        Proposer,
        ProposerBase,
        RandomProposer,
        TPEProposer,
        TrialView,
    )
    from alphaloop.meta_agent.session import (
        SessionSpec,
        create_session,
        request_stop,
        run_session,
    )
    from alphaloop.placement import OutcomeStatus, TrialOutcome

__all__ = [
    "LoopEvent",
    "OutcomeStatus",
    "Proposal",
    "ProposalContext",
    "Proposer",
    "ProposerBase",
    "RandomProposer",
    "SessionSpec",
    "TPEProposer",
    "TrialOutcome",
    "TrialView",
    "create_session",
    "request_stop",
    "run_session",
]

_PROPOSERS = "alphaloop.meta_agent.proposers"
_SESSION = "alphaloop.meta_agent.session"
_EVENTS = "alphaloop.meta_agent.events"
_LAZY = {
    "LoopEvent": _EVENTS,
    "OutcomeStatus": "alphaloop.placement.outcome",
    "Proposal": _EVENTS,
    "ProposalContext": _PROPOSERS,
    "Proposer": _PROPOSERS,
    "ProposerBase": _PROPOSERS,
    "RandomProposer": _PROPOSERS,
    "SessionSpec": _SESSION,
    "TPEProposer": _PROPOSERS,
    "TrialOutcome": "alphaloop.placement.outcome",
    "TrialView": _PROPOSERS,
    "create_session": _SESSION,
    "request_stop": _SESSION,
    "run_session": _SESSION,
}

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
