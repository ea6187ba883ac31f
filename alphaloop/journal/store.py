"""Every read query of the journal: sessions, trials, clips, events, LLM calls and chart reads.

Reads return frozen models (:mod:`.models`); the file, its lifecycle and its transactions are
:class:`~alphaloop.journal.connection.JournalFile`'s.
"""

from __future__ import annotations

from typing import Any

from alphaloop.exceptions import SessionNotFound, TrialNotFound
from alphaloop.journal.connection import DEFAULT_BUSY_TIMEOUT_S, JournalFile, pid_alive
from alphaloop.journal.models import (
    ChartReadRecord,
    ClipRecord,
    EventRecord,
    LLMUsageRecord,
    SessionRecord,
    SessionStatus,
    TrialKind,
    TrialRecord,
    TrialStatus,
)

__all__ = ["DEFAULT_BUSY_TIMEOUT_S", "JournalReader", "pid_alive"]

_SERIES = ("val_returns", "final_weights", "curve", "prompt")
# Explicit columns, never ``*``: ``trials.outcome`` (a result awaiting its verdict, see
# ``awaiting_verdict``) is the loop's working state, not part of a trial's record.
_ALL_COLUMNS = ", ".join(TrialRecord.model_fields)
_WITHOUT_SERIES = ", ".join(
    f"NULL AS {name}" if name in _SERIES else name for name in TrialRecord.model_fields
)
_NEWEST_FIRST = "ORDER BY created_at DESC, rowid DESC"


def _columns(series: bool) -> str:
    """The trial columns to select: all of them, or the per-day series as NULL."""
    return _ALL_COLUMNS if series else _WITHOUT_SERIES


_LIVE = (SessionStatus.running.value, SessionStatus.stopping.value)
# Trials that finished with a verdict on their metrics, and the search/baseline kinds (the
# validation window), as SQL bound parameters.
_SCORED = (TrialStatus.keep.value, TrialStatus.discard.value)
_VALIDATION_KINDS = (TrialKind.search.value, TrialKind.baseline.value)
_BEST_FIRST = "ORDER BY violation IS NOT NULL, objective DESC, idx ASC"
_BEST_KEPT_FIRST = "ORDER BY violation IS NOT NULL, COALESCE(seed_mean, objective) DESC, idx ASC"


def _session(row: dict[str, Any]) -> SessionRecord:
    """A session as it is: one left ``running`` or ``stopping`` by a process that is gone (a
    kill -9, a power cut) reads as ``interrupted``, since nothing will ever move it on. The row
    itself keeps what its owner last wrote (a resumed session honours a pending stop)."""
    if row["status"] in _LIVE and not pid_alive(row["owner_pid"]):
        gone = f"its process {row['owner_pid']} ended while it was {row['status']}"
        row = {**row, "status": SessionStatus.interrupted.value, "error": row["error"] or gone}
    return SessionRecord.from_row(row)


