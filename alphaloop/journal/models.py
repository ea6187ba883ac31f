"""Read models of the journal: one frozen pydantic model per table row, JSON columns parsed.

Timestamps are ISO 8601 strings in UTC (``2026-01-01T12:00:00.000+00:00``): they sort as text,
survive ``json.dumps`` untouched and need no parsing by the CLI, the tools or the web page.
``model_dump(mode="json")`` turns non-finite floats (an infinite profit factor, a NaN Sharpe of a
flat series) into ``null`` so the output is strict JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, ClassVar, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from alphaloop.journal.report import FinalReport
from alphaloop.journal.setup import SessionSetup, read_objective
from alphaloop.knobs import BoundsClip
from alphaloop.spec import ManualRunSpec, Objective, SessionSpec
from alphaloop.vocabulary import MANUAL_PROPOSER


class TrialStatus(StrEnum):
    """Where a trial is. Every status but ``running`` is final."""

    running = "running"
    keep = "keep"
    discard = "discard"
    crash = "crash"
    timeout = "timeout"
    invalid = "invalid"


class TrialKind(StrEnum):
    """Why a trial ran: the default config's noise seeds, the search, a search candidate re-run
    on a fresh seed before it may be kept (its row's ``parent_id`` is the candidate; not counted
    against the budget, but its time is), or the final test window."""

    baseline = "baseline"
    search = "search"
    confirm = "confirm"
    test = "test"


class SessionStatus(StrEnum):
    """Where a session is. ``stopping`` means a stop was requested and finalize is still to run."""

    running = "running"
    stopping = "stopping"
    finished = "finished"
    failed = "failed"
    interrupted = "interrupted"


class EventKind(StrEnum):
    """The kinds of journaled event alphaloop writes (the ``events`` table takes any kind)."""

    stop_requested = "StopRequested"
    resumed = "Resumed"
    resumed_after_stop = "ResumedAfterStop"
    policy_retrained = "PolicyRetrained"
    policy_activated = "PolicyActivated"
    proposer_fallback = "ProposerFallback"
    tools_unsupported = "ToolsUnsupported"
    llm_mode_changed = "LLMModeChanged"
    duplicate_proposal = "DuplicateProposal"
    moved = "Moved"  # a resumed session's trials run elsewhere from now on
    trial_retried = "TrialRetried"  # a trial's task lost with its Ray worker or node, sent again
    validated = "Validated"
    goal_read = "GoalRead"  # what the session understood of its goal (alphaloop.ops.goal)


FINISHED_STATUSES: frozenset[TrialStatus] = frozenset(TrialStatus) - {TrialStatus.running}
# Statuses that use up the trial budget. ``invalid`` rows never ran, and a crash whose error is
# INTERRUPTED is the journal's own mark for a trial whose process died: it will run again.
COUNTED_STATUSES: frozenset[TrialStatus] = frozenset(
    {TrialStatus.keep, TrialStatus.discard, TrialStatus.crash, TrialStatus.timeout}
)
INTERRUPTED = "interrupted"


def is_interrupted(status: TrialStatus | str, error: str | None) -> bool:
    """Whether a trial's row is the journal's mark for a process that died mid-trial: no outcome,
    not counted, and run again by a resumed session."""
    return status == TrialStatus.crash and error == INTERRUPTED


def jsonable(value: Any) -> Any:
    """``value`` as strict JSON data: models dumped, non-finite floats as None (JSON has no NaN)."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class _Record(BaseModel):
    """A row: frozen, strict about its fields, built from a raw SQLite row by :meth:`from_row`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    json_fields: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        """Parses the JSON text columns of ``row`` and validates the whole row."""
        values = {
            k: (json.loads(v) if k in cls.json_fields and isinstance(v, str) else v)
            for k, v in row.items()
        }
        return cls.model_validate(values)

    @model_serializer(mode="wrap")
    def _strict_json(self, handler: Any, info: SerializationInfo) -> dict[str, Any]:
        data = handler(self)
        return jsonable(data) if info.mode == "json" else data


class SessionRecord(_Record):
    """One research session (or manual run): its goal, rules, budget, what it was started with
    (``settings``: its spec and its data's windows, typed) and, once finished, its test-window
    result. ``goal``, ``mode``, ``proposer``, ``budget`` and ``seed`` are its spec's, kept as
    columns the lists sort and filter by."""

    json_fields: ClassVar[frozenset[str]] = frozenset(
        {"objective", "settings", "baseline_config", "final"}
    )

    id: str
    goal: str
    mode: str
    objective: Objective
    proposer: str
    budget: int
    time_budget_s: float | None = None
    max_tokens_total: int | None = None
    seed: int
    data_source: str
    data_fingerprint: str | None = None
    settings: SessionSetup = SessionSetup()
    status: SessionStatus
    owner_pid: int | None = None
    created_at: str
    updated_at: str
    finished_at: str | None = None
    noise_floor: float | None = None
    best_trial_id: int | None = None
    baseline_config: dict[str, Any]
    # What finalize concluded (None until the session finished).
    final: FinalReport | None = None
    error: str | None = None

    @field_validator("final", mode="before")
    @classmethod
    def _known_keys(cls, value: Any) -> Any:
        # A report journaled by another alphaloop may hold keys this one does not know.
        return FinalReport.read(value) if isinstance(value, dict) else value

    @model_validator(mode="before")
    @classmethod
    def _as_stored(cls, row: Any) -> Any:
        # A row written by an older alphaloop reads as what it meant (see SessionSetup.read).
        if not isinstance(row, dict):
            return row
        read = {"objective": read_objective(row.get("objective"))}
        if isinstance(row.get("settings"), dict):
            manual = row.get("proposer") == MANUAL_PROPOSER
            read["settings"] = SessionSetup.read(row["settings"], manual=manual)
        return {**row, **read}

    @property
    def spec(self) -> SessionSpec | ManualRunSpec | None:
        """What it was started with (None in a row that never held a spec, or holds one this
        alphaloop refuses: ``settings.unread`` says why)."""
        return self.settings.spec

    @property
    def manual(self) -> bool:
        """Whether it is a manual training run (one trial, never resumed), not a research
        session."""
        return self.proposer == MANUAL_PROPOSER

    def continues_after_stop(self, counted: int) -> bool:
        """Whether it finished on a stop request with budget left (``counted`` trials of its
        budget run), so that resuming it runs more trials rather than only showing its result."""
        return (
            self.status == SessionStatus.finished
            and self.final is not None
            and self.final.stop_reason == "stop requested"
            and counted < self.budget
        )


class TrialRecord(_Record):
    """One trial row, whatever became of it (kept, discarded, crashed, invalid, running).

    ``env_steps`` is what PPO actually trained (a whole number of rollouts, so it can exceed the
    session's ``total_timesteps``); ``violation`` is the limit its metrics break, whatever its
    status (a baseline is kept even when it breaks one). Both are None in rows of schema 1.

    ``n_seeds`` and ``seed_mean`` are set on a search trial that was confirmed on fresh seeds:
    how many seeds it ran on (its own and its ``confirm`` rows') and its mean objective over
    them; ``objective`` and ``metrics`` stay those of its own seed. None for a trial judged on
    one seed.
    """

    json_fields: ClassVar[frozenset[str]] = frozenset(
        {"config", "delta", "metrics", "baselines", "val_returns", "final_weights", "curve"}
    )

    id: int
    session_id: str
    idx: int
    kind: TrialKind
    status: TrialStatus
    counted: bool
    proposer: str | None = None
    config: dict[str, Any]
    config_hash: str | None = None
    delta: dict[str, Any]
    parent_id: int | None = None
    seed: int | None = None
    objective: float | None = None
    metrics: dict[str, float] | None = None
    baselines: dict[str, dict[str, float]] | None = None
    val_returns: list[float] | None = None
    final_weights: list[float] | dict[str, float] | None = None
    elapsed_s: float | None = None
    rationale: str | None = None
    reason: str | None = None
    error: str | None = None
    traceback_tail: str | None = None
    policy_path: str | None = None
    owner_pid: int | None = None
    started_at: str
    finished_at: str | None = None
    curve: list[Any] | None = None
    env_steps: int | None = None
    violation: str | None = None
    n_seeds: int | None = None
    seed_mean: float | None = None
    # The exact prompt (chat messages as JSON text) an LLM proposal was made from; None for TPE.
    prompt: str | None = None
    # Which version of the frozen evaluator produced its numbers (None before schema 5).
    evaluator_version: str | None = None
    # Where it ran: ``local`` (this machine), ``ray:HOST:PORT`` or ``ray://HOST:PORT`` (a
    # Ray cluster; None before schema 13).
    ran_on: str | None = None

    @property
    def score(self) -> float | None:
        """What the keep rule ranks this trial by: its mean over seeds when it was confirmed,
        else its objective."""
        return self.seed_mean if self.seed_mean is not None else self.objective

    @property
    def finished(self) -> bool:
        return self.status is not TrialStatus.running

    @property
    def interrupted(self) -> bool:
        """See :func:`is_interrupted`."""
        return is_interrupted(self.status, self.error)

    @property
    def changes(self) -> dict[str, Any]:
        """The knob changes the proposer asked for (before clipping)."""
        return dict(self.delta.get("changes") or {})


class ClipRecord(_Record, BoundsClip):
    """One journaled :class:`~alphaloop.knobs.BoundsClip` of one trial: the clip's fields plus
    its row id and trial."""

    id: int
    trial_id: int

    def to_bounds_clip(self) -> BoundsClip:
        """The clip alone, without its row identity."""
        return BoundsClip(**self.model_dump(include=set(BoundsClip.model_fields)))


class EventRecord(_Record):
    """Something that happened to a session (``StopRequested``, ``Resumed``, ``PolicyRetrained``,
    ``ProposerFallback``...), with a free-form JSON payload."""

    json_fields: ClassVar[frozenset[str]] = frozenset({"payload"})

    id: int
    session_id: str | None = None
    kind: str
    payload: dict[str, Any]
    created_at: str


class LLMUsageRecord(_Record):
    """One journaled attempt at one LLM call, ok or not, with its token usage and latency."""

    id: int
    session_id: str | None = None
    trial_id: int | None = None
    purpose: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    ok: bool
    error: str | None = None
    created_at: str
    mode: str | None = None
    finish_reason: str | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class ChartReadRecord(_Record):
    """One reading of a chart (by a vision model or the embedded data-grounded reader)."""

    json_fields: ClassVar[frozenset[str]] = frozenset({"bullets", "context"})

    id: int
    session_id: str | None = None
    trial_id: int | None = None
    kind: str
    model: str
    elapsed_s: float | None = None
    bullets: list[str]
    raw_text: str | None = None
    context: dict[str, Any]
    created_at: str
