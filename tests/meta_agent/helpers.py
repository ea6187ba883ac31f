"""Test helpers of the loop: a session context over a fresh journal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alphaloop.journal import Journal
from alphaloop.market import MarketData
from alphaloop.meta_agent.proposers import RandomProposer
from alphaloop.meta_agent.state import SessionContext
from alphaloop.spec import Objective
from alphaloop.trials import TrialBudget
from tests.journal.journal_helpers import new_session


def session_context(tmp_path: Path, **fields: Any) -> SessionContext:
    """The context of a ``cufolio_only`` session (random proposer, budget 10, seed 0, 3 noise
    seeds) journaled in a fresh journal under ``tmp_path``, with no market data unless
    ``fields`` give it; ``fields`` set or replace any of the context's fields. The caller
    closes ``context.journal``."""
    journal = Journal(tmp_path / "journal.db")
    sid = new_session(
        journal,
        goal="g",
        objective={},
        proposer="random",
        budget=10,
        seed=0,
        data_fingerprint=None,
        settings={},
    )
    context: dict[str, Any] = {
        "session_id": sid,
        "goal": "g",
        "mode": "cufolio_only",
        "journal": journal,
        "data": MarketData.__new__(MarketData),
        "objective": Objective(),
        "proposer": RandomProposer(),
        "trial_budget": TrialBudget(),
        "budget": 10,
        "seed": 0,
        "noise_seeds": 3,
        "policy_dir": tmp_path,
    }
    return SessionContext(**(context | fields))
