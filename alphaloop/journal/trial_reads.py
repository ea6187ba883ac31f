"""Reading the ``trials`` table: one trial, a session's trials, what changed since a read, and
a session's whole history kept up to date (:class:`FollowedTrials`).

Reads come back as frozen :class:`~.models.TrialRecord` rows, without their per-day series when
the reader needs none (``series=False``). :class:`TrialReads` is the base of the journal's
:class:`~.trials.Trials` repository; its rankings and pages are in :mod:`.trial_rankings`.
"""

from __future__ import annotations

import threading
from typing import Any

from alphaloop.exceptions import NotFound
from alphaloop.journal.connection import JournalFile
from alphaloop.journal.models import TrialKind, TrialRecord, TrialStatus
from alphaloop.journal.refs import session_not_found, trial_not_found

_SERIES = ("val_returns", "final_weights", "curve", "prompt")
# Explicit columns, never ``*``: ``trials.outcome`` (a result awaiting its verdict, see
# ``awaiting_verdict``) is the loop's working state, not part of a trial's record.
ALL_COLUMNS = ", ".join(TrialRecord.model_fields)
# Records kept for rows read again unchanged (Trials._record): a server reading many long
# sessions starts over past this many.
_PARSED_ROWS = 50_000
WITHOUT_SERIES = ", ".join(
    f"NULL AS {name}" if name in _SERIES else name for name in TrialRecord.model_fields
)


def columns_of(series: bool) -> str:
    """The trial columns to select: all of them, or the per-day series as NULL."""
    return ALL_COLUMNS if series else WITHOUT_SERIES


