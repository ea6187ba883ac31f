"""The policy library and replays: every strategy a person might deploy, and every re-run of a
trial or a policy on a new window. A repository the journal holds as ``journal.policies``."""

from __future__ import annotations

import sqlite3
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import field_validator

from alphaloop.exceptions import AlphaloopError, NotFound
from alphaloop.journal.codec import columns, now
from alphaloop.journal.connection import JournalFile
from alphaloop.journal.models import _Record
from alphaloop.journal.setup import read_objective
from alphaloop.spec import DataSpec, Objective, TrialBudget

# Fields the journal fills in itself.
_OWN_FIELDS = frozenset({"id", "created_at"})


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
    data_spec: DataSpec
    trial_budget: TrialBudget
    objective: Objective
    val_objective: float | None = None
    val_metrics: dict[str, Any] | None = None
    test_metrics: dict[str, Any] | None = None
    gates_passed: bool | None = None
    path: str | None = None
    sha256: str | None = None
    created_at: str

    @field_validator("objective", mode="before")
    @classmethod
    def _as_stored(cls, value: Any) -> Any:
        return read_objective(value)


class ReplayRecord(_Record):
    """One re-run of a trial (``parent_trial_id``) or a library entry (``parent_policy_id``) on a
    window of its own: the config hash it kept, the window and data it ran on, its metrics and
    daily returns, and the warning it carried (a window overlapping the policy's training)."""

    json_fields: ClassVar[frozenset[str]] = frozenset({"metrics", "returns"})

    id: int
    parent_trial_id: int | None = None
    parent_policy_id: int | None = None
    config_hash: str
    start: str
    end: str
    data_source: str
    data_fingerprint: str
    metrics: dict[str, Any]
    returns: list[float]
    warning: str | None = None
    # Which version of the frozen evaluator produced its numbers (None before schema 5).
    evaluator_version: str | None = None
    created_at: str


def _required(model: type[_Record], fields: dict[str, Any]) -> None:
    """A clear error for unknown or missing fields (before SQLite's NOT NULL would say less)."""
    known = set(model.model_fields) - _OWN_FIELDS
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ValueError(
            f"{model.__name__}: unknown field(s) {', '.join(unknown)}; "
            f"expected some of {', '.join(sorted(known))}"
        )
    missing = sorted(
        name for name in known if model.model_fields[name].is_required() and name not in fields
    )
    if missing:
        raise ValueError(f"{model.__name__}: missing field(s) {', '.join(missing)}")


class Policies:
    """Reads and writes of the ``policies`` and ``replays`` tables."""

    def __init__(self, journal: JournalFile) -> None:
        self._journal = journal

    # --- policies ----------------------------------------------------------------------------

    def add(self, **fields: Any) -> PolicyRecord:
        """Journals a library entry and returns it as stored (``id`` and ``created_at`` are the
        journal's).

        Raises:
            ValueError: an unknown or missing field, or a value of the wrong type.
            AlphaloopError: the trial is already in the library (an entry per trial), or its
                session or trial is not in the journal.
        """
        _required(PolicyRecord, fields)
        if fields.get("path") is not None:
            fields = {**fields, "path": self._journal.stored_path(fields["path"])}
        row = columns(PolicyRecord, fields)
        row["created_at"] = now()
        try:
            with self._journal._write():
                policy_id = int(self._journal.db["policies"].insert(row).last_rowid)
        except sqlite3.IntegrityError as err:
            if "policies.trial_id" in str(err):
                raise AlphaloopError(
                    f"trial {fields['trial_id']} is already in the policy library"
                ) from None
            raise AlphaloopError(
                f"cannot add the policy of trial {fields.get('trial_id')!r} to the library: "
                f"{err} (its session and trial must be journaled first)"
            ) from None
        return self.get(policy_id)

    def get(self, policy_id: int) -> PolicyRecord:
        """One library entry.

        Raises:
            NotFound: no such id (the message lists the most recent ids).
        """
        rows = self._journal._rows("SELECT * FROM policies WHERE id = ?", (policy_id,))
        if not rows:
            recent = [
                str(r["id"])
                for r in self._journal._rows("SELECT id FROM policies ORDER BY id DESC LIMIT 5")
            ]
            hint = (
                f"recent policy ids: {', '.join(recent)}"
                if recent
                else "the library is empty (a finished session or `alphaloop train` adds entries)"
            )
            raise NotFound(
                f"no policy {policy_id!r} in the library at {self._journal.path}; {hint}"
            )
        return PolicyRecord.from_row(rows[0])

    def list(self) -> list[PolicyRecord]:
        """Every library entry, newest first."""
        return [
            PolicyRecord.from_row(r)
            for r in self._journal._rows("SELECT * FROM policies ORDER BY id DESC")
        ]

    def of_trial(self, trial_id: int) -> PolicyRecord | None:
        """The library entry published from a trial, or None."""
        rows = self._journal._rows("SELECT * FROM policies WHERE trial_id = ?", (trial_id,))
        return PolicyRecord.from_row(rows[0]) if rows else None

    # --- replays -----------------------------------------------------------------------------

    def add_replay(self, **fields: Any) -> ReplayRecord:
        """Journals a replay and returns it as stored.

        Raises:
            ValueError: an unknown or missing field, a value of the wrong type, or not exactly
                one parent (a trial or a policy).
            AlphaloopError: the parent is not in the journal.
        """
        _required(ReplayRecord, fields)
        if (fields.get("parent_trial_id") is None) == (fields.get("parent_policy_id") is None):
            raise ValueError("a replay has exactly one parent: parent_trial_id or parent_policy_id")
        row = columns(ReplayRecord, fields)
        row["created_at"] = now()
        try:
            with self._journal._write():
                replay_id = int(self._journal.db["replays"].insert(row).last_rowid)
        except sqlite3.IntegrityError as err:
            raise AlphaloopError(f"cannot journal the replay: {err}") from None
        return self.get_replay(replay_id)

    def get_replay(self, replay_id: int) -> ReplayRecord:
        """One replay.

        Raises:
            AlphaloopError: no such id.
        """
        rows = self._journal._rows("SELECT * FROM replays WHERE id = ?", (replay_id,))
        if not rows:
            raise AlphaloopError(f"no replay {replay_id!r} in {self._journal.path}")
        return ReplayRecord.from_row(rows[0])

    def list_replays(
        self, *, parent_trial_id: int | None = None, parent_policy_id: int | None = None
    ) -> list[ReplayRecord]:
        """Replays, newest first; of one parent trial or policy if given."""
        sql, params = "SELECT * FROM replays", []
        where = []
        if parent_trial_id is not None:
            where.append("parent_trial_id = ?")
            params.append(parent_trial_id)
        if parent_policy_id is not None:
            where.append("parent_policy_id = ?")
            params.append(parent_policy_id)
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [
            ReplayRecord.from_row(r)
            for r in self._journal._rows(sql + " ORDER BY id DESC", tuple(params))
        ]
