"""The portfolio manager's operations: tick the active policy, run a deployment check over a
window, show a book, halt and resume it."""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from alphaloop import library
from alphaloop.broker import broker_for
from alphaloop.exceptions import PmError
from alphaloop.journal import Journal, PolicyRecord
from alphaloop.journal.book import BookRecord, DecisionRecord
from alphaloop.ops._journal import open_journal
from alphaloop.pm import KillSwitch, equity_at, tick
from alphaloop.pm.policy import evaluator_equity, load_data, setup_for, window_rows
from alphaloop.portfolio_opt import start_sequence
from alphaloop.settings import MAIN_BOOK, Settings

__all__ = [
    "MAIN_BOOK",
    "BookStatus",
    "RunReport",
    "pm_halt",
    "pm_resume",
    "pm_run",
    "pm_status",
    "pm_tick",
]


class BookStatus(BaseModel):
    """A book, its equity at the last close of its data, P&L and its latest decisions."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    book: BookRecord
    equity: float | None
    pnl: float | None
    decisions: list[DecisionRecord]


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


def _limits(settings: Settings) -> KillSwitch:
    return KillSwitch(max_turnover=settings.pm_max_turnover, max_drawdown=settings.pm_max_drawdown)


def _policy(journal: Journal, settings: Settings, policy_id: int | None) -> PolicyRecord:
    pid = policy_id if policy_id is not None else library.active_policy_id(settings)
    if pid is None:
        raise PmError(
            "no active policy: activate a library entry with `alphaloop policies activate ID`"
        )
    return journal.get_policy(pid)


def _book(journal: Journal, name: str, broker: str, cash: float) -> BookRecord:
    book = journal.get_book(name)
    if book is None:
        return journal.create_book(name, broker, cash)
    if book.broker != broker:
        raise PmError(f"book {name!r} trades through {book.broker}, not {broker}")
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
    close), journaled as a decision whether it traded or was halted."""
    broker_name = broker or settings.broker
    with open_journal(settings) as journal:
        record = _policy(journal, settings, None)
        prices, market = load_data(record, data)
        day = pd.Timestamp(date) if date else prices.index[-1] + pd.offsets.BDay(1)
        setup = setup_for(
            record,
            prices,
            market,
            _limits(settings),
            min_trade=settings.pm_min_trade,
            fractional=broker_name == "paper",
        )
        _book(journal, book, broker_name, settings.pm_initial_cash)
        return tick(journal, book, broker_for(broker_name, settings), setup, day)


def pm_run(
    settings: Settings,
    *,
    start: str,
    end: str,
    data: str | None = None,
    book: str | None = None,
    policy_id: int | None = None,
) -> RunReport:
    """Ticks every trading day of ``start .. end`` in a fresh paper book (replacing one of the
    same name) and compares its equity with the evaluator's backtest of the same strategy.

    The check trades as the evaluator scores: fractional shares, no minimum trade, the book
    opened at the first day's target at no cost, the strategy's sequence starting on the
    window's first day. Kill-switch limits still apply; a halted day is counted.
    """
    with open_journal(settings) as journal:
        record = _policy(journal, settings, policy_id)
        prices, market = load_data(record, data)
        rows = window_rows(market, start, end)
        name = book or f"check-{record.id}-{start}-{end}"
        if journal.get_book(name) is not None:
            journal.delete_book(name)
        journal.create_book(name, "paper", settings.pm_initial_cash, purpose="check")
        setup = setup_for(record, prices, market, _limits(settings), min_trade=0.0, fractional=True)
        broker = broker_for("paper", settings)
        start_sequence()
        dates, equity, halted = [], [], 0
        for i, day in enumerate(market.dates[rows]):
            decision = tick(
                journal, name, broker, setup, day, free_trade=i == 0, fresh_sequence=False
            )
            halted += decision.status == "halted"
            held = journal.get_book(name)
            equity.append(equity_at(held.cash, held.positions, prices.loc[day]))
            dates.append(str(day.date()))
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


def pm_status(
    settings: Settings, *, book: str = MAIN_BOOK, data: str | None = None, last: int = 5
) -> BookStatus:
    """The book, its equity marked at the latest close of the active policy's data (None when
    there is no active policy), P&L since it opened and its ``last`` decisions."""
    with open_journal(settings) as journal:
        record = journal.get_book(book)
        if record is None:
            known = ", ".join(b.name for b in journal.list_books()) or "none yet"
            raise PmError(f"no book named {book!r} (books: {known}); `alphaloop pm tick` opens one")
        equity = None
        pid = library.active_policy_id(settings)
        if pid is not None:
            prices, _ = load_data(journal.get_policy(pid), data)
            if set(record.positions) <= set(prices.columns):
                equity = equity_at(record.cash, record.positions, prices.iloc[-1])
        return BookStatus(
            book=record,
            equity=equity,
            pnl=None if equity is None else equity - record.initial_cash,
            decisions=journal.list_decisions(book, limit=last),
        )


def pm_halt(settings: Settings, why: str, *, book: str = MAIN_BOOK) -> BookRecord:
    """Halts the book: every tick journals the reason and sends nothing until resumed."""
    if not why.strip():
        raise ValueError("a halt needs a reason (--why TEXT)")
    with open_journal(settings) as journal:
        _book(journal, book, settings.broker, settings.pm_initial_cash)
        return journal.set_halt(book, why.strip())


def pm_resume(settings: Settings, *, book: str = MAIN_BOOK) -> BookRecord:
    """Lifts a manual halt."""
    with open_journal(settings) as journal:
        if journal.get_book(book) is None:
            raise PmError(f"no book named {book!r}")
        return journal.set_halt(book, None)
