"""Reads of one page of a session's trials, sorted and filtered in SQL: a table of 50,000
trials is never read whole to show fifty of them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from alphaloop.journal.connection import JournalFile
from alphaloop.journal.models import TrialRecord, TrialStatus

# What a page may be sorted by, besides a knob of the config: column -> SQL.
SORTS = {
    "idx": "idx",
    "id": "id",
    "kind": "kind",
    "status": "status",
    "objective": "objective",
    "elapsed_s": "elapsed_s",
    "proposer": "proposer",
}
# The trial columns a page carries: everything but the per-day series and the prompt (the
# detail of one trial has those).
_HEAVY = ("val_returns", "final_weights", "curve", "prompt", "traceback_tail")
PAGE_COLUMNS = ", ".join(
    f"NULL AS {name}" if name in _HEAVY else name for name in TrialRecord.model_fields
)


class TrialFilter(BaseModel):
    """Which trials of a session, in which order. ``knob`` with ``low``/``high``: trials whose
    config sets that knob within the range; ``sort`` a column of :data:`SORTS` or a knob."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    statuses: tuple[TrialStatus, ...] = ()
    kinds: tuple[str, ...] = ()
    knob: str | None = Field(default=None, pattern=r"^[a-z_]{1,32}$")
    low: float | None = None
    high: float | None = None
    sort: str = Field(default="idx", pattern=r"^[a-z_]{1,32}$")
    descending: bool = False


def _where(session_id: str, f: TrialFilter) -> tuple[str, list[Any]]:
    sql, params = ["session_id = ?"], [session_id]
    if f.statuses:
        sql.append(f"status IN ({', '.join('?' for _ in f.statuses)})")
        params += [s.value for s in f.statuses]
    if f.kinds:
        sql.append(f"kind IN ({', '.join('?' for _ in f.kinds)})")
        params += list(f.kinds)
    if f.knob is not None:
        value = "CAST(json_extract(config, '$.' || ?) AS REAL)"
        if f.low is not None:
            sql.append(f"{value} >= ?")
            params += [f.knob, f.low]
        if f.high is not None:
            sql.append(f"{value} <= ?")
            params += [f.knob, f.high]
    return " AND ".join(sql), params


def _order(f: TrialFilter) -> tuple[str, list[Any]]:
    direction = "DESC" if f.descending else "ASC"
    if f.sort in SORTS:
        column, params = SORTS[f.sort], []
    else:  # a knob (the caller checked the name)
        column, params = "CAST(json_extract(config, '$.' || ?) AS REAL)", [f.sort]
    # empty values last either way, then the trial order
    return f"ORDER BY {column} IS NULL, {column} {direction}, idx ASC", params * 2


class TrialPages(JournalFile):
    """Pages of a session's trials."""

    def trial_count(self, session_id: str, f: TrialFilter) -> int:
        where, params = _where(session_id, f)
        rows = self._rows(f"SELECT COUNT(*) AS n FROM trials WHERE {where}", tuple(params))
        return int(rows[0]["n"])

    def trial_page(
        self, session_id: str, f: TrialFilter, *, offset: int, limit: int
    ) -> list[TrialRecord]:
        """The trials of ``session_id`` that pass ``f``, in its order, from ``offset``."""
        where, params = _where(session_id, f)
        order, order_params = _order(f)
        sql = f"SELECT {PAGE_COLUMNS} FROM trials WHERE {where} {order} LIMIT ? OFFSET ?"
        rows = self._rows(sql, (*params, *order_params, limit, offset))
        return [TrialRecord.from_row(r) for r in rows]

    def trial_tail(self, session_id: str, n: int = 8) -> list[TrialRecord]:
        """The session's last ``n`` trials, newest first, without series: through the index on
        ``(session_id, idx)``, so its cost does not grow with the session. Trials still
        running are among them (they are the newest)."""
        sql = f"SELECT {PAGE_COLUMNS} FROM trials WHERE session_id = ? ORDER BY idx DESC LIMIT ?"
        return [TrialRecord.from_row(r) for r in self._rows(sql, (session_id, n))]

    def trial_total(self, session_id: str) -> int:
        """How many trials the session journaled (every kind), read from the index alone."""
        rows = self._rows("SELECT COUNT(*) AS n FROM trials WHERE session_id = ?", (session_id,))
        return int(rows[0]["n"])

    def objective_columns(self, session_id: str) -> dict[str, list[Any]]:
        """The session's trials as columns (``idx``, ``kind``, ``status``, ``objective``), in
        index order: what a history chart of 50,000 trials needs, without a model per row."""
        rows = self._rows(
            "SELECT idx, kind, status, objective FROM trials WHERE session_id = ? ORDER BY idx",
            (session_id,),
        )
        return {k: [r[k] for r in rows] for k in ("idx", "kind", "status", "objective")}

    def iter_trials(
        self, session_id: str, f: TrialFilter, batch: int = 2000
    ) -> Iterator[Sequence[TrialRecord]]:
        """Every trial passing ``f``, a batch at a time (an export)."""
        offset = 0
        while True:
            rows = self.trial_page(session_id, f, offset=offset, limit=batch)
            if not rows:
                return
            yield rows
            offset += batch


__all__ = ["SORTS", "TrialFilter", "TrialPages"]
