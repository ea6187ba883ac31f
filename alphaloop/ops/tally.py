"""A session's budgeted trials and best, kept per session state: what the session list shows of
every session, read at a cost that does not grow with the sessions' length.

A trial is started ``running`` and finished once; a finished row's status, objective, count,
``violation`` and ``seed_mean`` are never written again, and a session's trial indexes grow in
the order they are written. So the tally of a session's trials up to the last index before its
first running trial is final: it is kept, and a later read folds in only the trials after it
(:meth:`~alphaloop.journal.trials.Trials.scores_from`). A session of 50,000 trials is summed up
in SQL once (:meth:`~alphaloop.journal.trials.Trials.settled`, the cost of one
``journal.trials.best``), then costs a read of its last few trials.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from alphaloop.journal.models import TrialKind, TrialStatus

if TYPE_CHECKING:
    from alphaloop.journal import Journal, TrialScore

_KEEP, _DISCARD = TrialStatus.keep.value, TrialStatus.discard.value
_RUNNING = TrialStatus.running.value
_SEARCH, _BASELINE = TrialKind.search.value, TrialKind.baseline.value
_CACHED = 4096  # sessions kept: a few bytes each
_CACHE: dict[tuple[str, int, str], Tally] = {}
_LOCK = threading.Lock()  # the server's routes run in a pool of threads

# The rank of a candidate best: within the limits first, then the higher score, then the
# earlier index (``journal.trials.best``'s order); with the candidate's objective.
Rank = tuple[bool, float, int]


class Tally(NamedTuple):
    """A session's search trials counted against its budget and its best trial, as
    ``journal.trials.best`` ranks it: the best kept search trial (by the mean over its seeds
    when it was confirmed), else the best scored baseline. ``upto`` is the index up to which
    every trial had finished when it was read (-1: none read)."""

    upto: int = -1
    upto_id: int | None = None  # the trial at ``upto``
    counted: int = 0
    search: tuple[Rank, float] | None = None
    baseline: tuple[Rank, float] | None = None

    @property
    def best_objective(self) -> float | None:
        """The objective of the session's best trial (None: no kept search trial nor scored
        baseline yet)."""
        best = self.search or self.baseline
        return best[1] if best else None

    def add(self, rows: Iterable[TrialScore]) -> Tally:
        """This tally with ``rows`` (finished trials after ``upto``) counted in; ``upto`` is
        left as it is."""
        counted, search, baseline = self.counted, self.search, self.baseline
        for r in rows:
            counted += r.counted
            if r.objective is None or r.violated is None:
                continue
            if r.kind == _SEARCH and r.status == _KEEP:
                score = r.seed_mean if r.seed_mean is not None else r.objective
                rank = (not r.violated, score, -r.idx)
                if search is None or rank > search[0]:
                    search = (rank, r.objective)
            elif r.kind == _BASELINE and r.status in (_KEEP, _DISCARD):
                rank = (not r.violated, r.objective, -r.idx)
                if baseline is None or rank > baseline[0]:
                    baseline = (rank, r.objective)
        return self._replace(counted=counted, search=search, baseline=baseline)


def _key(journal: Journal, session_id: str) -> tuple[str, int, str]:
    # The file's inode too: a journal replaced at the same path (a restored copy) is read anew.
    return (str(journal.path), os.stat(journal.path).st_ino, session_id)


def tally(journal: Journal, session_id: str) -> Tally:
    """The session's tally now: the kept one with the trials journaled since folded in."""
    key = _key(journal, session_id)
    with _LOCK:
        known = _CACHE.get(key)
    kept, rows = known, []
    if kept is not None:
        # Read from the last trial kept: still there, the journal is the one it was read from
        # (a copy written over the file in place is not).
        rows = journal.trials.scores_from(session_id, max(kept.upto, 0))
        if kept.upto >= 0:
            head, rows = (rows[0], rows[1:]) if rows else (None, [])
            if head is None or head.id != kept.upto_id:
                kept = None
    if kept is None:  # a first read: summed up in SQL
        summed = journal.trials.settled(session_id)
        best = [r._replace(counted=False) for r in (summed.search, summed.baseline) if r]
        kept = Tally(upto=summed.upto, upto_id=summed.upto_id, counted=summed.counted).add(best)
        rows = journal.trials.scores_from(session_id, kept.upto + 1)
    first_running = next((i for i, r in enumerate(rows) if r.status == _RUNNING), len(rows))
    if first_running:
        last = rows[first_running - 1]
        kept = kept.add(rows[:first_running])._replace(upto=last.idx, upto_id=last.id)
    if kept is not known:
        with _LOCK:
            _CACHE[key] = kept
            while len(_CACHE) > _CACHED:
                del _CACHE[next(iter(_CACHE))]
    return kept.add(r for r in rows[first_running:] if r.status != _RUNNING)


__all__ = ["Tally", "tally"]
