"""The policy library's user-level actions: list, show, activate, verify, and the active entry."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from alphaloop import library
from alphaloop.exceptions import (
    ActivePolicyError,
    Conflict,
    InvalidRequest,
    NotFound,
    PolicyTampered,
)
from alphaloop.journal import EventKind, PolicyKind, PolicyRecord, ReplayRecord
from alphaloop.ops._journal import open_journal
from alphaloop.settings import Settings


class PolicyDetail(BaseModel):
    """One library entry, whether it is the active one, and the replays made of it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    policy: PolicyRecord
    # The journal's # of the trial it came from (``policy.trial_id`` is the row's id).
    trial_idx: int
    active: bool
    replays: list[ReplayRecord]
    # The reason a person gave to activate it without a GO from its gates, if they did.
    override: str | None = None


class PolicyCheck(BaseModel):
    """The outcome of checking one entry's file against its journaled sha256."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    policy_id: int
    kind: PolicyKind
    path: str | None
    ok: bool
    detail: str


def list_policies(settings: Settings) -> list[PolicyRecord]:
    """Every library entry, newest first (none before the first session or train run)."""
    if not settings.journal_path.exists():
        return []
    with open_journal(settings) as journal:
        return journal.policies.list()


def show_policy(settings: Settings, policy_id: int) -> PolicyDetail:
    """One entry, whether it is active, and its replays (newest first).

    Raises:
        NoJournal: no journal in the home yet.
        NotFound: no such id (the message lists recent ids).
        ActivePolicyError: the pointer file is garbled.
    """
    with open_journal(settings) as journal:
        record = journal.policies.get(policy_id)
        replays = journal.policies.list_replays(parent_policy_id=policy_id)
        trial_idx = journal.trials.get(record.trial_id).idx
    return PolicyDetail(
        policy=record,
        trial_idx=trial_idx,
        active=library.active_policy_id(settings) == record.id,
        replays=replays,
        override=activation_overrides(settings).get(record.id),
    )


def activate_policy(
    settings: Settings, policy_id: int, *, force: bool = False, reason: str | None = None
) -> PolicyRecord:
    """Makes the entry the active policy (pointer file rewritten atomically, ``PolicyActivated``
    journaled). Its file is checked first: a tampered or missing file is refused. An entry
    without a GO from its gates is refused unless a person overrides: ``force`` with a
    ``reason``, journaled and shown beside the entry wherever it is listed.

    Raises:
        NoJournal: no journal in the home yet.
        NotFound: no such id.
        PolicyTampered: its file is gone or its sha256 changed.
        Conflict: no GO from its gates, and no override (exit 2, HTTP 409).
        InvalidRequest: ``force`` without a reason.
    """
    if force and not (reason or "").strip():
        raise InvalidRequest("an override needs a reason: --force --reason TEXT")
    with open_journal(settings) as journal:
        record = journal.policies.get(policy_id)
        why = library.no_go(record)
        if why is not None and not force:
            raise Conflict(
                f"policy {policy_id}'s go/no-go gates {why}: it is not activated; to activate "
                "it anyway, override with --force --reason TEXT (journaled)"
            )
        override = reason.strip() if why is not None and reason else None
        return library.activate(journal, settings, policy_id, override=override)


def activation_overrides(settings: Settings) -> dict[int, str]:
    """The entries a person activated without a GO from their gates, with the latest reason."""
    if not settings.journal_path.exists():
        return {}
    with open_journal(settings) as journal:
        events = journal.logs.events(None, kind=EventKind.policy_activated.value)
    return {
        int(e.payload["policy_id"]): str(e.payload["override"])
        for e in events
        if e.payload.get("override")
    }


def active_policy_id(settings: Settings) -> int | None:
    """The id the active-policy pointer names, or None (see
    :func:`alphaloop.library.active_policy_id`)."""
    return library.active_policy_id(settings)


def active_policy(settings: Settings) -> PolicyRecord | None:
    """The active library entry, or None when none was activated.

    Raises:
        ActivePolicyError: the pointer file is garbled, or names an id the journal lacks.
    """
    policy_id = library.active_policy_id(settings)
    if policy_id is None:
        return None
    with open_journal(settings) as journal:
        try:
            return journal.policies.get(policy_id)
        except NotFound as err:
            raise ActivePolicyError(
                f"the active-policy pointer {settings.active_policy_path} names policy "
                f"{policy_id}, which the journal does not hold ({err})"
            ) from None


def verify_policies(settings: Settings) -> list[PolicyCheck]:
    """Checks every entry's file against its journaled sha256 (nothing is unpickled); entries of
    kind ``mean_cvar`` have no file and pass."""
    checks = []
    for record in list_policies(settings):
        if record.kind == PolicyKind.mean_cvar:
            checks.append(
                PolicyCheck(
                    policy_id=record.id,
                    kind=record.kind,
                    path=None,
                    ok=True,
                    detail="no file: the strategy is its config",
                )
            )
            continue
        try:
            library.verified_policy_file(record)
        except PolicyTampered as err:
            checks.append(
                PolicyCheck(
                    policy_id=record.id,
                    kind=record.kind,
                    path=record.path,
                    ok=False,
                    detail=str(err),
                )
            )
        else:
            checks.append(
                PolicyCheck(
                    policy_id=record.id,
                    kind=record.kind,
                    path=record.path,
                    ok=True,
                    detail=f"sha256 {record.sha256} matches",
                )
            )
    return checks
