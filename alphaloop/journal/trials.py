"""Trials (``trials``): a repository the journal holds as ``journal.trials``.

A trial is journaled ``running`` before it runs, owned by its process, and finished once with
its verdict; a trial its process never finished is reaped as interrupted and runs again. Its
reads are :mod:`.trial_reads`, its rankings and pages :mod:`.trial_rankings`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from alphaloop.exceptions import AlphaloopError
from alphaloop.journal.codec import column, columns, now, seconds_between
from alphaloop.journal.connection import pid_alive
from alphaloop.journal.curves import check_max_points, downsample_curve
from alphaloop.journal.models import (
    COUNTED_STATUSES,
    INTERRUPTED,
    TrialKind,
    TrialRecord,
    TrialStatus,
    is_interrupted,
)
from alphaloop.journal.refs import check_refs, trial_not_found
from alphaloop.journal.trial_rankings import TrialRankings

logger = logging.getLogger(__name__)

REAPED_REASON = "its process ended before the trial finished"


class Trials(TrialRankings):
    """Reads and writes of the ``trials`` table through the journal's connection."""

    def start(
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
        ran_on: str | None = None,
    ) -> TrialRecord:
        """Journals a trial about to run: status ``running``, owned by this process, with the
        session's next index (assigned inside the transaction, so never twice). ``prompt`` is
        the exact prompt an LLM proposal was made from (chat messages as JSON text); ``ran_on``
        where it runs (``local``, ``ray:HOST:PORT`` or ``ray://HOST:PORT``).

        Raises:
            NotFound: no such session.
            NotFound: ``parent_id`` names no trial.
        """
        return self._insert(
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
                "ran_on": ran_on,
                "owner_pid": os.getpid(),
                "started_at": now(),
            },
        )

    def record_invalid(
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
        return self._insert(
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

    def _insert(self, session_id: str, fields: dict[str, Any]) -> TrialRecord:
        values = columns(TrialRecord, {"session_id": session_id, **fields})
        names = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        with self._journal._write() as conn:
            check_refs(self._journal, conn, session_id, values.get("parent_id"))
            # One statement reads the last index and inserts the next: two writers cannot both
            # see the same maximum (and UNIQUE(session_id, idx) would refuse it anyway).
            cur = conn.execute(
                f"INSERT INTO trials (idx, {names}) "
                f"SELECT COALESCE(MAX(idx), -1) + 1, {marks} FROM trials WHERE session_id = ?",
                (*values.values(), session_id),
            )
            trial_id = cur.lastrowid
        return self.get(trial_id)

    def finish(
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
            NotFound: no such trial.
            AlphaloopError: the trial already finished; a finished row is never rewritten.
        """
        final = TrialStatus(status)
        if final is TrialStatus.running:
            raise ValueError("trials.finish needs a final status, not 'running'")
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
            "policy_path": self._journal.stored_path(policy_path),
            "env_steps": env_steps,
            "violation": violation,
            "n_seeds": n_seeds,
            "seed_mean": seed_mean,
            "evaluator_version": evaluator_version,
        }
        self._write_finish(trial_id, final, columns(TrialRecord, fields))
        return self.get(trial_id)

    def _write_finish(self, trial_id: int, final: TrialStatus, values: dict[str, Any]) -> None:
        """Writes a running trial's final columns, its count and its end time at once."""
        with self._journal._write() as conn:
            row = conn.execute(
                "SELECT kind, status, started_at FROM trials WHERE id = ?", (trial_id,)
            ).fetchone()
            if row is None:
                raise trial_not_found(self._journal, trial_id)
            kind, current, started_at = row
            if current != TrialStatus.running:
                raise AlphaloopError(f"trial {trial_id} already finished as {current!r}")
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
        instead of run again. :meth:`finish` drops it.

        Raises:
            AlphaloopError: the trial is not running (no such trial, or already finished).
        """
        with self._journal._write() as conn:
            done = conn.execute(
                "UPDATE trials SET outcome = ? WHERE id = ? AND status = ?",
                (outcome, trial_id, TrialStatus.running.value),
            )
            if done.rowcount != 1:
                raise AlphaloopError(f"trial {trial_id} is not running: no outcome to hold")

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
        with self._journal._write() as conn:
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
        return [self.get(t) for t in dead]

    def set_curve(
        self, trial_id: int, points: Sequence[Any], *, max_points: int | None = None
    ) -> int:
        """Replaces a trial's live training curve; returns the length stored.

        With ``max_points``, a longer curve is stored as
        :func:`~alphaloop.journal.curves.downsample_curve` of it: an even sample over the whole
        run that keeps the first and the newest point, so a reader sees the run's whole shape
        at a bounded size (:data:`~alphaloop.journal.curves.MAX_CURVE_POINTS` is the usual cap).

        Raises:
            NotFound: no such trial.
        """
        check_max_points(max_points)
        kept = downsample_curve(points, max_points) if max_points else list(points)
        return self._update_curve(trial_id, lambda _: kept)

    def _update_curve(self, trial_id: int, change: Callable[[list[Any]], list[Any]]) -> int:
        with self._journal._write() as conn:
            row = conn.execute("SELECT curve FROM trials WHERE id = ?", (trial_id,)).fetchone()
            if row is None:
                raise trial_not_found(self._journal, trial_id)
            curve = change(json.loads(row[0]) if row[0] else [])
            conn.execute(
                "UPDATE trials SET curve = ? WHERE id = ?",
                (column(TrialRecord, "curve", curve), trial_id),
            )
        return len(curve)
