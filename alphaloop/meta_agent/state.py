"""What the research loop runs with: the session's spec and the live objects (the runner,
the trials in flight, the proposer), rebuilt on resume.

The journal is the checkpoint of record: everything that happened (trials, verdicts, counts,
the incumbent, the stop flag) and what is in flight (a trial's row is journaled before it runs,
and its outcome before its verdict, see ``Journal.trials.hold_outcome``) is there, so the loop
keeps no state of its own beyond this context, and a resumed session rebuilds its flight from
the journal alone.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from alphaloop.journal import FollowedTrials, Journal, TrialRecord
from alphaloop.market import MarketData
from alphaloop.meta_agent.events import OnEvent, ignore
from alphaloop.meta_agent.proposers import Proposer, TrialView
from alphaloop.meta_agent.tracing import OpenSpan
from alphaloop.placement import TrialOutcome
from alphaloop.settings import Settings
from alphaloop.spec import SessionSpec
from alphaloop.trials import Rows

if TYPE_CHECKING:
    from alphaloop.placement import Pending, TrialRunner


@dataclass
class InFlight:
    """A search trial started and awaiting its verdict: running (``pending``), or finished
    with its outcome held in the journal (a resumed session's, ``pending`` already done)."""

    row: TrialRecord
    pending: Pending
    iteration: OpenSpan
    trial_span: OpenSpan
    # What it produced, once ``wait_for_oldest`` has waited for it (asked of the runner once).
    outcome: TrialOutcome | None = None


@dataclass
class SessionContext:
    """What the nodes need at run time: the session's spec, as stored with it, and the live
    objects rebuilt on resume."""

    session_id: str
    spec: SessionSpec
    journal: Journal
    data: MarketData
    proposer: Proposer
    policy_dir: Path
    on_event: OnEvent = ignore
    # The walk-forward folds every trial is scored on (oldest first; see ``trials.folds``).
    folds: list[Rows] = field(default_factory=list)
    # The settings the session runs under (the ``auto_activate`` rule reads them at finalize).
    settings: Settings | None = None
    # Where trials run (opened by ``session`` for the graph's run) and what is in flight there,
    # oldest first; search trials a killed run interrupted wait in ``reruns`` to run again.
    runner: TrialRunner | None = None
    flight: deque[InFlight] = field(default_factory=deque)
    reruns: deque[TrialRecord] = field(default_factory=deque)
    # The session's trials, read at every step of the loop: only the rows changed since the
    # step before are read again (see ``FollowedTrials``).
    history: FollowedTrials = field(init=False)
    # Finished trials' daily returns by fold (they never change once a trial has its outcome):
    # the incumbent's are compared with every new trial's.
    finished_returns: dict[int, dict[int, list[float]]] = field(init=False, default_factory=dict)
    # Each finished trial's view for the proposer, with the row it was made from.
    views: dict[int, tuple[TrialRecord, TrialView]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.history = self.journal.trials.follow(self.session_id)

    def end_flight(self, err: BaseException | None = None) -> None:
        """Ends the spans of the trials still in flight (the loop stopped under them)."""
        while self.flight:
            trial = self.flight.popleft()
            trial.trial_span.end(err)
            trial.iteration.end(err)

    @property
    def confirm_seed_range(self) -> range:
        """The fresh seeds a candidate is confirmed on: the ``confirm_seeds`` seeds after the
        baseline's, so no confirmation shares a seed with a baseline run, and every candidate
        is confirmed on the same seeds (like with like, as the search trials share
        ``seed``)."""
        first = self.spec.seed + self.spec.noise_seeds
        return range(first, first + self.spec.confirm_seeds)

    @property
    def where(self) -> str | None:
        """Where this run's trials run, as the journal says it (``local``, ``ray:HOST:PORT`` or
        ``ray://HOST:PORT``)."""
        return self.runner.where if self.runner is not None else None

    @property
    def session_policy_dir(self) -> Path:
        """Where this session's trained policies go."""
        return self.policy_dir / self.session_id
