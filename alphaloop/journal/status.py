"""One status vocabulary for a trial, the same on the page, in the CSV, the command line and the
API: what a person reads, derived from the journaled status in this one place.

The journal stores a trial's verdict (``keep``, ``discard``, ``crash``...). Two rows read
differently from what they store:

- a baseline or confirmation seed, or the TEST run, earns no verdict of its own (it is
  journaled ``keep`` once it ran): it shows ``ran``;
- a search trial raced out after its first folds (journaled ``discard``) ran fewer folds than
  the session has: it shows ``raced out``, and its objective, a mean over those folds only, is
  not comparable with the others' (:func:`comparable`).

:func:`shown_status` maps a row already read; :data:`SHOWN_SQL` is the same mapping as an SQL
expression over the ``trials`` table (a filter or a sort by shown status), both built from the
constants below.
"""

from __future__ import annotations

from typing import Literal, get_args

ShownStatus = Literal[
    "running", "keep", "discard", "raced out", "ran", "crash", "timeout", "invalid"
]
SHOWN_STATUSES: tuple[str, ...] = get_args(ShownStatus)
RAN = "ran"
RACED_OUT = "raced out"
# Kinds whose kept row is a run, not a verdict.
RAN_KINDS = ("baseline", "confirm", "test")

# Whether a trial ran fewer of its folds than the session has (NULL for a trial without folds).
PARTLY_SCORED_SQL = (
    "(SELECT COUNT(*) < MAX(f.n_folds) FROM trial_folds f WHERE f.trial_id = trials.id)"
)
SHOWN_SQL = (
    f"(CASE WHEN kind IN ({', '.join(repr(k) for k in RAN_KINDS)}) AND status = 'keep' "
    f"THEN '{RAN}' WHEN status = 'discard' AND COALESCE({PARTLY_SCORED_SQL}, 0) "
    f"THEN '{RACED_OUT}' ELSE status END)"
)


def shown_status(
    kind: str, status: str, folds_run: int | None = None, n_folds: int | None = None
) -> str:
    """The status a person reads for a trial of ``kind`` journaled as ``status`` that ran
    ``folds_run`` of ``n_folds`` folds (None: no folds journaled)."""
    kind, status = str(kind), str(status)
    if kind in RAN_KINDS and status == "keep":
        return RAN
    if status == "discard" and partly_scored(folds_run, n_folds):
        return RACED_OUT
    return status


def partly_scored(folds_run: int | None, n_folds: int | None) -> bool:
    """Whether a trial ran fewer folds than the session has."""
    return folds_run is not None and n_folds is not None and folds_run < n_folds


def comparable(shown: str, kind: str, objective: float | None) -> float | None:
    """The objective that ranks against the session's others: none for a raced-out trial (one
    fold's score) or the TEST run (another window)."""
    return None if shown == RACED_OUT or str(kind) == "test" else objective


__all__ = [
    "PARTLY_SCORED_SQL",
    "RACED_OUT",
    "RAN",
    "RAN_KINDS",
    "SHOWN_SQL",
    "SHOWN_STATUSES",
    "ShownStatus",
    "comparable",
    "partly_scored",
    "shown_status",
]
