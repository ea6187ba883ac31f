"""The portfolio manager's operations: tick the active policy, run a deployment check over a
window, show a book, halt and resume it."""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from alphaloop import library
from alphaloop.broker import broker_for
from alphaloop.exceptions import Conflict, InvalidRequest, NotFound
from alphaloop.journal import Journal, PolicyRecord
from alphaloop.journal.books import BookEvent, BookRecord, DecisionRecord, HaltOrigin
from alphaloop.ops._journal import open_journal
from alphaloop.pm import KillSwitch, equity_at, tick
from alphaloop.pm.calendar import TradingCalendar
from alphaloop.pm.dates import check_day, tick_day
from alphaloop.pm.lock import book_lock
from alphaloop.pm.manager import already
from alphaloop.pm.policy import evaluator_equity, load_data, setup_for, window_rows
from alphaloop.portfolio_opt import start_sequence
from alphaloop.settings import MAIN_BOOK, Settings

__all__ = [
    "MAIN_BOOK",
    "BookStatus",
    "RunReport",
    "check_tick_date",
    "pm_halt",
    "pm_resume",
    "pm_run",
    "pm_status",
    "pm_tick",
]


NO_ACTIVE_POLICY = (
    "no active policy: activate a library entry with `alphaloop policies activate ID`"
)


def _known_book(journal: Journal, name: str) -> BookRecord:
    """The book called ``name``.

    Raises:
        NotFound: there is none (the message lists the books there are).
    """
    record = journal.books.get(name)
    if record is None:
        known = ", ".join(b.name for b in journal.books.list()) or "none yet"
        raise NotFound(
            f"no book named {name!r} (books: {known}); `alphaloop pm tick` opens the book it ticks"
        )
    return record


class BookStatus(BaseModel):
    """A book, its equity at the last close of its data (``marked_at``), P&L since it opened,
    each position's value at that close, its latest decisions and its latest halts and
    resumes (who, why, from where). Every front end shows these numbers: the page's equity
    chart ends on ``equity`` at ``marked_at``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    book: BookRecord
    equity: float | None
    pnl: float | None
    decisions: list[DecisionRecord]
    events: list[BookEvent] = []
    marked_at: str | None = None
    values: dict[str, float] = {}


class RunReport(BaseModel):
    """A deployment check: the book's equity after each day of the window next to the frozen
    evaluator's backtest of the same strategy on the same window."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    book: str
    policy_id: int
    kind: str
    start: str
    end: str
    dates: list[str]
    equity: list[float]
    evaluator_equity: list[float]
    max_abs_diff: float
    halted_days: int


def _limits(settings: Settings, record: PolicyRecord) -> KillSwitch:
    """The kill switch of a book ticking ``record``: the drawdown limit the policy's session
    set travels with it, and the book's setting (``pm_max_drawdown``) may only tighten it."""
    stated = record.objective.max_drawdown
    drawdown = settings.pm_max_drawdown
    if stated is not None:
        drawdown = min(float(stated), drawdown)
    return KillSwitch(max_turnover=settings.pm_max_turnover, max_drawdown=drawdown)


def _policy(journal: Journal, settings: Settings, policy_id: int | None) -> PolicyRecord:
    pid = policy_id if policy_id is not None else library.active_policy_id(settings)
    if pid is None:
        raise Conflict(NO_ACTIVE_POLICY)
    return journal.policies.get(pid)


def _book(journal: Journal, name: str, broker: str, cash: float) -> BookRecord:
    book = journal.books.get(name)
    if book is None:
        return journal.books.create(name, broker, cash)
    if book.broker != broker:
        raise Conflict(f"book {name!r} trades through {book.broker}, not {broker}")
    return book


