"""What the dashboard reads: the sessions with their verdicts next to 1/N and the default, a
page of a session's trials sorted and filtered in SQL (and its CSV export), one trial in full.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict

from alphaloop.evidence import ExcessEvidence
from alphaloop.exceptions import EXIT_USAGE, USAGE_STATUS, AlphaloopError, TrialNotFound
from alphaloop.journal import (
    ClipRecord,
    FinalReport,
    FoldRecord,
    SessionRecord,
    TrialFilter,
    TrialRecord,
)
from alphaloop.journal.pages import SORTS
from alphaloop.knobs import KNOB_NAMES
from alphaloop.ops._journal import open_journal
from alphaloop.ops.tally import tally
from alphaloop.settings import Settings

_FROZEN = ConfigDict(frozen=True, extra="forbid")
MAX_PAGE = 500
# The stop_reason finalize writes for a session stopped on request (meta_agent.session).
STOPPED_REASON = "stop requested"
SIGNIFICANT = 0.05  # one-sided p-value under which the pick "beats" a reference


class UnknownColumn(AlphaloopError):
    """A sort or filter names neither a column of the trial table nor a knob."""

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS


class Comparison(BaseModel):
    """The pick against one reference on TEST (the paired Sharpe-difference test)."""

    model_config = _FROZEN

    reference: str
    sharpe_pick: float | None = None
    sharpe_reference: float | None = None
    difference: float | None = None
    p_value: float | None = None
    beats: bool | None = None
    note: str | None = None


def comparison(final: FinalReport | None, reference: str) -> Comparison | None:
    """How the session's pick did against ``reference`` (``default`` or ``equal_weight``)."""
    if final is None or not final.excess or reference not in final.excess:
        return None
    ev = final.excess[reference]
    if not isinstance(ev, ExcessEvidence):
        return Comparison(reference=reference, note=ev.note)
    test = ev.test
    return Comparison(
        reference=reference,
        sharpe_pick=test.sharpe_a,
        sharpe_reference=test.sharpe_b,
        difference=test.difference,
        p_value=test.p_value,
        beats=test.p_value < SIGNIFICANT and test.difference > 0,
    )


def display_status(s: SessionRecord) -> str:
    """running, stopping, interrupted, stopped (finished on a stop request), finished, failed."""
    status = str(s.status.value if hasattr(s.status, "value") else s.status)
    if status == "finished" and s.final is not None and s.final.stop_reason == STOPPED_REASON:
        return "stopped"
    return status


class SessionRow(BaseModel):
    """One session of the dashboard's list."""

    model_config = _FROZEN

    n: int
    id: str
    goal: str
    mode: str
    proposer: str
    status: str
    budget: int
    trials: int
    best_validation: float | None
    best_test: float | None
    default_test: float | None
    pick: str | None
    gates_passed: bool | None
    vs_default: Comparison | None
    vs_equal_weight: Comparison | None
    go: bool | None  # gates passed and the pick beats 1/N; None until finalized
    created_at: str


def _row(n: int, s: SessionRecord, trials: int, best: float | None) -> SessionRow:
    f = s.final
    vs_ew = comparison(f, "equal_weight")
    go = None
    if f is not None and f.pick is not None:
        go = bool(f.gates_passed) and f.pick == "search" and bool(vs_ew and vs_ew.beats)
    return SessionRow(
        n=n, id=s.id, goal=s.goal, mode=s.mode, proposer=s.proposer, status=display_status(s),
        budget=s.budget, trials=trials,
        best_validation=f.best_validation_objective if f and f.best_validation_objective
        is not None else best,
        best_test=f.best_test_objective if f else None,
        default_test=f.baseline_test_objective if f else None,
        pick=f.pick if f else None, gates_passed=f.gates_passed if f else None,
        vs_default=comparison(f, "default"), vs_equal_weight=vs_ew, go=go,
        created_at=s.created_at,
    )  # fmt: skip


