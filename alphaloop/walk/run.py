"""Creating, running and resuming a walk: the research loop replayed over history.

A walk is a list of epochs (:mod:`.plan`). Each epoch is one normal research session, created
with the data cut at the epoch and linked to the walk in the transaction that journals it, run
by the one research loop (:func:`alphaloop.meta_agent.session.run_session`), and then traded
over the period after it (:mod:`.trade`). The journal is the walk's only checkpoint, as it is
a session's: a walk killed at any instant resumes with every epoch's session found by its
link, a finished one read back, an interrupted one resumed where its own journal says (no trial
run twice), and a missing one created; so no epoch ever runs twice.

Epochs do not depend on each other (a session sees only the data before its epoch), so with
``workers`` above one they run side by side, each in a process of its own. Such a process
ends when the walk's does: a killed walk leaves no epoch running behind it.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

from alphaloop.exceptions import AlphaloopError, InvalidRequest
from alphaloop.journal import (
    EpochResult,
    Journal,
    TrialKind,
    WalkReport,
    WalkStatus,
    kept_best_first,
    pid_alive,
)
from alphaloop.market import market_of
from alphaloop.meta_agent.session import SessionSpec, create_session, run_session
from alphaloop.settings import Settings
from alphaloop.spec import labelled_goal
from alphaloop.validation import resolved_gates
from alphaloop.walk.events import EpochBegun, EpochTraded, OnWalkEvent, ignore
from alphaloop.walk.plan import Epoch, plan
from alphaloop.walk.record import walk_report
from alphaloop.walk.trade import epoch_result, pairs_checked
from alphaloop.walk_spec import WalkSpec

logger = logging.getLogger(__name__)

_WATCH_S = 1.0  # how often an epoch's process checks that its walk is alive
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def create_walk(spec: WalkSpec, settings: Settings, walk_id: str | None = None) -> str:
    """Checks the walk's epochs fit its data and journals it; returns its id (drawn here, or
    ``walk_id``; nothing runs).

    The gates are resolved now (the settings' under the request's), so a resumed walk is
    judged by the gates it was started with.

    Raises:
        InvalidRequest: data that cannot be loaded, a cadence or start the data cannot hold, or
            data too short for two epochs (the message names what fits).
        Conflict: ``walk_id`` names a walk already journaled.
    """
    session = spec.session
    try:
        gates = resolved_gates(settings.gates, session.gates, session.objective.max_drawdown)
    except ValueError as err:
        raise InvalidRequest(f"ALPHALOOP_GATES: {err}") from None
    spec = spec.model_copy(update={"session": session.model_copy(update={"gates": gates})})
    plan(spec, market_of(session))
    with Journal(settings.journal_path) as journal:
        return journal.walks.create(goal=session.goal, spec=spec, walk_id=walk_id)


def epoch_spec(
    spec: WalkSpec,
    epoch: Epoch,
    walk_id: str,
    side_by_side: bool,
    start_configs: list[dict[str, float]] | None = None,
) -> SessionSpec:
    """The session epoch ``epoch`` runs: the walk's, on the data cut at the epoch, publishing
    nothing to the policy library (its pick trades history, never a live book), trying
    ``start_configs`` first."""
    s = spec.session
    label = f" (walk {walk_id}, epoch {epoch.index}: {epoch.first_day}..{epoch.last_day})"
    return s.model_copy(
        update={
            "goal": labelled_goal(s.goal, after=label),
            "train_end": epoch.train_end,
            "val_end": epoch.val_end,
            "test_end": epoch.test_end,
            "publish": False,
            "workers": 1 if side_by_side else s.workers,
            "start_configs": start_configs or [],
        }
    )


def carried(journal: Journal, walk_id: str, epoch: int, n: int) -> list[dict[str, float]]:
    """What epoch ``epoch`` starts from: up to ``n`` configs the epoch before kept, best first,
    or when it kept none the configs it started from itself."""
    if n == 0 or epoch == 0:
        return []
    before = {e.epoch: e for e in journal.walks.epochs(walk_id)}.get(epoch - 1)
    if before is None:
        return []
    rows = journal.trials.of_session(before.session_id, TrialKind.search, series=False)
    kept = kept_best_first(rows)
    if kept:
        return [dict(t.config) for t in kept[:n]]
    spec = journal.sessions.get(before.session_id).spec
    return list(spec.start_configs)[:n] if isinstance(spec, SessionSpec) else []


def run_epoch(
    walk_id: str,
    spec: WalkSpec,
    epoch: Epoch,
    n_epochs: int,
    settings: Settings,
    on_event: OnWalkEvent = ignore,
    side_by_side: bool = False,
) -> EpochResult:
    """Runs (or resumes, or reads back) one epoch: its session, then its trade."""
    with Journal(settings.journal_path) as journal:
        linked = {e.epoch: e for e in journal.walks.epochs(walk_id)}
        starts = carried(journal, walk_id, epoch.index, spec.carry)
    session_spec = epoch_spec(spec, epoch, walk_id, side_by_side, starts)
    found = linked.get(epoch.index)
    if found is not None and found.result is not None:
        return found.result
    if found is None:
        link = (walk_id, epoch.index, epoch.first_day, epoch.last_day)
        session_id = create_session(session_spec, settings, walk=link)
    else:
        session_id = found.session_id
    on_event(
        EpochBegun(
            epoch=epoch.index,
            n_epochs=n_epochs,
            session_id=session_id,
            first_day=epoch.first_day,
            last_day=epoch.last_day,
        )
    )
    run_session(session_id, settings, on_event)
    data = market_of(session_spec)
    with Journal(settings.journal_path) as journal:
        session = journal.sessions.get(session_id)
        result = epoch_result(journal, session, session_spec, epoch, walk_id, data)
        journal.walks.set_result(walk_id, epoch.index, result)
    return result


def _die_with(walk_pid: int) -> None:
    """An epoch process ends when its walk's process does: a killed walk must not leave its
    epochs running, which a resume would find owned by a live process. On Linux the kernel
    kills it (``PR_SET_PDEATHSIG``, immediate, whatever the process is doing); elsewhere, or
    as well, a thread watches the walk's process."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            logger.debug("prctl(PR_SET_PDEATHSIG) unavailable; the watch thread stays")
        if not pid_alive(walk_pid):  # it died before prctl took effect
            os._exit(1)

    def watch() -> None:
        while pid_alive(walk_pid):
            time.sleep(_WATCH_S)
        os._exit(1)

    threading.Thread(target=watch, name="alphaloop-walk-watch", daemon=True).start()


