"""Which library entry is active: the pointer file, activation by id, and auto-activation.

Activation is by library id only, never by a path from outside: the entry's file must still
hash to its journaled sha256, so a person activates exactly what the library published. The
pointer is written first, then the ``PolicyActivated`` event (a process killed between the two
leaves the new pointer without its event; the pointer is the truth a reader acts on).
"""

from __future__ import annotations

import os

from alphaloop.exceptions import ActivePolicyError
from alphaloop.journal import AutoActivation, EventKind, Journal, PolicyKind, PolicyRecord
from alphaloop.journal.codec import now
from alphaloop.library.files import verified_policy_file
from alphaloop.library.pointer import pointer_policy_id, write_pointer
from alphaloop.settings import Settings


def no_go(record: PolicyRecord) -> str | None:
    """Why the entry has no GO from its gates (failed or never evaluated), or None."""
    if record.gates_passed is True:
        return None
    return "failed" if record.gates_passed is False else "were not evaluated"


def active_policy_id(settings: Settings) -> int | None:
    """The library id the active-policy pointer names, or None when none was ever activated.

    Raises:
        ActivePolicyError: the pointer file is garbled (the message says how to fix it).
    """
    return pointer_policy_id(settings.active_policy_path)


def activate(
    journal: Journal,
    settings: Settings,
    policy_id: int,
    *,
    reason: str = "by hand",
    override: str | None = None,
) -> PolicyRecord:
    """Makes a library entry the active policy: checks its file, rewrites the pointer
    atomically and journals ``PolicyActivated`` (with the previous id, the reason and, when a
    person activated it without a GO from its gates, their ``override`` reason).

    Raises:
        NotFound: no such id (the message lists recent ids).
        PolicyTampered: the entry's file is gone or changed; the pointer is left as it was.
        ActivePolicyError: never for a garbled old pointer: activation is how to repair one.
    """
    record = journal.policies.get(policy_id)
    if record.kind != PolicyKind.mean_cvar:
        verified_policy_file(record)
    try:
        previous = active_policy_id(settings)
    except ActivePolicyError:  # a garbled pointer is what this call replaces
        previous = None
    write_pointer(
        settings.active_policy_path,
        {
            "policy_id": record.id,
            "kind": record.kind.value,
            "config_hash": record.config_hash,
            "sha256": record.sha256,
            "activated_at": now(),
        },
    )
    journal.logs.add_event(
        None,
        EventKind.policy_activated,
        {
            "policy_id": record.id,
            "previous_policy_id": previous,
            "session_id": record.session_id,
            "trial_id": record.trial_id,
            "reason": reason,
            "override": override,
            "gates_passed": record.gates_passed,
            "pid": os.getpid(),
        },
    )
    return record


def auto_activate(
    journal: Journal, settings: Settings, record: PolicyRecord, noise_floor: float | None
) -> AutoActivation:
    """Applies the ``auto_activate`` rule to a new session best.

    The rule (off unless ``settings.auto_activate``): activate ``record`` only when the
    session's go/no-go gates passed (``gates_passed`` is True: not failed, not unknown) AND it
    beats the active policy's validation objective by more than the session's noise floor. With
    no active policy there is nothing to beat, and a gated entry is activated. Objectives of
    different metrics (a Sharpe against a Sortino) do not compare: no activation.
    """
    if not settings.auto_activate:
        return AutoActivation(activated=False, reason="auto_activate is off")
    # Auto-activation never overrides the gates.
    if (why := no_go(record)) is not None:
        return AutoActivation(activated=False, reason=f"the session's go/no-go gates {why}")
    if record.val_objective is None:
        return AutoActivation(activated=False, reason="the entry has no validation objective")
    try:
        active_id = active_policy_id(settings)
    except ActivePolicyError as err:
        return AutoActivation(activated=False, reason=f"the active pointer is unreadable: {err}")
    if active_id is not None:
        active = journal.policies.get(active_id)
        verdict = _beats(record, active, noise_floor or 0.0)
        if verdict is not None:
            return AutoActivation(activated=False, reason=verdict, previous_policy_id=active_id)
    floor = noise_floor or 0.0
    reason = (
        "auto: no policy was active"
        if active_id is None
        else f"auto: beats policy {active_id} by more than the noise floor {floor:.4g}"
    )
    activate(journal, settings, record.id, reason=reason)
    return AutoActivation(activated=True, reason=reason, previous_policy_id=active_id)


def _beats(new: PolicyRecord, active: PolicyRecord, floor: float) -> str | None:
    """None when ``new`` beats ``active`` by more than ``floor``, else why not."""
    metric_new, metric_active = new.objective.metric, active.objective.metric
    if metric_new != metric_active:
        return (
            f"its objective ({metric_new}) and the active policy {active.id}'s ({metric_active}) "
            "are different metrics"
        )
    if active.val_objective is None or new.val_objective is None:
        return f"the active policy {active.id} has no validation objective to compare"
    gain = new.val_objective - active.val_objective
    if gain <= floor:
        return (
            f"validation {metric_new} {new.val_objective:.4f} does not beat the active policy "
            f"{active.id}'s {active.val_objective:.4f} by more than the noise floor {floor:.4g}"
        )
    return None
