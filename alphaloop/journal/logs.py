"""Writes that annotate sessions and trials: events, LLM calls, chart readings, bounds clips
and live training curves. Part of :class:`~alphaloop.journal.Journal`."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from alphaloop.exceptions import TrialNotFound
from alphaloop.journal.codec import column, columns, now
from alphaloop.journal.codec import trial_id as as_trial_id
from alphaloop.journal.models import (
    ChartReadRecord,
    ClipRecord,
    EventRecord,
    LLMUsageRecord,
    TrialRecord,
)
from alphaloop.journal.store import JournalReader
from alphaloop.knobs import BoundsClip

# Training curves are journaled as at most this many points, evenly spread over the run: enough
# for any chart, small enough to rewrite several times a second while PPO trains.
MAX_CURVE_POINTS = 200


class LogWriter(JournalReader):
    """Annotation writes; :class:`~alphaloop.journal.Journal` adds sessions and trials."""

    def _check_refs(
        self, conn: sqlite3.Connection, session_id: str | None, trial_id: int | None
    ) -> None:
        """Clear errors for what the foreign keys would refuse."""
        if (
            session_id is not None
            and conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone()
            is None
        ):
            raise self._session_not_found(session_id)
        if (
            trial_id is not None
            and conn.execute("SELECT 1 FROM trials WHERE id = ?", (trial_id,)).fetchone() is None
        ):
            raise TrialNotFound(f"no trial with id {trial_id!r} in {self.path}")

    def _insert(self, table: str, row: dict[str, Any]) -> int:
        """Inserts one row into the open transaction; returns its id."""
        return int(self.db[table].insert(row).last_rowid)

    def _one(self, model: type, table: str, row_id: int) -> Any:
        return model.from_row(self._rows(f"SELECT * FROM {table} WHERE id = ?", (row_id,))[0])

    # --- events ------------------------------------------------------------------------------

    def add_event(
        self, session_id: str | None, kind: str, payload: Mapping[str, Any] | None = None
    ) -> EventRecord:
        """Journals an event (``PolicyRetrained``, ``Resumed``, ``ProposerFallback``...).

        Raises:
            SessionNotFound: ``session_id`` is given but names no session.
        """
        with self._write() as conn:
            self._check_refs(conn, session_id, None)
            event_id = self._insert_event(session_id, kind, payload or {})
        return self._one(EventRecord, "events", event_id)

    def _insert_event(self, session_id: str | None, kind: str, payload: Mapping[str, Any]) -> int:
        if not kind:
            raise ValueError("an event needs a kind")
        return self._insert(
            "events",
            {
                "session_id": session_id,
                "kind": kind,
                "payload": column(EventRecord, "payload", dict(payload)),
                "created_at": now(),
            },
        )

    # --- LLM calls and chart readings --------------------------------------------------------

    def log_llm_call(
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
            SessionNotFound / TrialNotFound: an id is given but names nothing.
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
        with self._write() as conn:
            self._check_refs(conn, session_id, tid)
            call_id = self._insert("llm_calls", row)
        return self._one(LLMUsageRecord, "llm_calls", call_id)

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
            SessionNotFound / TrialNotFound: an id is given but names nothing.
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
        with self._write() as conn:
            self._check_refs(conn, session_id, trial_id)
            read_id = self._insert("chart_reads", row)
        return self._one(ChartReadRecord, "chart_reads", read_id)

    # --- per-trial annotations ---------------------------------------------------------------

    def add_clips(
        self, trial_id: int, clips: Iterable[BoundsClip | Mapping[str, Any]]
    ) -> list[ClipRecord]:
        """Journals the bounds clips made to one trial's proposal; returns the new rows.

        Raises:
            TrialNotFound: no such trial.
        """
        checked = [
            BoundsClip.model_validate(c, from_attributes=not isinstance(c, Mapping)) for c in clips
        ]
        rows = [{"trial_id": trial_id, **c.model_dump()} for c in checked]
        with self._write() as conn:
            self._check_refs(conn, None, trial_id)
            ids = [self._insert("bounds_clips", row) for row in rows]
        return [c for c in self.clips(trial_id) if c.id in ids]

    def set_curve(
        self, trial_id: int, points: Sequence[Any], *, max_points: int | None = None
    ) -> int:
        """Replaces a trial's live training curve; returns the length stored.

        With ``max_points``, a longer curve is stored as :func:`downsample_curve` of it: an even
        sample over the whole run that keeps the first and the newest point, so a reader sees
        the run's whole shape at a bounded size (:data:`MAX_CURVE_POINTS` is the usual cap).

        Raises:
            TrialNotFound: no such trial.
        """
        _check_max_points(max_points)
        kept = downsample_curve(points, max_points) if max_points else list(points)
        return self._update_curve(trial_id, lambda _: kept)

    def _update_curve(self, trial_id: int, change: Callable[[list[Any]], list[Any]]) -> int:
        with self._write() as conn:
            row = conn.execute("SELECT curve FROM trials WHERE id = ?", (trial_id,)).fetchone()
            if row is None:
                raise TrialNotFound(f"no trial with id {trial_id!r} in {self.path}")
            curve = change(json.loads(row[0]) if row[0] else [])
            conn.execute(
                "UPDATE trials SET curve = ? WHERE id = ?",
                (column(TrialRecord, "curve", curve), trial_id),
            )
        return len(curve)


def _check_max_points(max_points: int | None) -> None:
    if max_points is not None and max_points < 2:
        raise ValueError(
            f"max_points must be at least 2 (the first and the newest), got {max_points}"
        )


def downsample_curve(points: Sequence[Any], max_points: int) -> list[Any]:
    """At most ``max_points`` of ``points``, evenly spaced over the whole run: the first and the
    last are always kept, the ones between are the nearest to an even grid.

    Raises:
        ValueError: ``max_points`` below 2.
    """
    _check_max_points(max_points)
    n = len(points)
    if n <= max_points:
        return list(points)
    # Even spacing with step (n - 1) / (max_points - 1) > 1, so rounding never repeats an index.
    step = (n - 1) / (max_points - 1)
    return [points[round(i * step)] for i in range(max_points)]