def session_rows(settings: Settings) -> list[SessionRow]:
    """Every research session, newest first, with its verdict (manual runs left out). Each
    session's trial count and best come from its tally (:mod:`.tally`): a list polled while
    sessions of 50,000 trials run reads only their trials since the last poll."""
    if not settings.journal_path.exists():
        return []
    with open_journal(settings) as j:
        sessions = j.sessions.list()
        numbered = zip(range(len(sessions), 0, -1), sessions, strict=True)
        rows = []
        for n, s in numbered:
            if s.proposer != "manual":
                t = tally(j, s.id)
                rows.append(_row(n, s, t.counted, t.best_objective))
        return rows


def _check(f: TrialFilter) -> None:
    for name in (f.knob, f.sort):
        if name is not None and name not in SORTS and name not in KNOB_NAMES:
            raise UnknownColumn(
                f"unknown column {name!r}: sort or filter by one of {', '.join(SORTS)} or a "
                f"knob ({', '.join(KNOB_NAMES)})"
            )


class TrialPage(BaseModel):
    model_config = _FROZEN

    total: int
    offset: int
    limit: int
    items: list[TrialRecord]
    clips: dict[int, list[ClipRecord]]  # by trial id, for the trials of the page


def trial_page(
    settings: Settings, session_id: str, f: TrialFilter, *, offset: int = 0, limit: int = 50
) -> TrialPage:
    """One page of a session's trials passing ``f`` (without series or prompt).

    Raises:
        NoJournal, SessionNotFound: no such session. UnknownColumn: a bad sort or knob.
    """
    _check(f)
    limit = max(1, min(limit, MAX_PAGE))
    with open_journal(settings) as j:
        j.sessions.get(session_id)
        items = j.trials.page(session_id, f, offset=offset, limit=limit)
        return TrialPage(
            total=j.trials.count(session_id, f),
            offset=offset,
            limit=limit,
            items=items,
            clips={t.id: clips for t in items if (clips := j.logs.clips(t.id))},
        )


CSV_FIELDS = ("id", "idx", "kind", "status", "objective", "proposer", "elapsed_s", "started_at")


def _csv_line(values: list[Any]) -> str:
    out = io.StringIO()
    csv.writer(out).writerow(values)
    return out.getvalue()


def trial_csv(settings: Settings, session_id: str, f: TrialFilter) -> Iterator[str]:
    """The trials passing ``f`` as CSV lines: their columns, each knob, each metric.

    Raises:
        NoJournal, SessionNotFound, UnknownColumn: as :func:`trial_page`, before any line.
    """
    _check(f)
    with open_journal(settings) as j:
        j.sessions.get(session_id)
        batches = list(j.trials.batches(session_id, f))
    metrics = sorted({k for rows in batches for t in rows for k in (t.metrics or {})})
    yield _csv_line([*CSV_FIELDS, *KNOB_NAMES, *(f"metric_{m}" for m in metrics), "rationale"])
    for rows in batches:
        for t in rows:
            values = [getattr(t, name) for name in CSV_FIELDS]
            values = [v.value if hasattr(v, "value") else v for v in values]
            knobs = [t.config.get(k) for k in KNOB_NAMES]
            yield _csv_line(
                [*values, *knobs, *((t.metrics or {}).get(m) for m in metrics), t.rationale]
            )


class FoldRow(BaseModel):
    """One walk-forward fold a trial was scored on: its window, objective and metrics (its
    daily returns stay in the journal; the trial's equity curve is drawn from VALIDATION's)."""

    model_config = _FROZEN

    fold: int
    n_folds: int
    start_date: str
    end_date: str
    objective: float
    metrics: dict[str, Any]
    n_days: int
    elapsed_s: float
    reused_from: int | None


def fold_row(f: FoldRecord) -> FoldRow:
    """The fold as the detail panel shows it."""
    return FoldRow(
        fold=f.fold, n_folds=f.n_folds, start_date=f.start_date, end_date=f.end_date,
        objective=f.objective, metrics=f.metrics, n_days=len(f.returns), elapsed_s=f.elapsed_s,
        reused_from=f.reused_from,
    )  # fmt: skip


