"""What running one trial produced: the one type the trial workers share with the loop.

Its own module, so a worker process (:mod:`.local`) imports the evaluator and this, not the
loop's state with the journal, the proposers and the settings it needs no part of.
"""

from __future__ import annotations

import traceback
from enum import StrEnum
from typing import Self

from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import AlphaloopError, TrialTimeout
from alphaloop.metrics import Metrics
from alphaloop.trials import TrialResult

TRACEBACK_TAIL = 2000  # characters of a crashed trial's traceback kept in its row


class OutcomeStatus(StrEnum):
    """How running a trial ended: it produced a result, or it crashed or ran out of time."""

    ok = "ok"
    crash = "crash"
    timeout = "timeout"


class TrialOutcome(BaseModel):
    """What running one trial produced, awaiting its verdict (never raised: a failing trial
    is an outcome, journaled as a crash, and the loop goes on)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: OutcomeStatus
    result: TrialResult | None = None
    error: str | None = None
    traceback_tail: str | None = None
    # Why a search trial ran only its first fold (see ``folding``): it is discarded for it.
    raced_out: str | None = None

    @classmethod
    def failed(cls, err: BaseException) -> Self:
        """The outcome of a trial that raised ``err`` (call it inside the ``except`` block)."""
        if isinstance(err, TrialTimeout):
            return cls(status=OutcomeStatus.timeout, error=str(err))
        return cls(
            status=OutcomeStatus.crash,
            error=str(err) if isinstance(err, AlphaloopError) else repr(err),
            traceback_tail=traceback.format_exc()[-TRACEBACK_TAIL:],
        )

    @property
    def metrics(self) -> Metrics | None:
        return self.result.metrics if self.result is not None else None
