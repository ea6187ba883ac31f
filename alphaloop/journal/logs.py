"""What happened around sessions and trials, journaled as it happens: a repository the journal
holds as ``journal.logs``.

It holds four append-only tables: ``events`` (``PolicyRetrained``, ``Resumed``,
``ProposerFallback``...), ``bounds_clips`` (what bounds changed in a proposal), ``llm_calls``
and ``chart_reads``. They are one repository, named for what they share rather than for one of
them: each row is written once and never changed, points at a session and maybe a trial, and is
read back in the order it was written. (``journal.logs.events`` would name only the first table.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from alphaloop.journal.codec import column, columns, now
from alphaloop.journal.codec import trial_id as as_trial_id
from alphaloop.journal.connection import JournalFile
from alphaloop.journal.models import ChartReadRecord, ClipRecord, EventRecord, LLMUsageRecord
from alphaloop.journal.refs import check_refs
from alphaloop.knobs import BoundsClip


def insert_event(
    journal: JournalFile, session_id: str | None, kind: str, payload: Mapping[str, Any]
) -> int:
    """Inserts an event into the write transaction open on ``journal``; returns its id (what
    another repository calls to journal an event with its own write)."""
    if not kind:
        raise ValueError("an event needs a kind")
    row = {
        "session_id": session_id,
        "kind": kind,
        "payload": column(EventRecord, "payload", dict(payload)),
        "created_at": now(),
    }
    return int(journal.db["events"].insert(row).last_rowid)


class Logs:
    """Reads and writes of ``events``, ``bounds_clips``, ``llm_calls`` and ``chart_reads``."""

    def __init__(self, journal: JournalFile) -> None:
        self._journal = journal

    def _insert(self, table: str, row: dict[str, Any]) -> int:
        """Inserts one row into the open transaction; returns its id."""
        return int(self._journal.db[table].insert(row).last_rowid)

    def _one(self, model: type, table: str, row_id: int) -> Any:
        rows = self._journal._rows(f"SELECT * FROM {table} WHERE id = ?", (row_id,))
        return model.from_row(rows[0])

    def _all(self, model: type[Any], table: str, session_id: str | None) -> list[Any]:
        if session_id is None:
            rows = self._journal._rows(f"SELECT * FROM {table} ORDER BY id")
        else:
            rows = self._journal._rows(
                f"SELECT * FROM {table} WHERE session_id = ? ORDER BY id", (session_id,)
            )
        return [model.from_row(r) for r in rows]

    # --- events ------------------------------------------------------------------------------

    def add_event(
        self, session_id: str | None, kind: str, payload: Mapping[str, Any] | None = None
    ) -> EventRecord:
        """Journals an event (``PolicyRetrained``, ``Resumed``, ``ProposerFallback``...).

        Raises:
            NotFound: ``session_id`` is given but names no session.
        """
        with self._journal._write() as conn:
            check_refs(self._journal, conn, session_id, None)
            event_id = insert_event(self._journal, session_id, kind, payload or {})
        return self._one(EventRecord, "events", event_id)

    def events(self, session_id: str | None, kind: str | None = None) -> list[EventRecord]:
        """A session's events (``None``: events of no session), oldest first, of one kind if
        given."""
        sql = "SELECT * FROM events WHERE session_id IS ?"
        params: tuple[Any, ...] = (session_id,)
        if kind is not None:
            sql, params = sql + " AND kind = ?", (*params, kind)
        return [EventRecord.from_row(r) for r in self._journal._rows(sql + " ORDER BY id", params)]

    # --- LLM calls and chart readings --------------------------------------------------------

    def add_llm_call(
        self,
        *,
        purpose: str,
        model: str,
        latency_s: float,
        ok: bool,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        error: str | None = None,
        session_id: str | None = None,
        trial_id: int | str | None = None,
        mode: str | None = None,
        finish_reason: str | None = None,
    ) -> LLMUsageRecord:
        """Journals one attempt at one LLM call (takes ``LLMCallRecord.model_dump()`` as is).

        Raises:
            NotFound / NotFound: an id is given but names nothing.
        """
        tid = as_trial_id(trial_id)
        row = columns(
            LLMUsageRecord,
            {
                "purpose": purpose,
                "model": model,
                "latency_s": latency_s,
                "ok": ok,
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "error": error,
                "session_id": session_id,
                "trial_id": tid,
                "mode": mode,
                "finish_reason": finish_reason,
            },
        )
        row["created_at"] = now()
        with self._journal._write() as conn:
            check_refs(self._journal, conn, session_id, tid)
            call_id = self._insert("llm_calls", row)
        return self._one(LLMUsageRecord, "llm_calls", call_id)

    def llm_calls(self, session_id: str | None = None) -> list[LLMUsageRecord]:
        """Journaled LLM call attempts, oldest first: of one session, or all of them."""
        return self._all(LLMUsageRecord, "llm_calls", session_id)

    def add_chart_read(
        self,
        *,
        kind: str,
        model: str,
        bullets: Sequence[str],
        elapsed_s: float | None = None,
        raw_text: str | None = None,
        context: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        trial_id: int | None = None,
    ) -> ChartReadRecord:
        """Journals one reading of a chart: the bullets shown to a reader, the model's raw text
        and the data context it was grounded on.

        Raises:
            NotFound / NotFound: an id is given but names nothing.
        """
        row = columns(
            ChartReadRecord,
            {
                "kind": kind,
                "model": model,
                "bullets": list(bullets),
                "elapsed_s": elapsed_s,
                "raw_text": raw_text,
                "context": dict(context or {}),
                "session_id": session_id,
                "trial_id": trial_id,
            },
        )
        row["created_at"] = now()
        with self._journal._write() as conn:
            check_refs(self._journal, conn, session_id, trial_id)
            read_id = self._insert("chart_reads", row)
        return self._one(ChartReadRecord, "chart_reads", read_id)

    def chart_reads(self, session_id: str | None = None) -> list[ChartReadRecord]:
        """Journaled chart readings, oldest first: of one session, or all of them."""
        return self._all(ChartReadRecord, "chart_reads", session_id)

    # --- bounds clips ------------------------------------------------------------------------

    def add_clips(
        self, trial_id: int, clips: Iterable[BoundsClip | Mapping[str, Any]]
    ) -> list[ClipRecord]:
        """Journals the bounds clips made to one trial's proposal; returns the new rows.

        Raises:
            NotFound: no such trial.
        """
        checked = [
            BoundsClip.model_validate(c, from_attributes=not isinstance(c, Mapping)) for c in clips
        ]
        rows = [{"trial_id": trial_id, **c.model_dump()} for c in checked]
        with self._journal._write() as conn:
            check_refs(self._journal, conn, None, trial_id)
            ids = [self._insert("bounds_clips", row) for row in rows]
        return [c for c in self.clips(trial_id) if c.id in ids]

    def clips(self, trial_id: int) -> list[ClipRecord]:
        """The bounds clips of one trial, in the order they were made."""
        rows = self._journal._rows(
            "SELECT * FROM bounds_clips WHERE trial_id = ? ORDER BY id", (trial_id,)
        )
        return [ClipRecord.from_row(r) for r in rows]

    def session_clips(self, session_id: str) -> list[ClipRecord]:
        """Every bounds clip of a session, by trial index."""
        rows = self._journal._rows(
            "SELECT c.* FROM bounds_clips c JOIN trials t ON t.id = c.trial_id "
            "WHERE t.session_id = ? ORDER BY t.idx, c.id",
            (session_id,),
        )
        return [ClipRecord.from_row(r) for r in rows]

    def clips_after(self, session_id: str, after_id: int = 0) -> list[ClipRecord]:
        """The bounds clips of a session's trials with a journal id above ``after_id``, by trial
        index (the clips ``journal.trials.after`` rows were made with)."""
        rows = self._journal._rows(
            "SELECT c.* FROM bounds_clips c JOIN trials t ON t.id = c.trial_id "
            "WHERE t.session_id = ? AND t.id > ? ORDER BY t.idx, c.id",
            (session_id, after_id),
        )
        return [ClipRecord.from_row(r) for r in rows]
