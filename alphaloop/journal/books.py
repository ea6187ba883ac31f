"""The portfolio manager's books, decisions and fills: a repository the journal holds as
``journal.books``.

A book is a named ledger (cash, share positions,
peak equity, a manual halt); every tick of the portfolio manager is a decision row whether it
traded or was halted; every fill is a row of its own. The verdict columns of ``decisions``
(``verdict``, ``override_weights``, ``note``, ``decided_at``) are written by the preference
flywheel, not here; :class:`DecisionRecord` reads them.
"""

from __future__ import annotations

import sqlite3
from typing import Any, ClassVar, Literal

from alphaloop.exceptions import AlphaloopError, Conflict
from alphaloop.journal.codec import columns, dumps, now
from alphaloop.journal.connection import JournalFile
from alphaloop.journal.models import _Record

__all__ = [
    "BookEvent",
    "BookRecord",
    "Books",
    "DecisionRecord",
    "FillRecord",
    "PendingTick",
]

DecisionStatus = Literal["sent", "halted", "failed"]
HaltOrigin = Literal["cli", "api", "scheduler", "kill_switch"]


class BookRecord(_Record):
    """One book: its broker, cash, share positions by symbol, peak equity (for the drawdown
    halt), the date of its last tick and the manual halt's reason (None when trading)."""

    json_fields: ClassVar[frozenset[str]] = frozenset({"positions"})

    name: str
    broker: str
    initial_cash: float
    cash: float
    positions: dict[str, float]
    peak_equity: float
    as_of: str | None = None
    halted: str | None = None
    # ``live``: a book that trades; ``check``: a deployment check (``pm run``), whose decisions
    # nobody reviews.
    purpose: str = "live"
    created_at: str
    updated_at: str


class DecisionRecord(_Record):
    """One tick: the day, the policy, the weights before and after each pipeline stage
    (``stages``, with the pipeline state handed to the next tick under ``state``), the orders,
    the kill-switch verdict (``status``, ``halt_reason``), the fills and the equity before."""

    json_fields: ClassVar[frozenset[str]] = frozenset(
        {"symbols", "pre_weights", "stages", "target_weights", "orders", "fills",
         "override_weights"}
    )  # fmt: skip

    id: int
    book: str
    date: str
    policy_id: int | None = None
    status: DecisionStatus
    halt_reason: str | None = None
    symbols: list[str]
    pre_weights: dict[str, float] | None = None
    stages: dict[str, Any] | None = None
    target_weights: dict[str, float] | None = None
    truncated: bool = False
    orders: list[dict[str, Any]]
    fills: list[dict[str, Any]]
    equity_before: float | None = None
    error: str | None = None
    verdict: str | None = None
    override_weights: dict[str, float] | None = None
    note: str | None = None
    decided_at: str | None = None
    # Which version of the frozen evaluator produced its numbers (None before schema 5).
    evaluator_version: str | None = None
    created_at: str


class FillRecord(_Record):
    """One executed trade: signed shares at a price, its cost, the broker's order id."""

    id: int
    book: str
    decision_id: int
    date: str
    symbol: str
    shares: float
    price: float
    cost: float
    broker_order_id: str | None = None
    created_at: str


class PendingTick(_Record):
    """A tick whose orders were named and journaled before the broker was called, and whose
    decision is not journaled yet: the decision's fields so far, the order plan (each order
    with its ``client_order_id``) and the peak equity the book will carry."""

    json_fields: ClassVar[frozenset[str]] = frozenset({"fields", "plan"})

    book: str
    date: str
    fields: dict[str, Any]
    plan: dict[str, Any]
    peak_equity: float
    created_at: str


class BookEvent(_Record):
    """A halt or a resume of a book: the reason and where it came from."""

    id: int
    book: str
    kind: Literal["halt", "resume"]
    reason: str
    origin: HaltOrigin
    created_at: str


