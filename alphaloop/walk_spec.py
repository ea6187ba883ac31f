"""What a walk is started with (:class:`WalkSpec`): a session to replay, a cadence, a start, and
the rule that chooses what each epoch trades.

A schema below the journal, as :mod:`alphaloop.spec` is: the journal stores a walk's spec
typed, and what runs a walk (:mod:`alphaloop.walk`) reads it back from there."""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from alphaloop.spec import MAX_WORKERS, MIN_EVAL_ROWS, SessionSpec


class Cadence(StrEnum):
    """How often the loop re-researches: an epoch starts on the first trading day of each
    year, quarter or month."""

    yearly = "yearly"
    quarterly = "quarterly"
    monthly = "monthly"


class PickRule(StrEnum):
    """What an epoch trades over the period after it.

    ``strict``: the session's own pick, the best kept config that beat the default on the folds
    at the family-wise level of a lone session (else the default). ``kept``: the best kept
    config, tested against the incumbent of its time but not corrected for the configs tried.
    ``best``: the best-estimated config, the highest fold score among the search trials scored
    on every fold, when it is above the default's (else the default). Inside a walk a wrong
    pick is caught by the out-of-sample record, so the rule is a trade of power against
    turnover, measured in ``benchmarks/bench_walk.py``; every walk reports all three records
    and decides by its own rule's. ``strict`` is the rule a lone session publishes by: its
    record is what re-researching and trading each session's pick would have earned.
    """

    strict = "strict"
    kept = "kept"
    best = "best"


# The rule a walk decides by unless asked otherwise: on graded markets it said GO in more walks
# than the others (21 of 32 walks with an edge, against 20 for kept and 17 for strict), and no
# rule said GO on a market without an edge (``benchmarks/bench_walk.py``, docs/benchmarks.md).
DEFAULT_RULE = PickRule.best


class WalkSpec(BaseModel):
    """Everything a walk is started with (stored with it, so resume needs only its id).

    Attributes:
        session: the research session every epoch runs, on the data cut at the epoch (its
            windows are the walk's to set: no ``train_end``, ``val_end`` or ``test_end``).
        cadence: how often an epoch starts.
        start: the first epoch on or after this day (None: the first day the session's folds
            fit before).
        end: the last day traded (None: the data's last day).
        rule: what each epoch trades (see :class:`PickRule`).
        workers: epochs run side by side, each in a process of its own; their trials run there
            (or, with ``session.ray_address``, on the cluster). With ``carry`` epochs run in
            turn, and ``workers`` trials of each at once.
        fold_days: the days of each fold, and of each epoch's VALIDATION (None: the length
            of a lone session's VALIDATION on the same data, three years on the S&P 500 set).
        carry: each epoch's search first tries up to this many configs the epoch before kept
            (best first; when it kept none, those it was given): cheaper epochs, since configs
            chosen on earlier data leak nothing. 0: epochs independent of each other.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    session: SessionSpec
    cadence: Cadence = Cadence.yearly
    start: dt.date | None = None
    end: dt.date | None = None
    rule: PickRule = DEFAULT_RULE
    workers: int = Field(default=1, ge=1, le=MAX_WORKERS)
    fold_days: int | None = Field(default=None, ge=MIN_EVAL_ROWS, le=10_000)
    carry: int = Field(default=0, ge=0, le=10)

    @model_validator(mode="after")
    def _windows_are_the_walks(self) -> Self:
        s = self.session
        set_ = [n for n in ("train_end", "val_end", "test_end") if getattr(s, n) is not None]
        if set_:
            raise ValueError(
                f"a walk sets each epoch's windows itself; leave {', '.join(set_)} unset"
            )
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise ValueError(f"the walk's end {self.end} must be after its start {self.start}")
        return self
