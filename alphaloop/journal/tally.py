"""A session's budgeted trials and ranking, kept per session inside the journal: what the
session list shows of every session, read at a cost that does not grow with the sessions'
length (:meth:`~.trial_rankings.TrialRankings.tally`).

A trial is started ``running`` and finished once; a finished row's status, objective, count and
``seed_mean`` are never written again, and a session's trial indexes grow in the order they are
written. So the tally of a session's trials up to the last index before its first running trial
is final: it is kept, and a later read folds in only the trials after it. A session of 50,000
trials is summed up in SQL once, then costs a read of its last few trials. The cache is the
journal's own, as Optuna's ``_CachedStorage`` keeps what it knows beside the storage it reads:
a reader asks ``journal.trials.tally(session_id)`` and never sees it. It is keyed by the
journal file (its inode too: a journal replaced at the same path is read anew), and checked
against the trial it was kept up to.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import NamedTuple

from alphaloop.journal.ranking import Ranked, Ranking

_CACHED = 4096  # sessions kept: a kept trial and the baseline seeds each, a few kB at most
_CACHE: dict[tuple[str, int, str], Tally] = {}
_LOCK = threading.Lock()  # the server's routes run in a pool of threads


class TrialScore(NamedTuple):
    """What the ranking and a tally read of one trial, without its row."""

    id: int
    idx: int
    kind: str
    status: str
    counted: bool
    objective: float | None
    seed_mean: float | None

    @property
    def score(self) -> float | None:
        """As :attr:`TrialRecord.score <.models.TrialRecord.score>`: the mean over its seeds
        when it was confirmed, else its objective."""
        return self.seed_mean if self.seed_mean is not None else self.objective


class Tally(NamedTuple):
    """A session's search trials counted against its budget, and its ranking
    (:mod:`.ranking`). ``upto`` is the index up to which every trial had finished when it was
    read (-1: none read), ``upto_id`` the trial at that index."""

    upto: int = -1
    upto_id: int | None = None
    counted: int = 0
    ranking: Ranking[TrialScore] = Ranking()

    @property
    def best(self) -> Ranked[TrialScore] | None:
        """The session's best trial (its light row) and the score it is ranked by."""
        return self.ranking.best

    def add(self, rows: list[TrialScore]) -> Tally:
        """This tally with ``rows`` (finished trials after ``upto``) counted in; ``upto`` is
        left as it is."""
        counted = self.counted + sum(r.counted for r in rows)
        return self._replace(counted=counted, ranking=self.ranking.add(rows))


def cache_key(path: Path, session_id: str) -> tuple[str, int, str]:
    """Where a session's tally is kept: its journal's path and inode, and its id."""
    return (str(path), os.stat(path).st_ino, session_id)


def kept(key: tuple[str, int, str]) -> Tally | None:
    with _LOCK:
        return _CACHE.get(key)


def keep(key: tuple[str, int, str], tally: Tally) -> None:
    with _LOCK:
        _CACHE[key] = tally
        while len(_CACHE) > _CACHED:
            del _CACHE[next(iter(_CACHE))]


__all__ = ["Tally", "TrialScore", "cache_key", "keep", "kept"]
