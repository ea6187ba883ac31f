"""Reads the chat model asks for: a session's digest, a leaderboard, one trial, two compared."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import AlphaloopError
from alphaloop.journal import (
    ClipRecord,
    EventRecord,
    LLMUsageRecord,
    SessionRecord,
    TrialRecord,
    pid_alive,
)
from alphaloop.journal.preferences import DpoRunRecord, DpoStatus
from alphaloop.ops._journal import open_journal
from alphaloop.ops.rows import pick_of
from alphaloop.settings import Settings

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class SessionDigest(BaseModel):
    """What a summary of one session is made of."""

    model_config = _FROZEN

    session: SessionRecord
    trials: list[TrialRecord]
    best: TrialRecord | None
    counted_trials: int
    llm_calls: list[LLMUsageRecord]
    events: list[EventRecord]


def session_digest(settings: Settings, session_id: str) -> SessionDigest:
    """A session with its trials, best trial, LLM calls and events.

    Raises:
        NoJournal, NotFound: no such session.
    """
    with open_journal(settings) as j:
        s = j.sessions.get(session_id)
        return SessionDigest(
            session=s,
            trials=j.trials.of_session(s.id),
            best=pick_of(j, s),
            counted_trials=j.trials.counted(s.id),
            llm_calls=j.logs.llm_calls(s.id),
            events=j.logs.events(s.id),
        )


class Leaderboard(BaseModel):
    """A session and its best trials by validation objective, best first."""

    model_config = _FROZEN

    session: SessionRecord
    trials: list[TrialRecord]


def leaderboard(settings: Settings, session_id: str, k: int = 10) -> Leaderboard:
    """The ``k`` best trials of a session (within its limits first).

    Raises:
        NoJournal, NotFound: no such session.
    """
    with open_journal(settings) as j:
        s = j.sessions.get(session_id)
        return Leaderboard(session=s, trials=j.trials.leaderboard(s.id, k))


class TrialDetail(BaseModel):
    """One trial with its clips and the trial it was derived from."""

    model_config = _FROZEN

    trial: TrialRecord
    clips: list[ClipRecord]
    parent: TrialRecord | None


def trial_detail(settings: Settings, trial_id: int) -> TrialDetail:
    """Everything journaled about one trial.

    Raises:
        NoJournal, NotFound: no such trial.
    """
    with open_journal(settings) as j:
        t = j.trials.get(trial_id)
        parent = j.trials.get(t.parent_id) if t.parent_id else None
        return TrialDetail(trial=t, clips=j.logs.clips(t.id), parent=parent)


class MetricDiff(BaseModel):
    model_config = _FROZEN

    a: Any
    b: Any
    b_minus_a: float | None


class TrialComparison(BaseModel):
    """Two trials side by side: the knobs that differ and every metric's difference."""

    model_config = _FROZEN

    a: TrialRecord
    b: TrialRecord
    same_session: bool
    config_differences: dict[str, dict[str, Any]]
    metrics: dict[str, MetricDiff]
    objective_b_minus_a: float | None


def _minus(b: float | None, a: float | None) -> float | None:
    return b - a if a is not None and b is not None else None


def compare_trials(settings: Settings, trial_a: int, trial_b: int) -> TrialComparison:
    """Compares two different trials (of any sessions).

    Raises:
        NoJournal, NotFound: no such trial.
        AlphaloopError: the same trial twice.
    """
    if trial_a == trial_b:
        raise AlphaloopError("compare_trials needs two different trial ids")
    with open_journal(settings) as j:
        a, b = j.trials.get(trial_a), j.trials.get(trial_b)
    ma, mb = a.metrics or {}, b.metrics or {}
    return TrialComparison(
        a=a,
        b=b,
        same_session=a.session_id == b.session_id,
        config_differences={
            k: {"a": a.config[k], "b": b.config[k]}
            for k in a.config
            if a.config.get(k) != b.config.get(k)
        },
        metrics={
            k: MetricDiff(a=ma.get(k), b=mb.get(k), b_minus_a=_minus(mb.get(k), ma.get(k)))
            for k in sorted(set(ma) | set(mb))
        },
        objective_b_minus_a=_minus(b.objective, a.objective),
    )


def log_llm_call(settings: Settings, **record: object) -> None:
    """Journals one LLM call made outside a session's loop (the chat agent's)."""
    from alphaloop.journal import Journal

    with Journal(settings.journal_path) as journal:
        journal.logs.add_llm_call(**record)


def running_dpo_runs(settings: Settings) -> list[DpoRunRecord]:
    """DPO runs journaled ``running`` whose process is still alive, oldest first. A run whose
    process is gone (a kill -9) stays ``running`` in the journal but is not listed: it will
    never finish, and must not stop a new run from starting."""
    if not settings.journal_path.exists():
        return []
    with open_journal(settings) as j:
        rows = j.preferences.dpo_runs()
    return sorted(
        (r for r in rows if r.status == DpoStatus.running and pid_alive(r.owner_pid)),
        key=lambda r: r.id,
    )