class Books:
    """Reads and writes of the ``pm_books``, ``decisions`` and ``pm_fills`` tables."""

    def __init__(self, journal: JournalFile) -> None:
        self._journal = journal

    # --- books -------------------------------------------------------------------------------

    def get(self, name: str) -> BookRecord | None:
        """The book called ``name``, or None."""
        rows = self._journal._rows("SELECT * FROM pm_books WHERE name = ?", (name,))
        return BookRecord.from_row(rows[0]) if rows else None

    def list(self) -> list[BookRecord]:
        """Every book, most recently updated first."""
        rows = self._journal._rows("SELECT * FROM pm_books ORDER BY updated_at DESC")
        return [BookRecord.from_row(r) for r in rows]

    def create(
        self, name: str, broker: str, initial_cash: float, *, purpose: str = "live"
    ) -> BookRecord:
        """Opens a book holding ``initial_cash`` in cash (``purpose``: ``live`` or ``check``).

        Raises:
            AlphaloopError: a book of that name exists.
        """
        stamp = now()
        row = {
            "name": name,
            "broker": broker,
            "initial_cash": float(initial_cash),
            "cash": float(initial_cash),
            "positions": "{}",
            "peak_equity": float(initial_cash),
            "purpose": purpose,
            "created_at": stamp,
            "updated_at": stamp,
        }
        try:
            with self._journal._write():
                self._journal.db["pm_books"].insert(row)
        except sqlite3.IntegrityError:
            raise AlphaloopError(f"a book named {name!r} already exists") from None
        return self._book(name)

    def update(
        self,
        name: str,
        *,
        cash: float,
        positions: dict[str, float],
        peak_equity: float,
        as_of: str | None,
    ) -> BookRecord:
        """Replaces the book's cash, positions, peak equity and last tick date."""
        values = columns(
            BookRecord,
            {"cash": cash, "positions": positions, "peak_equity": peak_equity, "as_of": as_of},
        )
        with self._journal._write():
            self._journal.db["pm_books"].update(name, {**values, "updated_at": now()})
        return self._book(name)

    def set_halt(
        self, name: str, why: str | None, *, origin: HaltOrigin = "cli", reason: str = ""
    ) -> BookRecord:
        """Halts the book with a reason (``why``) or lifts the halt (None), journaling who did
        it (``origin``) and why (for a resume, ``reason``) in the same transaction."""
        self._book(name)
        kind, said = ("halt", why) if why is not None else ("resume", reason or "no reason given")
        stamp = now()
        with self._journal._write() as conn:
            conn.execute(
                "UPDATE pm_books SET halted = ?, updated_at = ? WHERE name = ?", (why, stamp, name)
            )
            conn.execute(
                "INSERT INTO pm_book_events (book, kind, reason, origin, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (name, kind, said, origin, stamp),
            )
        return self._book(name)

    def events(self, name: str, limit: int = 20) -> list[BookEvent]:
        """The book's halts and resumes, newest first."""
        rows = self._journal._rows(
            "SELECT * FROM pm_book_events WHERE book = ? ORDER BY id DESC LIMIT ?", (name, limit)
        )
        return [BookEvent.from_row(r) for r in rows]

    def delete(self, name: str) -> None:
        """Removes a book with its decisions and fills (a deployment check run again)."""
        with self._journal._write() as conn:
            conn.execute("DELETE FROM pm_fills WHERE book = ?", (name,))
            conn.execute("DELETE FROM pm_pending WHERE book = ?", (name,))
            conn.execute("DELETE FROM decisions WHERE book = ?", (name,))
            conn.execute("DELETE FROM pm_books WHERE name = ?", (name,))

    def _book(self, name: str) -> BookRecord:
        book = self.get(name)
        if book is None:
            known = ", ".join(b.name for b in self.list()) or "none yet"
            raise AlphaloopError(f"no book named {name!r} (books: {known})")
        return book

    # --- decisions and fills -----------------------------------------------------------------

    def add_decision(self, **fields: Any) -> DecisionRecord:
        """Journals one tick with its fills (``fills`` rows go to ``pm_fills`` too, each a dict
        with ``symbol``, ``shares``, ``price``, ``cost`` and optional ``broker_order_id``)."""
        with self._journal._write() as conn:
            decision_id = self._insert_decision(conn, fields)
        return self.get_decision(decision_id)

    def decision_on(self, book: str, date: str) -> DecisionRecord | None:
        """The book's decision for ``date``, or None (a book decides a day once)."""
        rows = self._journal._rows(
            "SELECT * FROM decisions WHERE book = ? AND date = ? ORDER BY id LIMIT 1", (book, date)
        )
        return DecisionRecord.from_row(rows[0]) if rows else None

    def pending_tick(self, book: str) -> PendingTick | None:
        """The book's tick whose orders are journaled but not settled, or None."""
        rows = self._journal._rows("SELECT * FROM pm_pending WHERE book = ?", (book,))
        return PendingTick.from_row(rows[0]) if rows else None

    def begin_tick(
        self, book: str, date: str, fields: dict[str, Any], plan: Any, peak_equity: float
    ) -> None:
        """Journals a tick's named orders (in ``plan``) before any is sent.

        Raises:
            Conflict: the book has a pending tick already (finish it first).
        """
        try:
            with self._journal._write() as conn:
                conn.execute(
                    "INSERT INTO pm_pending (book, date, fields, plan, peak_equity, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (book, date, dumps(fields), dumps(plan), float(peak_equity), now()),
                )
        except sqlite3.IntegrityError:
            raise Conflict(
                f"book {book!r} has an unfinished tick; tick again to finish it"
            ) from None

    def commit_tick(
        self,
        book: str,
        decision: dict[str, Any],
        *,
        cash: float,
        positions: dict[str, float],
        peak_equity: float,
        as_of: str | None,
    ) -> DecisionRecord:
        """In one transaction: the book's new holdings, the decision with its fills, and the
        end of the book's pending tick. A kill at any point leaves all of it or none.

        Raises:
            Conflict: the book already has a decision for that date.
        """
        book_cols = columns(
            BookRecord,
            {"cash": cash, "positions": positions, "peak_equity": peak_equity, "as_of": as_of},
        )
        with self._journal._write() as conn:
            taken = conn.execute(
                "SELECT id FROM decisions WHERE book = ? AND date = ?", (book, decision["date"])
            ).fetchone()
            if taken:
                raise Conflict(f"book {book!r} has decision {taken[0]} for {decision['date']}")
            conn.execute(
                "UPDATE pm_books SET cash = ?, positions = ?, peak_equity = ?, as_of = ?, "
                "updated_at = ? WHERE name = ?",
                (*book_cols.values(), now(), book),
            )
            decision_id = self._insert_decision(conn, decision)
            conn.execute("DELETE FROM pm_pending WHERE book = ?", (book,))
        return self.get_decision(decision_id)

    def _insert_decision(self, conn: sqlite3.Connection, fields: dict[str, Any]) -> int:
        """Inserts a decision row and its fills on ``conn`` (inside a write transaction)."""
        row = columns(DecisionRecord, fields)
        row["created_at"] = now()
        names = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        cursor = conn.execute(
            f"INSERT INTO decisions ({names}) VALUES ({marks})", tuple(row.values())
        )
        decision_id = int(cursor.lastrowid)  # type: ignore[arg-type]
        for fill in fields.get("fills") or []:
            conn.execute(
                "INSERT INTO pm_fills (book, decision_id, date, symbol, shares, price, cost, "
                "broker_order_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    fields["book"],
                    decision_id,
                    fields["date"],
                    fill["symbol"],
                    float(fill["shares"]),
                    float(fill["price"]),
                    float(fill["cost"]),
                    fill.get("broker_order_id"),
                    row["created_at"],
                ),
            )
        return decision_id

    def get_decision(self, decision_id: int) -> DecisionRecord:
        """One decision.

        Raises:
            AlphaloopError: no such id.
        """
        rows = self._journal._rows("SELECT * FROM decisions WHERE id = ?", (decision_id,))
        if not rows:
            raise AlphaloopError(f"no decision {decision_id!r} in {self._journal.path}")
        return DecisionRecord.from_row(rows[0])

    def list_decisions(self, book: str, limit: int | None = None) -> list[DecisionRecord]:
        """Decisions of a book, newest first."""
        sql = "SELECT * FROM decisions WHERE book = ? ORDER BY id DESC"
        params: tuple[Any, ...] = (book,)
        if limit is not None:
            sql += " LIMIT ?"
            params = (book, limit)
        return [DecisionRecord.from_row(r) for r in self._journal._rows(sql, params)]

    def list_fills(self, book: str) -> list[FillRecord]:
        """Fills of a book, oldest first."""
        rows = self._journal._rows("SELECT * FROM pm_fills WHERE book = ? ORDER BY id", (book,))
        return [FillRecord.from_row(r) for r in rows]
