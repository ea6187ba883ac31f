"""The journal's write API: :class:`Journal`, the one class the loop, the CLI and the tools use.

Every method that writes is one transaction, so a process killed at any instant leaves either
all of a write or none of it. Values are validated against the read models before they are
written: a row that could not be read back is never stored.
"""

from __future__ import annotations

import logging
import os
import secrets
import sqlite3
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from alphaloop.exceptions import TrialNotFound, TrialNotRunning
from alphaloop.journal.book import BookStore
from alphaloop.journal.codec import columns, now, seconds_between
from alphaloop.journal.flywheel import FlywheelStore
from alphaloop.journal.folds import Folds
from alphaloop.journal.jobs import JobStore
from alphaloop.journal.library import LibraryStore
from alphaloop.journal.logs import LogWriter
from alphaloop.journal.models import (
    COUNTED_STATUSES,
    INTERRUPTED,
    EventKind,
    SessionRecord,
    SessionStatus,
    TrialKind,
    TrialRecord,
    TrialStatus,
    is_interrupted,
)
from alphaloop.journal.notes import NoteStore
from alphaloop.journal.pages import TrialPages
from alphaloop.journal.schedule import ScheduleStore
from alphaloop.journal.store import pid_alive

logger = logging.getLogger(__name__)

STOP_REQUESTED = EventKind.stop_requested
REAPED_REASON = "its process ended before the trial finished"
# Fields a caller may change with update_session: all but the identity and the timestamps the
# journal keeps itself.
SESSION_UPDATABLE = frozenset(SessionRecord.model_fields) - {"id", "created_at", "updated_at"}


def new_session_id() -> str:
    """A short, readable, sortable id: ``s-<yyyymmdd-hhmmss>-<4 hex>`` (UTC)."""
    return f"s-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