def _epoch_in_process(
    walk_id: str, spec: WalkSpec, epoch: Epoch, n_epochs: int, settings: Settings
) -> int:
    run_epoch(walk_id, spec, epoch, n_epochs, settings, side_by_side=True)
    return epoch.index


def _side_by_side(
    walk_id: str,
    spec: WalkSpec,
    pending: Sequence[Epoch],
    n_epochs: int,
    settings: Settings,
    on_event: OnWalkEvent,
) -> None:
    """Runs ``pending`` epochs in ``spec.workers`` processes; the first failure stops the
    rest (each resumable)."""
    context = multiprocessing.get_context("spawn")
    workers = min(spec.workers, len(pending))
    with ProcessPoolExecutor(
        workers, context, initializer=_die_with, initargs=(os.getpid(),)
    ) as pool:
        running = {
            pool.submit(_epoch_in_process, walk_id, spec, e, n_epochs, settings): e for e in pending
        }
        left = set(running)
        while left:
            done, left = wait(left, return_when=FIRST_COMPLETED)
            for future in done:
                if future.exception() is not None:
                    for other in left:
                        other.cancel()
                    raise future.exception()  # type: ignore[misc]
                _told(walk_id, running[future].index, n_epochs, settings, on_event)


def _told(
    walk_id: str, index: int, n_epochs: int, settings: Settings, on_event: OnWalkEvent
) -> None:
    with Journal(settings.journal_path) as journal:
        found = {e.epoch: e for e in journal.walks.epochs(walk_id)}[index]
    if found.result is not None:
        on_event(EpochTraded(n_epochs=n_epochs, result=found.result))


def run_walk(walk_id: str, settings: Settings, on_event: OnWalkEvent = ignore) -> WalkReport:
    """Runs (or resumes) a walk to its report; a finished walk's report is read back.

    Raises:
        NotFound: no such walk.
        Conflict: a live process runs it.
        AlphaloopError: an epoch stopped with an error (the walk is marked failed and can be
            resumed).
    """
    started = time.monotonic()
    with Journal(settings.journal_path) as journal:
        record = journal.walks.get(walk_id)
        if record.status == WalkStatus.finished and record.report is not None:
            return record.report
        journal.walks.claim(walk_id)
    spec = record.spec
    epochs = plan(spec, market_of(spec.session))
    n = len(epochs)
    try:
        with Journal(settings.journal_path) as journal:
            done = {e.epoch for e in journal.walks.epochs(walk_id) if e.result is not None}
        pending = [e for e in epochs if e.index not in done]
        if spec.workers > 1 and len(pending) > 1 and spec.carry == 0:
            _side_by_side(walk_id, spec, pending, n, settings, on_event)
        else:
            for epoch in pending:
                result = run_epoch(walk_id, spec, epoch, n, settings, on_event)
                on_event(EpochTraded(n_epochs=n, result=result))
        with Journal(settings.journal_path) as journal:
            results = [e.result for e in journal.walks.epochs(walk_id) if e.result is not None]
            tally = pairs_checked(journal, walk_id, spec.session, epochs)
            report = walk_report(
                results,
                spec.rule.value,
                spec.cadence.value,
                spec.session.gates,
                elapsed_s=time.monotonic() - started,
            ).model_copy(update={"pairs": tally})
            journal.walks.update(walk_id, status=WalkStatus.finished, report=report)
    except AlphaloopError as err:
        with Journal(settings.journal_path) as journal:
            journal.walks.update(walk_id, status=WalkStatus.failed, error=str(err)[:500])
        raise
    return report