class JournalReader(JournalFile):
    """The read half of :class:`~alphaloop.journal.Journal`: an open journal file and its
    queries (arguments as :class:`~alphaloop.journal.connection.JournalFile`)."""

    def list_sessions(self) -> list[SessionRecord]:
        """Every session, newest first."""
        rows = self._rows(f"SELECT * FROM sessions {_NEWEST_FIRST}")
        return [_session(r) for r in rows]

    def get_session(self, session_id: str) -> SessionRecord:
        """One session.

        Raises:
            SessionNotFound: no such id (the message lists the most recent ids).
        """
        rows = self._rows("SELECT * FROM sessions WHERE id = ?", (session_id,))
        if not rows:
            raise self._session_not_found(session_id)
        return _session(rows[0])

    def _session_not_found(self, session_id: str) -> SessionNotFound:
        recent = [r["id"] for r in self._rows(f"SELECT id FROM sessions {_NEWEST_FIRST} LIMIT 5")]
        hint = f"recent sessions: {', '.join(recent)}" if recent else "it has no sessions yet"
        return SessionNotFound(f"no session {session_id!r} in {self.path}; {hint}")

    def trials(
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
        columns = _columns(series)
        sql = f"SELECT {columns} FROM trials WHERE session_id = ?"
        params: tuple[Any, ...] = (session_id,)
        if kind is not None:
            sql, params = sql + " AND kind = ?", (*params, TrialKind(kind).value)
        return [TrialRecord.from_row(r) for r in self._rows(sql + " ORDER BY idx", params)]

    def trials_after(
        self, session_id: str, after_id: int = 0, *, series: bool = False
    ) -> list[TrialRecord]:
        """The trials of a session with a journal id above ``after_id``, in index order: what a
        poller holding the cursor ``after_id`` has not seen yet. Without the per-day series by
        default (``series`` as in :meth:`trials`): a poller redraws tables and charts of
        verdicts and objectives, and reading every series of a long session is most of a
        poll's cost."""
        columns = _columns(series)
        rows = self._rows(
            f"SELECT {columns} FROM trials WHERE session_id = ? AND id > ? ORDER BY idx",
            (session_id, after_id),
        )
        return [TrialRecord.from_row(r) for r in rows]

    def running_trials(self, session_id: str) -> list[TrialRecord]:
        """A session's trials still running, with their live training curves."""
        rows = self._rows(
            f"SELECT {_ALL_COLUMNS} FROM trials WHERE session_id = ? AND status = ? ORDER BY idx",
            (session_id, TrialStatus.running.value),
        )
        return [TrialRecord.from_row(r) for r in rows]

    def clips_after(self, session_id: str, after_id: int = 0) -> list[ClipRecord]:
        """The bounds clips of a session's trials with a journal id above ``after_id``, by trial
        index (the clips :meth:`trials_after` rows were made with)."""
        rows = self._rows(
            "SELECT c.* FROM bounds_clips c JOIN trials t ON t.id = c.trial_id "
            "WHERE t.session_id = ? AND t.id > ? ORDER BY t.idx, c.id",
            (session_id, after_id),
        )
        return [ClipRecord.from_row(r) for r in rows]

    def awaiting_verdict(self, session_id: str) -> list[tuple[TrialRecord, str]]:
        """Running trials whose outcome is held (see ``Journal.hold_outcome``), in index order,
        each with that outcome's JSON text: what a killed process left to judge."""
        rows = self._rows(
            f"SELECT {_ALL_COLUMNS}, outcome AS held FROM trials WHERE session_id = ? "
            "AND status = ? AND outcome IS NOT NULL ORDER BY idx",
            (session_id, TrialStatus.running.value),
        )
        return [
            (TrialRecord.from_row({k: v for k, v in r.items() if k != "held"}), r["held"])
            for r in rows
        ]

    def get_trial(self, trial_id: int) -> TrialRecord:
        """One trial by its journal id.

        Raises:
            TrialNotFound: no such id.
        """
        rows = self._rows(f"SELECT {_ALL_COLUMNS} FROM trials WHERE id = ?", (trial_id,))
        if not rows:
            raise TrialNotFound(f"no trial with id {trial_id!r} in {self.path}")
        return TrialRecord.from_row(rows[0])

    def trial_at(self, session_id: str, idx: int) -> TrialRecord:
        """One trial by its index within a session (the ``#`` a review lists).

        Raises:
            SessionNotFound: no such session.
            TrialNotFound: the session has no trial with that index (the message gives the range).
        """
        rows = self._rows(
            f"SELECT {_ALL_COLUMNS} FROM trials WHERE session_id = ? AND idx = ?", (session_id, idx)
        )
        if rows:
            return TrialRecord.from_row(rows[0])
        self.get_session(session_id)
        span = self._rows(
            "SELECT MIN(idx) AS lo, MAX(idx) AS hi FROM trials WHERE session_id = ?", (session_id,)
        )[0]
        has = (
            f"its trials are #{span['lo']}..#{span['hi']}"
            if span["lo"] is not None
            else "it has no trials"
        )
        raise TrialNotFound(f"session {session_id} has no trial #{idx}; {has}")

    def completed_trials(
        self,
        kinds: tuple[TrialKind | str, ...] = (TrialKind.search, TrialKind.baseline),
        *,
        series: bool = True,
    ) -> list[TrialRecord]:
        """Every trial of every session that finished with metrics (``keep`` or ``discard``), of
        the given kinds, in the order they finished. The default leaves out test-window rows, so
        every number compared is a validation number. With ``series=False`` the per-day series
        come back None (what a chart ranking every run by its metrics reads)."""
        wanted = [TrialKind(k).value for k in kinds]
        if not wanted:
            return []
        marks = ", ".join("?" for _ in wanted)
        rows = self._rows(
            f"SELECT {_columns(series)} FROM trials WHERE kind IN ({marks}) AND status IN (?, ?) "
            "AND metrics IS NOT NULL ORDER BY finished_at, id",
            (*wanted, *_SCORED),
        )
        return [TrialRecord.from_row(r) for r in rows]

    def leaderboard(
        self, session_id: str, k: int = 10, *, series: bool = True
    ) -> list[TrialRecord]:
        """The ``k`` best finished search and baseline trials (validation window), best first:
        trials within the session's limits before those that break one (a discarded trial with
        a higher objective is no better than one that respects the limits), then by objective,
        ties broken by the earlier index. Test-window rows never appear. With ``series=False``
        the per-day series come back None. The ranking sorts ids only, so its cost does not grow
        with the size of the trials' rows."""
        if k < 1:
            raise ValueError(f"leaderboard needs k >= 1, got {k}")
        ranked = (
            "SELECT id FROM trials WHERE session_id = ? AND kind IN (?, ?) "
            f"AND status != ? AND objective IS NOT NULL {_BEST_FIRST} LIMIT ?"
        )
        rows = self._rows(
            f"SELECT {_columns(series)} FROM trials WHERE id IN ({ranked}) {_BEST_FIRST}",
            (session_id, *_VALIDATION_KINDS, TrialStatus.running.value, k),
        )
        return [TrialRecord.from_row(r) for r in rows]

    def best_trial(self, session_id: str) -> TrialRecord | None:
        """The best kept search trial (ranked as :func:`~.models.best_kept` ranks: by the mean
        over its seeds when it was confirmed); else the best baseline (one within the limits
        first); else None."""
        for kind, statuses, order in (
            (TrialKind.search, (TrialStatus.keep.value,), _BEST_KEPT_FIRST),
            (TrialKind.baseline, _SCORED, _BEST_FIRST),
        ):
            marks = ", ".join("?" for _ in statuses)
            rows = self._rows(
                f"SELECT {_ALL_COLUMNS} FROM trials WHERE session_id = ? AND kind = ? "
                f"AND status IN ({marks}) AND objective IS NOT NULL {order} LIMIT 1",
                (session_id, kind.value, *statuses),
            )
            if rows:
                return TrialRecord.from_row(rows[0])
        return None

    def trial_seconds(self, session_id: str) -> float:
        """Seconds the session's finished trials took, all kinds together."""
        rows = self._rows(
            "SELECT COALESCE(SUM(elapsed_s), 0) AS s FROM trials WHERE session_id = ?",
            (session_id,),
        )
        return float(rows[0]["s"])

    def counted_trials(self, session_id: str) -> int:
        """Search trials that used up the budget (see :data:`~.models.COUNTED_STATUSES`)."""
        rows = self._rows(
            "SELECT COUNT(*) AS n FROM trials WHERE session_id = ? AND counted = 1", (session_id,)
        )
        return int(rows[0]["n"])

    def stop_requested(self, session_id: str) -> bool:
        """Whether a stop was requested and the session has not finished yet."""
        rows = self._rows("SELECT status FROM sessions WHERE id = ?", (session_id,))
        if not rows:
            raise self._session_not_found(session_id)
        return rows[0]["status"] == SessionStatus.stopping.value

    def clips(self, trial_id: int) -> list[ClipRecord]:
        """The bounds clips of one trial, in the order they were made."""
        rows = self._rows("SELECT * FROM bounds_clips WHERE trial_id = ? ORDER BY id", (trial_id,))
        return [ClipRecord.from_row(r) for r in rows]

    def session_clips(self, session_id: str) -> list[ClipRecord]:
        """Every bounds clip of a session, by trial index."""
        rows = self._rows(
            "SELECT c.* FROM bounds_clips c JOIN trials t ON t.id = c.trial_id "
            "WHERE t.session_id = ? ORDER BY t.idx, c.id",
            (session_id,),
        )
        return [ClipRecord.from_row(r) for r in rows]

    def events(self, session_id: str | None, kind: str | None = None) -> list[EventRecord]:
        """A session's events (``None``: events of no session), oldest first, of one kind if
        given."""
        sql = "SELECT * FROM events WHERE session_id IS ?"
        params: tuple[Any, ...] = (session_id,)
        if kind is not None:
            sql, params = sql + " AND kind = ?", (*params, kind)
        return [EventRecord.from_row(r) for r in self._rows(sql + " ORDER BY id", params)]

    def llm_calls(self, session_id: str | None = None) -> list[LLMUsageRecord]:
        """Journaled LLM call attempts, oldest first: of one session, or all of them."""
        return self._log(LLMUsageRecord, "llm_calls", session_id)

    def chart_reads(self, session_id: str | None = None) -> list[ChartReadRecord]:
        """Journaled chart readings, oldest first: of one session, or all of them."""
        return self._log(ChartReadRecord, "chart_reads", session_id)

    def _log(self, model: type[Any], table: str, session_id: str | None) -> list[Any]:
        if session_id is None:
            rows = self._rows(f"SELECT * FROM {table} ORDER BY id")
        else:
            rows = self._rows(
                f"SELECT * FROM {table} WHERE session_id = ? ORDER BY id", (session_id,)
            )
        return [model.from_row(r) for r in rows]
