"""The journal: :class:`Journal`, the one class the loop, the CLI and the tools use.

A :class:`Journal` is an open journal file (:class:`~.connection.JournalFile`: its lifecycle and
its transactions) holding one repository per group of tables, each named for what it holds and
each writing through the file's connection, lock and transactions:

==========================  ===================================================================
``journal.sessions``        research sessions (:mod:`.sessions`)
``journal.trials``          their trials, with pages and rankings (:mod:`.trials`)
``journal.folds``           the folds each trial was scored on (:mod:`.folds`)
``journal.logs``            events, bounds clips, LLM calls, chart readings (:mod:`.logs`)
``journal.notes``           versioned notes on sessions and trials (:mod:`.notes`)
``journal.policies``        the policy library and replays (:mod:`.policies`)
``journal.books``           the portfolio manager's books, decisions and fills (:mod:`.books`)
``journal.preferences``     verdicts, preference pairs and DPO runs (:mod:`.preferences`)
``journal.schedule``        runs of the scheduler's jobs (:mod:`.schedule`)
``journal.jobs``            work handed to worker processes (:mod:`.jobs`)
``journal.walks``           walks, their epochs and returns after them (:mod:`.walks`)
==========================  ===================================================================

Every method that writes is one transaction, so a process killed at any instant leaves either
all of a write or none of it. Values are validated against the read models before they are
written: a row that could not be read back is never stored.
"""

from __future__ import annotations

from functools import cached_property

from alphaloop.journal.books import Books
from alphaloop.journal.connection import JournalFile
from alphaloop.journal.folds import Folds
from alphaloop.journal.jobs import Jobs
from alphaloop.journal.logs import Logs
from alphaloop.journal.notes import Notes
from alphaloop.journal.policies import Policies
from alphaloop.journal.preferences import Preferences
from alphaloop.journal.schedule import Schedule
from alphaloop.journal.sessions import Sessions
from alphaloop.journal.trials import Trials
from alphaloop.journal.walks import Walks


class Journal(JournalFile):
    """The journal: one SQLite file, read with frozen models, written in transactions, through
    its repositories (arguments as :class:`~.connection.JournalFile`).

    Example:
        >>> with Journal(settings.journal_path) as journal:  # doctest: +SKIP
        ...     sid = journal.sessions.create(goal="max Sharpe", ...)
        ...     row = journal.trials.start(sid, kind="search", ...)
        ...     journal.trials.finish(row.id, status="keep", objective=1.2, ...)
    """

    @cached_property
    def sessions(self) -> Sessions:
        """Research sessions (:mod:`.sessions`)."""
        return Sessions(self)

    @cached_property
    def trials(self) -> Trials:
        """The trials of sessions (:mod:`.trials`)."""
        return Trials(self)

    @cached_property
    def folds(self) -> Folds:
        """The folds trials were scored on (:mod:`.folds`)."""
        return Folds(self)

    @cached_property
    def logs(self) -> Logs:
        """Events, bounds clips, LLM calls and chart readings (:mod:`.logs`)."""
        return Logs(self)

    @cached_property
    def notes(self) -> Notes:
        """Notes on sessions and trials (:mod:`.notes`)."""
        return Notes(self)

    @cached_property
    def policies(self) -> Policies:
        """The policy library and replays (:mod:`.policies`)."""
        return Policies(self)

    @cached_property
    def books(self) -> Books:
        """The portfolio manager's books, decisions and fills (:mod:`.books`)."""
        return Books(self)

    @cached_property
    def preferences(self) -> Preferences:
        """Verdicts on decisions, preference pairs and DPO runs (:mod:`.preferences`)."""
        return Preferences(self)

    @cached_property
    def schedule(self) -> Schedule:
        """Runs of the scheduler's jobs (:mod:`.schedule`)."""
        return Schedule(self)

    @cached_property
    def jobs(self) -> Jobs:
        """Long work handed to worker processes (:mod:`.jobs`)."""
        return Jobs(self)

    @cached_property
    def walks(self) -> Walks:
        """Walks: the loop replayed over history (:mod:`.walks`)."""
        return Walks(self)