def pm_tick(
    settings: Settings,
    *,
    date: str | None = None,
    data: str | None = None,
    broker: str | None = None,
    book: str = MAIN_BOOK,
) -> DecisionRecord:
    """One tick of the active policy for ``date`` (default: the weekday after the data's last
    close), journaled as a decision whether it traded or was halted.

    Ticks of one book are serialised across processes; the tick is exactly once per (book,
    day): see :func:`alphaloop.pm.tick`.

    Raises:
        InvalidRequest: the date is not one a tick can decide (exit 2, HTTP 422).
        Conflict: the day is not after the book's last tick (exit 2, HTTP 409).
    """
    broker_name = broker or settings.broker
    with open_journal(settings) as journal:
        record = _policy(journal, settings, None)
        prices, market = load_data(record, data)
        day = tick_day(date, prices.index, TradingCalendar(settings.pm_calendar))
        setup = setup_for(
            record,
            prices,
            market,
            _limits(settings, record),
            min_trade=settings.pm_min_trade,
            fractional=broker_name == "paper",
        )
        with book_lock(settings.locks_dir, book):
            _book(journal, book, broker_name, settings.pm_initial_cash)
            return tick(journal, book, broker_for(broker_name, settings), setup, day)


def check_tick_date(
    settings: Settings, *, date: str | None, data: str | None = None, book: str = MAIN_BOOK
) -> str | None:
    """The day a tick of the active policy would decide for ``book``, checked against its data
    and the book's last tick: the whole request, as the tick will check it (what the REST
    server asks before it queues a tick; the tick checks again under the book's lock).

    Raises:
        InvalidRequest: not a day a tick can decide (checked first: a date in the future is
            refused even with no active policy).
        Conflict: no active policy; or the day is not after the book's last tick, and not one
            the same policy decided already (that tick returns its decision unchanged).
    """
    pid = library.active_policy_id(settings)
    if pid is None:
        if date is not None:
            check_day(date, TradingCalendar(settings.pm_calendar))
        raise Conflict(NO_ACTIVE_POLICY)
    with open_journal(settings) as journal:
        record = journal.policies.get(pid)
        prices, _ = load_data(record, data)
        day = tick_day(date, prices.index, TradingCalendar(settings.pm_calendar))
        found = journal.books.get(book)
        if found is not None:
            already(journal, found, record.id, day)
    return str(day.date())


def pm_run(
    settings: Settings,
    *,
    start: str,
    end: str,
    data: str | None = None,
    book: str | None = None,
    policy_id: int | None = None,
    broker: str = "paper",
    resume: bool = False,
) -> RunReport:
    """Ticks every trading day of ``start .. end`` in a fresh check book (replacing one of the
    same name, unless ``resume`` continues one an interrupted run left) and compares its equity
    with the evaluator's backtest of the same strategy.

    The check trades as the evaluator scores: fractional shares, no minimum trade, the book
    opened at the first day's target at no cost, the strategy's sequence starting on the
    window's first day. Kill-switch limits still apply; a halted day is counted. A resumed run
    first settles the tick the interruption left, then decides only the days not decided yet.
    """
    with open_journal(settings) as journal:
        record = _policy(journal, settings, policy_id)
        prices, market = load_data(record, data)
        rows = window_rows(market, start, end)
        name = book or f"check-{record.id}-{start}-{end}"
        with book_lock(settings.locks_dir, name):
            _open_check(journal, settings, name, broker, resume=resume)
            setup = setup_for(
                record, prices, market, _limits(settings, record), min_trade=0.0, fractional=True
            )
            days = market.dates[rows]
            ledger = broker_for(broker, settings)
            start_sequence()
            for i, day in enumerate(days):
                tick(journal, name, ledger, setup, day, free_trade=i == 0, fresh_sequence=False)
            dates, equity, halted = _run_equity(journal, name, prices, days)
        reference = evaluator_equity(record, market, rows, settings.pm_initial_cash)
    diff = float(np.max(np.abs(np.asarray(equity) - reference)))
    return RunReport(
        book=name,
        policy_id=record.id,
        kind=str(record.kind),
        start=dates[0],
        end=dates[-1],
        dates=dates,
        equity=equity,
        evaluator_equity=reference.tolist(),
        max_abs_diff=diff,
        halted_days=halted,
    )


