"""The one ranking of a session's best trial, and the score it is ranked by.

The best is the best kept search trial: the highest score (the mean over its seeds when it was
confirmed, else its objective), ties to the earlier index. A kept trial beat the incumbent of
its time within the session's limits (a trial that breaks one is discarded), so no limit
enters the ranking. While no search trial is kept, the best is the default config, as its
baseline seeds measured it: its first baseline run, scored by the mean over every baseline
seed. That mean is the bar the keep rule asks a search trial to clear, and the default's first
baseline run is what finalize picks when nothing beat it; the luckiest seed would claim for the
default what it scored once, which is the selection a mean avoids.

The research loop's incumbent, ``journal.trials.best``, the running tally the session list
reads (:mod:`.tally`), the page's best and the progress chart's step line all rank through
:class:`Ranking`; it folds rows in one at a time, so a tally keeps only what may still be the
best (one kept trial and the baseline seeds) and adds the trials after it.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Generic, NamedTuple, Protocol, TypeVar

from alphaloop.journal.models import TrialKind, TrialStatus


class Rankable(Protocol):
    """What the ranking reads of a trial (a :class:`~.models.TrialRecord`, or a tally's light
    :class:`~.trial_rankings.TrialScore`)."""

    @property
    def id(self) -> int: ...

    @property
    def idx(self) -> int: ...

    @property
    def kind(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def objective(self) -> float | None: ...

    @property
    def score(self) -> float | None: ...


T = TypeVar("T", bound=Rankable)


class Ranked(NamedTuple, Generic[T]):
    """A session's best trial and the score it is ranked by."""

    trial: T
    score: float


def _rank(t: Rankable) -> tuple[float, int]:
    """A kept trial's place: the higher score, then the earlier index."""
    return (t.score if t.score is not None else float("-inf"), -t.idx)


def _kept(t: Rankable) -> bool:
    return t.kind == TrialKind.search and t.status == TrialStatus.keep and t.score is not None


def _baseline(t: Rankable) -> bool:
    return t.kind == TrialKind.baseline and t.objective is not None


class Ranking(NamedTuple, Generic[T]):
    """What decides a session's best: its best kept search trial so far, and its scored
    baseline runs (in index order)."""

    kept: T | None = None
    baselines: tuple[T, ...] = ()

    def add(self, rows: Iterable[T]) -> Ranking[T]:
        """This ranking with ``rows`` (finished trials, in any order) folded in."""
        kept, baselines = self.kept, list(self.baselines)
        for t in rows:
            if _kept(t) and (kept is None or _rank(t) > _rank(kept)):
                kept = t
            elif _baseline(t):
                baselines.append(t)
        baselines.sort(key=lambda t: t.idx)
        return Ranking(kept, tuple(baselines))

    @property
    def baseline_mean(self) -> float | None:
        """The default config's score: the mean over its baseline seeds."""
        scores = [t.objective for t in self.baselines if t.objective is not None]
        return statistics.fmean(scores) if scores else None

    @property
    def best(self) -> Ranked[T] | None:
        """The best and its score (see the module docstring); None before any could rank."""
        if self.kept is not None and self.kept.score is not None:
            return Ranked(self.kept, self.kept.score)
        mean = self.baseline_mean
        return Ranked(self.baselines[0], mean) if mean is not None else None

    def score_of(self, trial: Rankable) -> float | None:
        """What ``trial`` is ranked by: a baseline run stands for the default config (the mean
        over its seeds), any other trial for itself."""
        return self.baseline_mean if trial.kind == TrialKind.baseline else trial.score


def best_trial(rows: Iterable[T]) -> Ranked[T] | None:
    """The best among finished ``rows`` and its score (see the module docstring)."""
    return Ranking().add(rows).best


def best_kept(rows: Iterable[T]) -> T | None:
    """The best kept search trial among ``rows`` (the ranking without its fallback)."""
    return Ranking().add(rows).kept


def best_estimate(candidates: Iterable[T], baselines: Iterable[Rankable]) -> T | None:
    """The best-estimated config, no test (a session's lenient pick, a walk's ``best`` rule):
    the highest score among ``candidates`` (the search trials scored on every fold, within the
    limits), ties to the earlier index, when it is above the default's (the mean over its
    ``baselines``' seeds); None: the default."""
    bar = Ranking().add(baselines).baseline_mean
    best = max((t for t in candidates if t.score is not None), key=_rank, default=None)
    if best is None or bar is None or best.score is None or best.score <= bar:
        return None
    return best


def kept_best_first(rows: Iterable[T]) -> list[T]:
    """The kept search trials among ``rows``, best first, as the ranking orders them."""
    return sorted((t for t in rows if _kept(t)), key=_rank, reverse=True)


__all__ = [
    "Rankable",
    "Ranked",
    "Ranking",
    "best_estimate",
    "best_kept",
    "best_trial",
    "kept_best_first",
]
