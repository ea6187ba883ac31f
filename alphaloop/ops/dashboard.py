"""What the dashboard reads: the sessions with their verdicts next to 1/N and the default, a
page of a session's trials sorted and filtered in SQL (and its CSV export), a session's pulse
and calendar, a book's history. One trial in full is :mod:`.sessions`' read.
"""

from __future__ import annotations

import csv
import functools
import io
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from alphaloop.evidence import ExcessEvidence
from alphaloop.exceptions import InvalidRequest
from alphaloop.journal import (
    ClipRecord,
    FinalReport,
    SessionRecord,
    TrialFilter,
    TrialRecord,
)
from alphaloop.journal.pages import METRIC_SORT, SORTS
from alphaloop.knobs import KNOB_NAMES
from alphaloop.market import market_of
from alphaloop.ops._journal import open_journal
from alphaloop.ops.objective import ObjectiveView, objective_view
from alphaloop.ops.rows import Best, TrialRow, best_of, row_of, rows_of
from alphaloop.settings import Settings
from alphaloop.spec import DataSpec

_FROZEN = ConfigDict(frozen=True, extra="forbid")
MAX_PAGE = 500
# The stop_reason finalize writes for a session stopped on request (meta_agent.session).
STOPPED_REASON = "stop requested"
SIGNIFICANT = 0.05  # one-sided p-value under which the pick "beats" a reference


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
    """One session of the dashboard's list: ``trials`` counts the search trials the budget
    counts, ``rows`` every journaled trial (baseline seeds, confirmations, TEST)."""

    model_config = _FROZEN

    n: int
    id: str
    goal: str
    mode: str
    proposer: str
    status: str
    budget: int
    trials: int
    best: Best | None
    best_validation: float | None
    best_test: float | None
    default_test: float | None
    pick: str | None
    gates_passed: bool | None
    vs_default: Comparison | None
    vs_equal_weight: Comparison | None
    go: bool | None  # gates passed and the pick beats 1/N; None until finalized
    created_at: str
    objective: ObjectiveView  # what the session's objective is, its limits, whether it kept them


def _row(n: int, s: SessionRecord, trials: int, best: Best | None) -> SessionRow:
    f = s.final
    vs_ew = comparison(f, "equal_weight")
    go = None
    if f is not None and f.pick is not None:
        go = bool(f.gates_passed) and f.pick == "search" and bool(vs_ew and vs_ew.beats)
    return SessionRow(
        n=n, id=s.id, goal=s.goal, mode=s.mode, proposer=s.proposer, status=display_status(s),
        budget=s.budget, trials=trials, best=best,
        best_validation=best.objective if best else None,
        best_test=(f.best_test_objective if f.best_trial_id is not None
                   else f.baseline_test_objective) if f else None,
        default_test=f.baseline_test_objective if f else None,
        pick=f.pick if f else None, gates_passed=f.gates_passed if f else None,
        vs_default=comparison(f, "default"), vs_equal_weight=vs_ew, go=go,
        created_at=s.created_at, objective=objective_view(s),
    )  # fmt: skip


def session_rows(settings: Settings) -> list[SessionRow]:
    """Every research session, newest first, with its verdict (manual runs left out). Each
    session's trial count and best come from its tally (``journal.trials.tally``): a list
    polled while sessions of 50,000 trials run reads only their trials since the last poll."""
    if not settings.journal_path.exists():
        return []
    with open_journal(settings) as j:
        sessions = j.sessions.list()
        numbered = zip(range(len(sessions), 0, -1), sessions, strict=True)
        rows = []
        for n, s in numbered:
            if not s.manual:
                t = j.trials.tally(s.id)
                rows.append(_row(n, s, t.counted, best_of(j, s, t)))
        return rows


def _check(f: TrialFilter) -> None:
    for name in (f.knob, f.sort):
        metric = name is not None and name == f.sort and name.startswith(METRIC_SORT)
        if name is not None and name not in SORTS and name not in KNOB_NAMES and not metric:
            raise InvalidRequest(
                f"unknown column {name!r}: sort or filter by one of {', '.join(SORTS)}, a "
                f"knob ({', '.join(KNOB_NAMES)}) or sort by a metric (metric_sharpe...)"
            )


class TrialPage(BaseModel):
    model_config = _FROZEN

    total: int
    offset: int
    limit: int
    items: list[TrialRow]
    clips: dict[int, list[ClipRecord]]  # by trial id, for the trials of the page