class TrialReads:
    """Reads of the ``trials`` table through the journal's connection."""

    def __init__(self, journal: JournalFile) -> None:
        self._journal = journal
        # The last record parsed of each trial read without its series, with the raw row it
        # came from (see _record).
        self._parsed: dict[int, tuple[tuple[Any, ...], TrialRecord]] = {}

    def _records(self, sql: str, params: tuple[Any, ...] = ()) -> list[TrialRecord]:
        return [self._record(r) for r in self._journal._rows(sql, params)]

    def _record(self, row: dict[str, Any]) -> TrialRecord:
        """``row`` parsed, or the record parsed from the very same row before.

        The loop reads its whole history at every step, so a session of n trials would parse
        rows n^2 / 2 times (about 0.15 ms each: JSON and validation), which grows to minutes
        over a long session. A row read again unchanged (every value equal, its per-day series
        left out) gives back the same frozen record; a row with its series is parsed each time,
        so holding records costs no series' memory."""
        if any(row.get(name) is not None for name in _SERIES):
            return TrialRecord.from_row(row)
        key = tuple(row.values())
        held = self._parsed.get(row["id"])
        if held is not None and held[0] == key:
            return held[1]
        record = TrialRecord.from_row(row)
        if len(self._parsed) >= _PARSED_ROWS:
            self._parsed.clear()
        self._parsed[row["id"]] = (key, record)
        return record

    def get(self, trial_id: int) -> TrialRecord:
        """One trial by its journal id.

        Raises:
            NotFound: no such id.
        """
        rows = self._records(f"SELECT {ALL_COLUMNS} FROM trials WHERE id = ?", (trial_id,))
        if not rows:
            raise trial_not_found(self._journal, trial_id)
        return rows[0]

    def at(self, session_id: str, idx: int) -> TrialRecord:
        """One trial by its index within a session (the ``#`` a review lists).

        Raises:
            NotFound: no such session.
            NotFound: the session has no trial with that index (the message gives the range).
        """
        rows = self._records(
            f"SELECT {ALL_COLUMNS} FROM trials WHERE session_id = ? AND idx = ?", (session_id, idx)
        )
        if rows:
            return rows[0]
        if not self._journal._rows("SELECT 1 FROM sessions WHERE id = ?", (session_id,)):
            raise session_not_found(self._journal, session_id)
        span = self._journal._rows(
            "SELECT MIN(idx) AS lo, MAX(idx) AS hi FROM trials WHERE session_id = ?", (session_id,)
        )[0]
        has = (
            f"its trials are #{span['lo']}..#{span['hi']}"
            if span["lo"] is not None
            else "it has no trials"
        )
        raise NotFound(f"session {session_id} has no trial #{idx}; {has}")

    def of_session(
        self, session_id: str, kind: TrialKind | str | None = None, *, series: bool = True
    ) -> list[TrialRecord]:
        """The trials of a session in index order, optionally of one kind only.

        Args:
            session_id: the session.
            kind: only trials of this kind.
            series: False leaves the per-day series out (``val_returns``, ``final_weights`` and
                ``curve`` come back None). Parsing them is most of a read's cost (~0.4 ms a
                trial), and a reader of verdicts, configs and metrics needs none of them.
        """
        sql = f"SELECT {columns_of(series)} FROM trials WHERE session_id = ?"
        params: tuple[Any, ...] = (session_id,)
        if kind is not None:
            sql, params = sql + " AND kind = ?", (*params, TrialKind(kind).value)
        return self._records(sql + " ORDER BY idx", params)

    def after(
        self, session_id: str, after_id: int = 0, *, series: bool = False
    ) -> list[TrialRecord]:
        """The trials of a session with a journal id above ``after_id``, in index order: what a
        poller holding the cursor ``after_id`` has not seen yet. Without the per-day series by
        default (``series`` as in :meth:`of_session`): a poller redraws tables and charts of
        verdicts and objectives, and reading every series of a long session is most of a
        poll's cost."""
        return self._records(
            f"SELECT {columns_of(series)} FROM trials WHERE session_id = ? AND id > ? ORDER BY idx",
            (session_id, after_id),
        )

    def changed(self, session_id: str, after: int = 0) -> tuple[list[TrialRecord], int]:
        """The session's trials whose row was written after revision ``after`` (every trial
        for 0), in index order and without their per-day series, and the highest revision
        among them (``after`` when none changed): hand it back to read only what changes next.
        One statement, so the revision and the rows are of the same moment."""
        rows = self._journal._rows(
            f"SELECT {WITHOUT_SERIES}, (SELECT rev FROM trial_revisions "
            "WHERE trial_id = trials.id) AS revision_ FROM trials WHERE id IN "
            "(SELECT trial_id FROM trial_revisions WHERE session_id = ? AND rev > ?) "
            "ORDER BY idx",
            (session_id, after),
        )
        revisions = [r.pop("revision_") for r in rows]
        return [self._record(r) for r in rows], max(revisions, default=after)

    def follow(self, session_id: str) -> FollowedTrials:
        """A session's trials kept up to date by reading only what changed (see
        :class:`FollowedTrials`)."""
        return FollowedTrials(self, session_id)

    def running(self, session_id: str) -> list[TrialRecord]:
        """A session's trials still running, with their live training curves."""
        return self._records(
            f"SELECT {ALL_COLUMNS} FROM trials WHERE session_id = ? AND status = ? ORDER BY idx",
            (session_id, TrialStatus.running.value),
        )

    def awaiting_verdict(self, session_id: str) -> list[tuple[TrialRecord, str]]:
        """Running trials whose outcome is held (see :meth:`hold_outcome`), in index order,
        each with that outcome's JSON text: what a killed process left to judge."""
        rows = self._journal._rows(
            f"SELECT {ALL_COLUMNS}, outcome AS held FROM trials WHERE session_id = ? "
            "AND status = ? AND outcome IS NOT NULL ORDER BY idx",
            (session_id, TrialStatus.running.value),
        )
        return [
            (TrialRecord.from_row({k: v for k, v in r.items() if k != "held"}), r["held"])
            for r in rows
        ]


class FollowedTrials:
    """A session's trials without their per-day series, as the journal has them at each read,
    reading only the rows written since the one before (:meth:`Trials.changed`).

    What a reader of a session's whole history at every step holds: the research loop reads it
    to propose, to race a trial's first fold and to judge it, and a read of every row grew
    with the session until it cost more than a Mean-CVaR trial. Records are frozen; the lists
    handed out are the reader's own."""

    def __init__(self, trials: TrialReads, session_id: str) -> None:
        self._trials = trials
        self._session_id = session_id
        self._revision = 0
        self._ordered: list[TrialRecord] = []
        self._at: dict[int, int] = {}  # trial id -> its place in _ordered
        self._lock = threading.Lock()  # a read and what it updates, as one

    def rows(self) -> list[TrialRecord]:
        """Every trial of the session in index order, as of now."""
        with self._lock:
            changed, self._revision = self._trials.changed(self._session_id, self._revision)
            new = [t for t in changed if t.id not in self._at]
            for t in changed:
                if t.id in self._at:
                    self._ordered[self._at[t.id]] = t
            start = len(self._ordered)
            self._ordered.extend(new)  # in index order, as ``changed`` gives them
            if new and start and new[0].idx < self._ordered[start - 1].idx:  # one came late
                self._ordered.sort(key=lambda r: r.idx)
                self._at = {r.id: i for i, r in enumerate(self._ordered)}
            else:
                self._at.update((t.id, start + i) for i, t in enumerate(new))
            return list(self._ordered)
