"""A trial as every front end shows it: the page's tables, the CSV export, the command line's
tables and the API give each trial the same shown status (:mod:`alphaloop.journal.status`) and
keep a raced-out trial's partial score out of the comparable objective."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from alphaloop.journal import Journal, SessionRecord, Tally, TrialRecord
from alphaloop.journal.status import (
    RACED_OUT,
    SHOWN_STATUSES,
    ShownStatus,
    comparable,
    shown_status,
)
from alphaloop.ops._journal import open_journal
from alphaloop.settings import Settings


class TrialRow(BaseModel):
    """One trial of a table: ``status`` is the shown status; ``objective`` the comparable one
    (None for a raced-out trial, whose one-fold score is ``partial_objective``, and for the
    TEST run, which scores another window: ``test_objective``); ``folds_run`` of ``n_folds``
    (None for a trial scored without folds)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: int
    idx: int
    kind: str
    status: ShownStatus
    objective: float | None
    partial_objective: float | None = None
    test_objective: float | None = None
    folds_run: int | None = None
    n_folds: int | None = None
    seed: int | None = None
    proposer: str | None = None
    parent_id: int | None = None
    metrics: dict[str, float] | None = None
    config: dict[str, Any]
    changes: dict[str, Any]
    reason: str | None = None
    error: str | None = None
    violation: str | None = None
    n_seeds: int | None = None
    seed_mean: float | None = None
    elapsed_s: float | None = None
    started_at: str
    finished_at: str | None = None


def row_of(t: TrialRecord, folds: tuple[int, int] | None) -> TrialRow:
    """``t`` as a table shows it, given (folds run, folds) when it has folds."""
    run, n = folds if folds else (None, None)
    shown = shown_status(t.kind, t.status, run, n)
    objective = comparable(shown, t.kind, t.objective)
    return TrialRow(
        id=t.id, idx=t.idx, kind=str(t.kind), status=shown, objective=objective,
        partial_objective=t.objective if shown == RACED_OUT else None,
        test_objective=t.objective if str(t.kind) == "test" else None,
        folds_run=run, n_folds=n, seed=t.seed, proposer=t.proposer, parent_id=t.parent_id,
        metrics=t.metrics, config=t.config, changes=(t.delta or {}).get("changes") or {},
        reason=t.reason, error=t.error, violation=t.violation, n_seeds=t.n_seeds,
        seed_mean=t.seed_mean, elapsed_s=t.elapsed_s, started_at=t.started_at,
        finished_at=t.finished_at,
    )  # fmt: skip


def rows_of(journal: Journal, trials: Sequence[TrialRecord]) -> list[TrialRow]:
    """``trials`` as a table shows them (their folds read in one query)."""
    folds = journal.folds.counts([t.id for t in trials])
    return [row_of(t, folds.get(t.id)) for t in trials]


def pick_of(journal: Journal, session: SessionRecord) -> TrialRecord | None:
    """The session's best as every front end says it: finalize's pick once it ran (the search
    trial that beat the default with confidence, else the default's baseline run), before that
    the incumbent (:mod:`alphaloop.journal.ranking`: the best kept search trial, else the
    default's first baseline run)."""
    if is_final(session) and session.best_trial_id is not None:
        return journal.trials.get(session.best_trial_id)
    return journal.trials.best(session.id)


def is_final(session: SessionRecord) -> bool:
    """Whether the session's best is finalize's pick (see :func:`pick_of`)."""
    f = session.final
    return f is not None and f.pick is not None and session.best_trial_id is not None


class Best(BaseModel):
    """A session's best, as every view says it (:func:`pick_of`'s trial): ``final`` tells
    whether it is finalize's pick or the incumbent so far. ``objective`` is what it is ranked
    by: a confirmed trial's mean over its seeds, the default's mean over its baseline seeds
    (for a baseline run, which stands for the default config), else its objective."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    trial_id: int
    idx: int
    kind: str
    objective: float | None
    final: bool
    sharpe: float | None = None  # finalize's pick's Sharpe beside its objective (None before)


def best_of(journal: Journal, session: SessionRecord, tally: Tally | None = None) -> Best | None:
    """The session's best (see :class:`Best`), from its tally (``tally`` when the caller has
    just read it); None before any trial could rank."""
    ranking = (tally or journal.trials.tally(session.id)).ranking
    if is_final(session) and session.best_trial_id is not None:
        pick = journal.trials.get(session.best_trial_id)
        return Best(trial_id=pick.id, idx=pick.idx, kind=str(pick.kind),
                    objective=ranking.score_of(pick), final=True,
                    sharpe=(pick.metrics or {}).get("sharpe"))  # fmt: skip
    best = ranking.best
    if best is None:
        return None
    t = best.trial
    return Best(trial_id=t.id, idx=t.idx, kind=t.kind, objective=best.score, final=False)


def shown_statuses(settings: Settings, trials: Sequence[TrialRecord]) -> dict[int, str]:
    """The shown status of each of ``trials``, by id (what the command line's tables print)."""
    if not trials:
        return {}
    with open_journal(settings) as j:
        return {r.id: r.status for r in rows_of(j, trials)}


__all__ = [
    "SHOWN_STATUSES",
    "Best",
    "ShownStatus",
    "TrialRow",
    "best_of",
    "is_final",
    "pick_of",
    "row_of",
    "rows_of",
    "shown_statuses",
]