def _open_check(
    journal: Journal, settings: Settings, name: str, broker: str, *, resume: bool
) -> None:
    """Opens the check book ``name``: kept when ``resume`` finds one of this broker, otherwise
    replaced by a fresh one."""
    found = journal.books.get(name)
    if found is not None and resume:
        if found.purpose != "check" or found.broker != broker:
            raise Conflict(
                f"book {name!r} is a {found.purpose} book of {found.broker}, not a check of "
                f"{broker}; --resume continues only a deployment check"
            )
        return
    if found is not None:
        journal.books.delete(name)
    journal.books.create(name, broker, settings.pm_initial_cash, purpose="check")


def _run_equity(
    journal: Journal, name: str, prices: pd.DataFrame, days: pd.DatetimeIndex
) -> tuple[list[str], list[float], int]:
    """The check book's equity at each day's close and its halted days, read from its
    decisions: a day's equity is what the next day's tick saw before it traded (the same
    closes), the last day's the book marked at its close."""
    decisions = {d.date: d for d in journal.books.list_decisions(name)}
    held = journal.books.get(name)
    dates = [str(d.date()) for d in days]
    equity = []
    for i, day in enumerate(days):
        after = decisions.get(dates[i + 1]) if i + 1 < len(dates) else None
        if after is not None and after.equity_before is not None:
            equity.append(float(after.equity_before))
        else:
            equity.append(equity_at(held.cash, held.positions, prices.loc[day]))
    halted = sum(1 for d in dates if d in decisions and decisions[d].status == "halted")
    return dates, equity, halted


def pm_status(
    settings: Settings, *, book: str = MAIN_BOOK, data: str | None = None, last: int = 5
) -> BookStatus:
    """The book, its equity marked at the latest close of the active policy's data (None when
    there is no active policy), P&L since it opened and its ``last`` decisions."""
    with open_journal(settings) as journal:
        record = _known_book(journal, book)
        equity, marked_at, values = None, None, {}
        pid = library.active_policy_id(settings)
        if pid is not None:
            prices, _ = load_data(journal.policies.get(pid), data)
            if set(record.positions) <= set(prices.columns):
                close = prices.iloc[-1]
                equity = equity_at(record.cash, record.positions, close)
                marked_at = str(prices.index[-1].date())
                values = {s: float(n * close[s]) for s, n in record.positions.items()}
        return BookStatus(
            book=record,
            equity=equity,
            pnl=None if equity is None else equity - record.initial_cash,
            decisions=journal.books.list_decisions(book, limit=last),
            events=journal.books.events(book, limit=last),
            marked_at=marked_at,
            values=values,
        )


def pm_halt(
    settings: Settings, why: str, *, book: str = MAIN_BOOK, origin: HaltOrigin = "cli"
) -> BookRecord:
    """Halts the book: every tick journals the reason and sends nothing until resumed. The
    halt is journaled as an event with its reason and origin.

    The main book, the one every tick opens unless told another, may be halted before its
    first tick (a person pulls the kill switch before trading starts); any other book must
    exist: a halt never creates one.

    Raises:
        InvalidRequest: a blank reason.
        NotFound: no book of that name (and it is not the main book).
    """
    if not why.strip():
        raise InvalidRequest("a halt needs a reason (--why TEXT)")
    with open_journal(settings) as journal:
        if book == MAIN_BOOK:
            _book(journal, book, settings.broker, settings.pm_initial_cash)
        else:
            _known_book(journal, book)
        return journal.books.set_halt(book, why.strip(), origin=origin)


def pm_resume(
    settings: Settings, *, book: str = MAIN_BOOK, why: str = "", origin: HaltOrigin = "cli"
) -> BookRecord:
    """Lifts a manual halt, journaled as an event with its reason and origin.

    Raises:
        NotFound: no book of that name.
    """
    with open_journal(settings) as journal:
        _known_book(journal, book)
        return journal.books.set_halt(book, None, origin=origin, reason=why.strip())
