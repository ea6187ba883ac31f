"""One page of a session's trials, sorted and filtered in SQL: a table of 50,000 trials is never
read whole to show fifty of them. The filter and its SQL live here; ``journal.trials`` runs the
queries (``count``, ``page``, ``batches``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from alphaloop.journal.models import TrialRecord
from alphaloop.journal.status import SHOWN_SQL, ShownStatus

# What a page may be sorted by, besides a knob of the config: column -> SQL.
SORTS = {
    "idx": "idx",
    "id": "id",
    "kind": "kind",
    "status": SHOWN_SQL,
    "objective": "objective",
    "elapsed_s": "elapsed_s",
    "proposer": "proposer",
}
# The trial columns a page carries: everything but the per-day series and the prompt (the
# detail of one trial has those).
_HEAVY = ("val_returns", "final_weights", "curve", "prompt", "traceback_tail")
# A sort by a metric names it after this prefix (``metric_max_drawdown``).
METRIC_SORT = "metric_"
# Shown statuses that are journaled as they are shown (every row of such a status shows it).
_AS_JOURNALED = ("running", "crash", "timeout", "invalid")
PAGE_COLUMNS = ", ".join(
    f"NULL AS {name}" if name in _HEAVY else name for name in TrialRecord.model_fields
)


class TrialFilter(BaseModel):
    """Which trials of a session, in which order. ``statuses`` are shown statuses
    (:mod:`.status`: ``ran``, ``raced out``...). ``knob`` with ``low``/``high``: trials whose
    config sets that knob within the range; ``sort`` a column of :data:`SORTS`, a knob or a
    metric (``metric_sharpe``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    statuses: tuple[ShownStatus, ...] = ()
    kinds: tuple[str, ...] = ()
    knob: str | None = Field(default=None, pattern=r"^[a-z_]{1,32}$")
    low: float | None = None
    high: float | None = None
    sort: str = Field(default="idx", pattern=r"^[a-z_]{1,32}$")
    descending: bool = False


def where(session_id: str, f: TrialFilter) -> tuple[str, list[Any]]:
    """The SQL condition selecting the trials of ``session_id`` that pass ``f``, and its
    parameters."""
    sql, params = ["session_id = ?"], [session_id]
    if f.statuses:
        # A status the mapping leaves as it is goes through the index on ``status``.
        raw = [s for s in f.statuses if s in _AS_JOURNALED]
        shown = [s for s in f.statuses if s not in _AS_JOURNALED]
        either = []
        if raw:
            either.append(f"status IN ({', '.join('?' for _ in raw)})")
        if shown:
            either.append(f"{SHOWN_SQL} IN ({', '.join('?' for _ in shown)})")
        sql.append("(" + " OR ".join(either) + ")")
        params += [*raw, *shown]
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


def order_by(f: TrialFilter) -> tuple[str, list[Any]]:
    """The ``ORDER BY`` clause of ``f``'s order, and its parameters."""
    direction = "DESC" if f.descending else "ASC"
    if f.sort in SORTS:
        column, params = SORTS[f.sort], []
    elif f.sort.startswith(METRIC_SORT):  # a metric: ``metric_sharpe``
        name = f.sort.removeprefix(METRIC_SORT)
        column, params = "CAST(json_extract(metrics, '$.' || ?) AS REAL)", [name]
    else:  # a knob (the caller checked the name)
        column, params = "CAST(json_extract(config, '$.' || ?) AS REAL)", [f.sort]
    # empty values last either way, then the trial order
    return f"ORDER BY {column} IS NULL, {column} {direction}, idx ASC", params * 2


__all__ = ["METRIC_SORT", "PAGE_COLUMNS", "SORTS", "TrialFilter", "order_by", "where"]