def trial_page(
    settings: Settings, session_id: str, f: TrialFilter, *, offset: int = 0, limit: int = 50
) -> TrialPage:
    """One page of a session's trials passing ``f`` (without series or prompt).

    Raises:
        NoJournal, NotFound: no such session. InvalidRequest: a bad sort or knob.
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
            items=rows_of(j, items),
            clips={t.id: clips for t in items if (clips := j.logs.clips(t.id))},
        )


# The shown status and the comparable objective, as on the page; a raced-out trial's score and
# the TEST run's in columns of their own.
CSV_FIELDS = (
    "id", "idx", "kind", "status", "objective", "partial_objective", "folds_run", "n_folds",
    "test_objective", "seed", "proposer", "elapsed_s", "started_at", "finished_at",
)  # fmt: skip


def _csv_line(values: list[Any]) -> str:
    out = io.StringIO()
    csv.writer(out).writerow(values)
    return out.getvalue()


def trial_csv(settings: Settings, session_id: str, f: TrialFilter) -> Iterator[str]:
    """The trials passing ``f`` as CSV lines: their columns, each knob, each metric.

    Raises:
        NoJournal, NotFound, InvalidRequest: as :func:`trial_page`, before any line.
    """
    _check(f)
    with open_journal(settings) as j:
        j.sessions.get(session_id)
        batches = list(j.trials.batches(session_id, f))
        folds = j.folds.counts([t.id for rows in batches for t in rows])

    def shown_rows(rows: Sequence[TrialRecord]) -> list[TrialRow]:
        return [row_of(t, folds.get(t.id)) for t in rows]

    metrics = sorted({k for rows in batches for t in rows for k in (t.metrics or {})})
    yield _csv_line([*CSV_FIELDS, *KNOB_NAMES, *(f"metric_{m}" for m in metrics), "rationale"])
    for rows in batches:
        for t, r in zip(rows, shown_rows(rows), strict=True):
            values = [getattr(r, name) for name in CSV_FIELDS]
            knobs = [t.config.get(k) for k in KNOB_NAMES]
            yield _csv_line(
                [*values, *knobs, *((t.metrics or {}).get(m) for m in metrics), t.rationale]
            )


class Pulse(BaseModel):
    """What a page polls about one session, at a cost that does not grow with it: the session
    row, its number of trials, its last trials (those running among them) and its best."""

    model_config = _FROZEN

    session: SessionRecord
    status: str
    trials: int  # every journaled row
    counted: int  # search trials the budget counts
    tail: list[TrialRow]
    best: Best | None
    objective: ObjectiveView  # what the best's number is, the limits, whether they were kept


def pulse(settings: Settings, session_id: str | None = None) -> Pulse | None:
    """The pulse of ``session_id`` (default: the newest research session; None when none).

    Raises:
        NoJournal, NotFound: no such session.
    """
    if session_id is None and not settings.journal_path.exists():
        return None
    with open_journal(settings) as j:
        if session_id is None:
            found = [s for s in j.sessions.list() if not s.manual]
            if not found:
                return None
            s = found[0]
        else:
            s = j.sessions.get(session_id)
        t = j.trials.tally(s.id)
        return Pulse(session=s, status=display_status(s), trials=j.trials.total(s.id),
                     counted=t.counted, tail=rows_of(j, j.trials.tail(s.id)),
                     best=best_of(j, s, t), objective=objective_view(s))  # fmt: skip


class Calendar(BaseModel):
    """The trading days of a session's data (``days``), and of its VALIDATION and TEST windows:
    the dates of a trial's daily returns (its folds' windows are spans of ``days``)."""

    model_config = _FROZEN

    days: list[str]
    validation: list[str]
    test: list[str]


@functools.lru_cache(maxsize=8)
def _calendar(spec: str) -> Calendar:
    market = market_of(DataSpec.model_validate_json(spec))
    days = [d.date().isoformat() for d in market.dates]
    return Calendar(days=days, validation=days[market.val], test=days[market.test])


def calendar(settings: Settings, session_id: str) -> Calendar:
    """The trading days of the session's windows, from its data as it stored it (loaded once
    per data set and kept).

    Raises:
        NoJournal, NotFound: no such session. InvalidRequest: its data cannot be loaded.
    """
    with open_journal(settings) as j:
        s = j.sessions.get(session_id)
    if s.spec is None:
        raise InvalidRequest(f"session {s.id} does not say how its data was loaded")
    return _calendar(s.spec.data_spec.model_dump_json())


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
    "Best",
    "BookHistory",
    "Calendar",
    "Comparison",
    "Pulse",
    "SessionRow",
    "TrialPage",
    "book_history",
    "calendar",
    "comparison",
    "display_status",
    "pulse",
    "session_rows",
    "trial_csv",
    "trial_page",
]
