"""Test helpers of the loop: a session context over a fresh journal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alphaloop.journal import Journal
from alphaloop.market import MarketData
from alphaloop.meta_agent.proposers import RandomProposer
from alphaloop.meta_agent.state import SessionContext
from alphaloop.spec import SessionSpec
from tests.journal.journal_helpers import new_session


def session_context(tmp_path: Path, **fields: Any) -> SessionContext:
    """The context of a ``cufolio_only`` session (random proposer, budget 10, seed 0, 3 noise
    seeds) journaled in a fresh journal under ``tmp_path``, with no market data unless
    ``fields`` give it; ``fields`` set or replace any of the context's fields, or of its spec's
    (``objective``, ``workers``...). The caller closes ``context.journal``."""
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
    own = set(SessionContext.__dataclass_fields__)  # ``data`` and ``folds`` are the context's
    asked = {k: v for k, v in fields.items() if k in SessionSpec.model_fields and k not in own}
    spec = SessionSpec(goal="g", mode="cufolio_only", proposer="random", budget=10, **asked)
    context: dict[str, Any] = {
        "session_id": sid,
        "spec": spec,
        "journal": journal,
        "data": MarketData.__new__(MarketData),
        "proposer": RandomProposer(),
        "policy_dir": tmp_path,
    }
    return SessionContext(**(context | {k: v for k, v in fields.items() if k not in asked}))