class Journal(
    LogWriter,
    LibraryStore,
    BookStore,
    FlywheelStore,
    ScheduleStore,
    JobStore,
    TrialPages,
    NoteStore,
):
    """The journal: one SQLite file, read with frozen models, written in transactions.

    Example:
        >>> with Journal(settings.journal_path) as journal:  # doctest: +SKIP
        ...     sid = journal.create_session(goal="max Sharpe", ...)
        ...     row = journal.start_trial(sid, kind="search", ...)
        ...     journal.finish_trial(row.id, status="keep", objective=1.2, ...)
    """

    @cached_property
    def folds(self) -> Folds:
        """The folds trials were scored on (:mod:`.folds`)."""
        return Folds(self)

    # --- sessions ----------------------------------------------------------------------------

    def create_session(
        self,
        *,
        goal: str,
        mode: str,
        objective: dict[str, Any],
        proposer: str,
        budget: int,
        seed: int,
        data_source: str,
        data_fingerprint: str | None,
        settings: dict[str, Any],
        baseline_config: dict[str, Any],
        time_budget_s: float | None = None,
        max_tokens_total: int | None = None,
    ) -> str:
        """Journals a new session, status ``running`` and owned by this process; returns its id.

        Raises:
            ValueError: a value of the wrong type (the message names the field).
        """
        row = columns(
            SessionRecord,
            {
                "goal": goal,
                "mode": mode,
                "objective": objective,
                "proposer": proposer,
                "budget": budget,
                "seed": seed,
                "data_source": data_source,
                "data_fingerprint": data_fingerprint,
                "settings": settings,
                "baseline_config": baseline_config,
                "time_budget_s": time_budget_s,
                "max_tokens_total": max_tokens_total,
            },
        )
        stamp = now()
        row.update(
            status=SessionStatus.running.value,
            owner_pid=os.getpid(),
            created_at=stamp,
            updated_at=stamp,
        )
        for _ in range(20):
            session_id = new_session_id()
            try:
                with self._write():
                    self.db["sessions"].insert({"id": session_id, **row})
            except sqlite3.IntegrityError as err:
                if "sessions.id" in str(err):  # two sessions in one second drew the same suffix
                    continue
                raise
            return session_id
        raise RuntimeError("could not draw a unique session id in 20 attempts")

    def update_session(self, session_id: str, **fields: Any) -> SessionRecord:
        """Sets some fields of a session and returns it as now stored.

        Setting ``status`` to ``finished`` or ``failed`` also sets ``finished_at`` (unless given).

        Raises:
            ValueError: an unknown field name, or a value of the wrong type.
            SessionNotFound: no such session.
        """
        unknown = sorted(set(fields) - SESSION_UPDATABLE)
        if unknown:
            raise ValueError(
                f"update_session: unknown field(s) {', '.join(unknown)}; "
                f"expected some of {', '.join(sorted(SESSION_UPDATABLE))}"
            )
        values = columns(SessionRecord, fields)
        ended = values.get("status") in (SessionStatus.finished, SessionStatus.failed)
        if ended and "finished_at" not in values:
            values["finished_at"] = now()
        values["updated_at"] = now()
        assignments = ", ".join(f"{name} = ?" for name in values)
        with self._write() as conn:
            cur = conn.execute(
                f"UPDATE sessions SET {assignments} WHERE id = ?", (*values.values(), session_id)
            )
            if cur.rowcount == 0:
                raise self._session_not_found(session_id)
        return self.get_session(session_id)

    def request_stop(self, session_id: str) -> bool:
        """Asks a running session to stop after its current trial; safe from any process.

        Sets status ``stopping`` if the session is ``running`` and journals a ``StopRequested``
        event either way. Returns whether the status changed.

        Raises:
            SessionNotFound: no such session.
        """
        with self._write() as conn:
            row = conn.execute("SELECT status FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if row is None:
                raise self._session_not_found(session_id)
            applied = row[0] == SessionStatus.running
            if applied:
                conn.execute(
                    "UPDATE sessions SET status = ?, updated_at = ? WHERE id = ?",
                    (SessionStatus.stopping.value, now(), session_id),
                )
            self._insert_event(
                session_id,
                STOP_REQUESTED,
                {"status_before": row[0], "applied": applied, "pid": os.getpid()},
            )
        return applied

    # --- trials ------------------------------------------------------------------------------

    def start_trial(
        self,
        session_id: str,
        *,
        kind: TrialKind | str,
        config: dict[str, Any],
        config_hash: str | None,
        delta: dict[str, Any],
        parent_id: int | None,
        seed: int | None,
        rationale: str | None,
        proposer: str | None,
        prompt: str | None = None,
    ) -> TrialRecord:
        """Journals a trial about to run: status ``running``, owned by this process, with the
        session's next index (assigned inside the transaction, so never twice). ``prompt`` is
        the exact prompt an LLM proposal was made from (chat messages as JSON text).

        Raises:
            SessionNotFound: no such session.
            TrialNotFound: ``parent_id`` names no trial.
        """
        return self._insert_trial(
            session_id,
            {
                "kind": kind,
                "status": TrialStatus.running,
                "config": config,
                "config_hash": config_hash,
                "delta": delta,
                "parent_id": parent_id,
                "seed": seed,
                "rationale": rationale,
                "proposer": proposer,
                "prompt": prompt,
                "owner_pid": os.getpid(),
                "started_at": now(),
            },
        )

    def record_invalid_trial(
        self,
        session_id: str,
        *,
        proposer: str | None,
        delta_raw: str,
        error: str,
        rationale: str | None = None,
        parent_id: int | None = None,
        seed: int | None = None,
        config: dict[str, Any] | None = None,
        config_hash: str | None = None,
        prompt: str | None = None,
    ) -> TrialRecord:
        """Journals a proposal that could not become a trial (unknown knob, not a number,
        unusable reply): a search row with status ``invalid``, finished at once, not counted.

        ``delta_raw`` is what the proposer sent, kept in ``delta["raw"]``; ``prompt`` the
        prompt it answered (chat messages as JSON text).
        """
        stamp = now()
        return self._insert_trial(
            session_id,
            {
                "kind": TrialKind.search,
                "status": TrialStatus.invalid,
                "config": config or {},
                "config_hash": config_hash,
                "delta": {"changes": {}, "rationale": rationale or "", "raw": delta_raw},
                "parent_id": parent_id,
                "seed": seed,
                "rationale": rationale,
                "proposer": proposer,
                "error": error,
                "prompt": prompt,
                "owner_pid": os.getpid(),
                "started_at": stamp,
                "finished_at": stamp,
            },
        )

    def _insert_trial(self, session_id: str, fields: dict[str, Any]) -> TrialRecord:
        values = columns(TrialRecord, {"session_id": session_id, **fields})
        names = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        with self._write() as conn:
            self._check_refs(conn, session_id, values.get("parent_id"))
            # One statement reads the last index and inserts the next: two writers cannot both
            # see the same maximum (and UNIQUE(session_id, idx) would refuse it anyway).
            cur = conn.execute(
                f"INSERT INTO trials (idx, {names}) "
                f"SELECT COALESCE(MAX(idx), -1) + 1, {marks} FROM trials WHERE session_id = ?",
                (*values.values(), session_id),
            )
            trial_id = cur.lastrowid
        return self.get_trial(trial_id)

    def finish_trial(
        self,
        trial_id: int,
        *,
        status: TrialStatus | str,
        objective: float | None = None,
        metrics: dict[str, float] | None = None,
        baselines: dict[str, dict[str, float]] | None = None,
        val_returns: Sequence[float] | None = None,
        final_weights: Sequence[float] | Mapping[str, float] | None = None,
        elapsed_s: float | None = None,
        reason: str | None = None,
        error: str | None = None,
        traceback_tail: str | None = None,
        policy_path: str | None = None,
        env_steps: int | None = None,
        violation: str | None = None,
        n_seeds: int | None = None,
        seed_mean: float | None = None,
        evaluator_version: str | None = None,
    ) -> TrialRecord:
        """Records how a running trial ended (and drops the outcome :meth:`hold_outcome` held
        for it). A search trial that ended ``keep``, ``discard``, ``crash`` or ``timeout`` is
        counted against the budget (an interrupted one is not).

        ``elapsed_s`` defaults to the wall time since the trial started. ``env_steps`` is the
        PPO env steps trained; ``violation`` the limit the trial's metrics break, if any;
        ``n_seeds`` and ``seed_mean`` the seeds a confirmed search trial ran on and its mean
        objective over them. Confirmation rows are never counted: the budget is in search trials.

        Raises:
            ValueError: ``status`` is not a final status, or a value of the wrong type.
            TrialNotFound: no such trial.
            TrialNotRunning: the trial already finished; a finished row is never rewritten.
        """
        final = TrialStatus(status)
        if final is TrialStatus.running:
            raise ValueError("finish_trial needs a final status, not 'running'")
        fields: dict[str, Any] = {
            "status": final,
            "objective": objective,
            "metrics": metrics,
            "baselines": baselines,
            "val_returns": None if val_returns is None else list(val_returns),
            "final_weights": final_weights
            if final_weights is None or isinstance(final_weights, Mapping)
            else list(final_weights),
            "elapsed_s": elapsed_s,
            "reason": reason,
            "error": error,
            "traceback_tail": traceback_tail,
            "policy_path": self.stored_path(policy_path),
            "env_steps": env_steps,
            "violation": violation,
            "n_seeds": n_seeds,
            "seed_mean": seed_mean,
            "evaluator_version": evaluator_version,
        }
        self._write_finish(trial_id, final, columns(TrialRecord, fields))
        return self.get_trial(trial_id)

    def _write_finish(self, trial_id: int, final: TrialStatus, values: dict[str, Any]) -> None:
        """Writes a running trial's final columns, its count and its end time at once."""
        with self._write() as conn:
            row = conn.execute(
                "SELECT kind, status, started_at FROM trials WHERE id = ?", (trial_id,)
            ).fetchone()
            if row is None:
                raise TrialNotFound(f"no trial with id {trial_id!r} in {self.path}")
            kind, current, started_at = row
            if current != TrialStatus.running:
                raise TrialNotRunning(f"trial {trial_id} already finished as {current!r}")
            stamp = now()
            if values["elapsed_s"] is None:
                values["elapsed_s"] = seconds_between(started_at, stamp)
            values["counted"] = int(
                kind == TrialKind.search
                and final in COUNTED_STATUSES
                and not is_interrupted(final, values["error"])
            )
            values["finished_at"] = stamp
            values["outcome"] = None
            assignments = ", ".join(f"{name} = ?" for name in values)
            conn.execute(
                f"UPDATE trials SET {assignments} WHERE id = ?", (*values.values(), trial_id)
            )

    def hold_outcome(self, trial_id: int, outcome: str) -> None:
        """Keeps what a running trial produced (``outcome``, JSON text) while it awaits its
        verdict, so a process killed before the verdict leaves it to be judged on resume
        instead of run again. :meth:`finish_trial` drops it.

        Raises:
            TrialNotRunning: the trial is not running (no such trial, or already finished).
        """
        with self._write() as conn:
            done = conn.execute(
                "UPDATE trials SET outcome = ? WHERE id = ? AND status = ?",
                (outcome, trial_id, TrialStatus.running.value),
            )
            if done.rowcount != 1:
                raise TrialNotRunning(f"trial {trial_id} is not running: no outcome to hold")

    def reap_interrupted(
        self, session_id: str, *, keep: Collection[int] = (), own_pid_alive: bool = False
    ) -> list[TrialRecord]:
        """Marks trials left ``running`` by a dead process as ``crash`` with error
        ``"interrupted"`` (not counted: they will run again). Returns the reaped rows. A trial
        whose outcome is held (:meth:`hold_outcome`) was not interrupted: it awaits its verdict.

        Args:
            session_id: the session to clean up.
            keep: trial ids to leave running (a trial whose result the caller still holds).
            own_pid_alive: treat trials owned by this process as live. False by default: a
                caller reaping on resume has no trial of its own in flight.
        """
        me = os.getpid()
        with self._write() as conn:
            rows = conn.execute(
                "SELECT id, owner_pid FROM trials WHERE session_id = ? AND status = ? "
                "AND outcome IS NULL",
                (session_id, TrialStatus.running.value),
            ).fetchall()
            dead = [
                trial_id
                for trial_id, pid in rows
                if trial_id not in keep and not (own_pid_alive if pid == me else pid_alive(pid))
            ]
            stamp = now()
            for trial_id in dead:
                conn.execute(
                    "UPDATE trials SET status = ?, error = ?, counted = 0, finished_at = ?, "
                    "reason = ? WHERE id = ?",
                    (TrialStatus.crash.value, INTERRUPTED, stamp, REAPED_REASON, trial_id),
                )
        if dead:
            logger.warning(
                "session %s: %d trial(s) left running by a process that ended marked %s "
                "(ids %s); they will run again",
                session_id,
                len(dead),
                INTERRUPTED,
                dead,
            )
        return [self.get_trial(t) for t in dead]
