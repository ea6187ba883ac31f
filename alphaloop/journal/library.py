"""The policy library and replays: every strategy a person might deploy, and every re-run of a
trial or a policy on a new window. Part of :class:`~alphaloop.journal.Journal`."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar

from alphaloop.journal.connection import JournalFile
from alphaloop.journal.models import _Record


class PolicyKind(StrEnum):
    """What a library entry holds: a PPO policy zip, a Mean-CVaR config (a pure function of its
    knobs) or a PPO policy under the CVaR overlay."""

    ppo = "ppo"
    mean_cvar = "mean_cvar"
    unified = "unified"


class PolicySource(StrEnum):
    session = "session"  # the best trial of a finished research session
    manual = "manual"  # an ``alphaloop train`` run


class PolicyRecord(_Record):
    """One library entry: where it came from, what it is (config and hash, data it was made on,
    the trial budget its evaluation used), how it scored, and its file with the sha256 the file
    must still have when it is loaded (``path``/``sha256`` are None for ``mean_cvar``)."""

    json_fields: ClassVar[frozenset[str]] = frozenset(
        {"config", "symbols", "data_spec", "trial_budget", "objective", "val_metrics",
         "test_metrics"}
    )  # fmt: skip

    id: int
    kind: PolicyKind
    source: PolicySource
    session_id: str
    trial_id: int
    mode: str
    config: dict[str, Any]
    config_hash: str
    seed: int
    data_fingerprint: str | None = None
    symbols: list[str]
    data_spec: dict[str, Any]
    trial_budget: dict[str, Any]
    objective: dict[str, Any]
    val_objective: float | None = None
    val_metrics: dict[str, Any] | None = None
    test_metrics: dict[str, Any] | None = None
    gates_passed: bool | None = None
    path: str | None = None
    sha256: str | None = None
    created_at: str


class LibraryStore(JournalFile):
    """Reads and writes of the ``policies`` and ``replays`` tables."""