class TrialFull(BaseModel):
    """One trial as the detail panel shows it: everything, its series and prompt included,
    and the folds it was scored on (none for a trial from before folds)."""

    model_config = _FROZEN

    trial: TrialRecord
    clips: list[ClipRecord]
    parent: TrialRecord | None
    folds: list[FoldRow] = []


def trial_full(settings: Settings, session_id: str, trial_id: int) -> TrialFull:
    """One trial of ``session_id`` in full.

    Raises:
        NoJournal, TrialNotFound: no such trial (in that session).
    """
    with open_journal(settings) as j:
        t = j.trials.get(trial_id)
        if t.session_id != session_id:
            raise TrialNotFound(f"no trial {trial_id} in session {session_id}")
        parent = j.trials.get(t.parent_id) if t.parent_id else None
        folds = [fold_row(f) for f in j.folds.of_trial(t.id)]
        return TrialFull(trial=t, clips=j.logs.clips(t.id), parent=parent, folds=folds)


class Pulse(BaseModel):
    """What a page polls about one session, at a cost that does not grow with it: the session
    row, its number of trials, its last trials (those running among them) and its best."""

    model_config = _FROZEN

    session: SessionRecord
    status: str
    trials: int
    tail: list[TrialRecord]
    best: TrialRecord | None


def pulse(settings: Settings, session_id: str | None = None) -> Pulse | None:
    """The pulse of ``session_id`` (default: the newest research session; None when none).

    Raises:
        NoJournal, SessionNotFound: no such session.
    """
    if session_id is None and not settings.journal_path.exists():
        return None
    with open_journal(settings) as j:
        if session_id is None:
            found = [s for s in j.sessions.list() if s.proposer != "manual"]
            if not found:
                return None
            s = found[0]
        else:
            s = j.sessions.get(session_id)
        best = None
        if s.best_trial_id is not None:
            best = j.trials.get(s.best_trial_id).model_copy(
                update=dict.fromkeys(("val_returns", "final_weights", "curve", "prompt"))
            )
        return Pulse(session=s, status=display_status(s), trials=j.trials.total(s.id),
                     tail=j.trials.tail(s.id), best=best)  # fmt: skip


class BookHistory(BaseModel):
    """A book's ticks, oldest first: the day, the equity before the tick, the target weights,
    the kill-switch status and the person's verdict."""

    model_config = _FROZEN

    book: str
    dates: list[str]
    equity: list[float | None]
    weights: dict[str, list[float]]
    status: list[str]
    verdicts: list[str | None]


def book_history(settings: Settings, book: str, limit: int = 2000) -> BookHistory:
    """The last ``limit`` ticks of ``book`` (none when the book has none yet)."""
    if not settings.journal_path.exists():
        return BookHistory(book=book, dates=[], equity=[], weights={}, status=[], verdicts=[])
    with open_journal(settings) as j:
        rows = list(reversed(j.books.list_decisions(book, limit=limit)))
    symbols = sorted({s for d in rows for s in (d.target_weights or {})})
    return BookHistory(
        book=book,
        dates=[d.date for d in rows],
        equity=[d.equity_before for d in rows],
        weights={s: [(d.target_weights or {}).get(s, 0.0) for d in rows] for s in symbols},
        status=[str(d.status.value if hasattr(d.status, "value") else d.status) for d in rows],
        verdicts=[d.verdict for d in rows],
    )


__all__ = [
    "BookHistory",
    "Comparison",
    "FoldRow",
    "Pulse",
    "SessionRow",
    "TrialFull",
    "TrialPage",
    "UnknownColumn",
    "book_history",
    "comparison",
    "display_status",
    "fold_row",
    "pulse",
    "session_rows",
    "trial_csv",
    "trial_full",
    "trial_page",
]
