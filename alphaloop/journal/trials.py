"""Trials (``trials``): a repository the journal holds as ``journal.trials``.

A trial is journaled ``running`` before it runs, owned by its process, and finished once with
its verdict; a trial its process never finished is reaped as interrupted and runs again. Reads
come back as frozen :class:`~.models.TrialRecord` rows, without their per-day series when the
reader needs none (``series=False``). Pages of a long session are sorted and filtered in SQL
(:mod:`.pages`).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from alphaloop.exceptions import TrialNotFound, TrialNotRunning
from alphaloop.journal.codec import column, columns, now, seconds_between
from alphaloop.journal.connection import JournalFile, pid_alive
from alphaloop.journal.curves import check_max_points, downsample_curve
from alphaloop.journal.models import (
    COUNTED_STATUSES,
    INTERRUPTED,
    TrialKind,
    TrialRecord,
    TrialStatus,
    is_interrupted,
)
from alphaloop.journal.pages import PAGE_COLUMNS, TrialFilter, order_by, where
from alphaloop.journal.refs import check_refs, session_not_found, trial_not_found
from alphaloop.journal.status import PARTLY_SCORED_SQL, SHOWN_SQL

logger = logging.getLogger(__name__)

REAPED_REASON = "its process ended before the trial finished"
_SERIES = ("val_returns", "final_weights", "curve", "prompt")
# Explicit columns, never ``*``: ``trials.outcome`` (a result awaiting its verdict, see
# ``awaiting_verdict``) is the loop's working state, not part of a trial's record.
_ALL_COLUMNS = ", ".join(TrialRecord.model_fields)
# Records kept for rows read again unchanged (Trials._record): a server reading many long
# sessions starts over past this many.
_PARSED_ROWS = 50_000
_WITHOUT_SERIES = ", ".join(
    f"NULL AS {name}" if name in _SERIES else name for name in TrialRecord.model_fields
)
# Trials that finished with a verdict on their metrics, and the search/baseline kinds (the
# validation window), as SQL bound parameters.
_SCORED = (TrialStatus.keep.value, TrialStatus.discard.value)
_VALIDATION_KINDS = (TrialKind.search.value, TrialKind.baseline.value)
_BEST_FIRST = "ORDER BY violation IS NOT NULL, objective DESC, idx ASC"
_BEST_KEPT_FIRST = "ORDER BY violation IS NOT NULL, COALESCE(seed_mean, objective) DESC, idx ASC"
# A trial raced out ran fewer of its folds than there were: its objective is one fold's, not
# comparable with a mean over all of them, so it ranks below every trial scored on all its folds.
_PARTLY_SCORED = PARTLY_SCORED_SQL
_LEADERBOARD_FIRST = (
    f"ORDER BY violation IS NOT NULL, COALESCE({_PARTLY_SCORED}, 0), objective DESC, idx ASC"
)


# Trials that can rank as a session's best (:meth:`Trials.best`): only theirs are read past the
# per-day series, where ``violation`` and ``seed_mean`` are stored.
_RANKED = (
    "(kind = 'search' AND status = 'keep' OR kind = 'baseline' AND status IN ('keep', 'discard'))"
)


class TrialScore(NamedTuple):
    """What a running tally of a session reads of one trial (:meth:`Trials.scores_from`):
    ``violated`` (whether it breaks a limit) and ``seed_mean`` are None for a trial that cannot
    rank as best (neither a kept search trial nor a scored baseline)."""

    id: int
    idx: int
    kind: str
    status: str
    counted: bool
    objective: float | None
    violated: bool | None
    seed_mean: float | None


class SettledTrials(NamedTuple):
    """A session's trials before its first running one (:meth:`Trials.settled`): the last of
    their indexes (-1: none) and the id of that trial, how many were counted against the
    budget, and the best kept search trial and best scored baseline among them, ranked as
    :meth:`Trials.best` ranks."""

    upto: int
    upto_id: int | None
    counted: int
    search: TrialScore | None
    baseline: TrialScore | None


_SCORE_COLUMNS = (
    "id, idx, kind, status, counted, objective, violation IS NOT NULL AS violated, seed_mean"
)
# The first running trial's index (or past any index), for the statement of Trials.settled.
_FIRST_RUNNING = (
    "WITH first AS (SELECT COALESCE(MIN(idx), 9223372036854775807) AS i FROM trials "
    "WHERE session_id = :s AND status = 'running') "
)


def _score(row: dict[str, Any]) -> TrialScore:
    violated = row["violated"]
    return TrialScore(
        **{
            **row,
            "counted": bool(row["counted"]),
            "violated": None if violated is None else bool(violated),
        }
    )


def _columns(series: bool) -> str:
    """The trial columns to select: all of them, or the per-day series as NULL."""
    return _ALL_COLUMNS if series else _WITHOUT_SERIES


class Trials:
    """Reads and writes of the ``trials`` table through the journal's connection."""

    def __init__(self, journal: JournalFile) -> None:
        self._journal = journal
        # The last record parsed of each trial read without its series, with the raw row it
        # came from (see _record).
        self._parsed: dict[int, tuple[tuple[Any, ...], TrialRecord]] = {}

    def _records(self, sql: str, params: tuple[Any, ...] = ()) -> list[TrialRecord]:
        return [self._record(r) for r in self._journal._rows(sql, params)]

    def _record(self, row: dict[str, Any]) -> TrialRecord:
        """``row`` parsed, or the record parsed from the very same row before.

        The loop reads its whole history at every step, so a session of n trials would parse
        rows n^2 / 2 times (about 0.15 ms each: JSON and validation), which grows to minutes
        over a long session. A row read again unchanged (every value equal, its per-day series
        left out) gives back the same frozen record; a row with its series is parsed each time,
        so holding records costs no series' memory."""
        if any(row.get(name) is not None for name in _SERIES):
            return TrialRecord.from_row(row)
        key = tuple(row.values())
        held = self._parsed.get(row["id"])
        if held is not None and held[0] == key:
            return held[1]
        record = TrialRecord.from_row(row)
        if len(self._parsed) >= _PARSED_ROWS:
            self._parsed.clear()
        self._parsed[row["id"]] = (key, record)
        return record

    # --- writes ------------------------------------------------------------------------------

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
            SessionNotFound: no such session.
            TrialNotFound: ``parent_id`` names no trial.
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
            TrialNotFound: no such trial.
            TrialNotRunning: the trial already finished; a finished row is never rewritten.
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
        instead of run again. :meth:`finish` drops it.

        Raises:
            TrialNotRunning: the trial is not running (no such trial, or already finished).
        """
        with self._journal._write() as conn:
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
            TrialNotFound: no such trial.
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

    # --- reads -------------------------------------------------------------------------------

    def get(self, trial_id: int) -> TrialRecord:
        """One trial by its journal id.

        Raises:
            TrialNotFound: no such id.
        """
        rows = self._records(f"SELECT {_ALL_COLUMNS} FROM trials WHERE id = ?", (trial_id,))
        if not rows:
            raise trial_not_found(self._journal, trial_id)
        return rows[0]

    def at(self, session_id: str, idx: int) -> TrialRecord:
        """One trial by its index within a session (the ``#`` a review lists).

        Raises:
            SessionNotFound: no such session.
            TrialNotFound: the session has no trial with that index (the message gives the range).
        """
        rows = self._records(
            f"SELECT {_ALL_COLUMNS} FROM trials WHERE session_id = ? AND idx = ?", (session_id, idx)
        )
        if rows:
            return rows[0]
        if not self._journal._rows("SELECT 1 FROM sessions WHERE id = ?", (session_id,)):
            raise session_not_found(self._journal, session_id)
        span = self._journal._rows(
            "SELECT MIN(idx) AS lo, MAX(idx) AS hi FROM trials WHERE session_id = ?", (session_id,)
        )[0]
        has = (
            f"its trials are #{span['lo']}..#{span['hi']}"
            if span["lo"] is not None
            else "it has no trials"
        )
        raise TrialNotFound(f"session {session_id} has no trial #{idx}; {has}")

    def of_session(
        self, session_id: str, kind: TrialKind | str | None = None, *, series: bool = True
    ) -> list[TrialRecord]:
        """The trials of a session in index order, optionally of one kind only.

        Args:
            session_id: the session.
            kind: only trials of this kind.
            series: False leaves the per-day series out (``val_returns``, ``final_weights`` and
                ``curve`` come back None). Parsing them is most of a read's cost (~0.4 ms a
                trial), and a reader of verdicts, configs and metrics needs none of them.
        """
        sql = f"SELECT {_columns(series)} FROM trials WHERE session_id = ?"
        params: tuple[Any, ...] = (session_id,)
        if kind is not None:
            sql, params = sql + " AND kind = ?", (*params, TrialKind(kind).value)
        return self._records(sql + " ORDER BY idx", params)

    def after(
        self, session_id: str, after_id: int = 0, *, series: bool = False
    ) -> list[TrialRecord]:
        """The trials of a session with a journal id above ``after_id``, in index order: what a
        poller holding the cursor ``after_id`` has not seen yet. Without the per-day series by
        default (``series`` as in :meth:`of_session`): a poller redraws tables and charts of
        verdicts and objectives, and reading every series of a long session is most of a
        poll's cost."""
        return self._records(
            f"SELECT {_columns(series)} FROM trials WHERE session_id = ? AND id > ? ORDER BY idx",
            (session_id, after_id),
        )

    def changed(self, session_id: str, after: int = 0) -> tuple[list[TrialRecord], int]:
        """The session's trials whose row was written after revision ``after`` (every trial
        for 0), in index order and without their per-day series, and the highest revision
        among them (``after`` when none changed): hand it back to read only what changes next.
        One statement, so the revision and the rows are of the same moment."""
        rows = self._journal._rows(
            f"SELECT {_WITHOUT_SERIES}, (SELECT rev FROM trial_revisions "
            "WHERE trial_id = trials.id) AS revision_ FROM trials WHERE id IN "
            "(SELECT trial_id FROM trial_revisions WHERE session_id = ? AND rev > ?) "
            "ORDER BY idx",
            (session_id, after),
        )
        revisions = [r.pop("revision_") for r in rows]
        return [self._record(r) for r in rows], max(revisions, default=after)

    def follow(self, session_id: str) -> FollowedTrials:
        """A session's trials kept up to date by reading only what changed (see
        :class:`FollowedTrials`)."""
        return FollowedTrials(self, session_id)

    def running(self, session_id: str) -> list[TrialRecord]:
        """A session's trials still running, with their live training curves."""
        return self._records(
            f"SELECT {_ALL_COLUMNS} FROM trials WHERE session_id = ? AND status = ? ORDER BY idx",
            (session_id, TrialStatus.running.value),
        )

    def awaiting_verdict(self, session_id: str) -> list[tuple[TrialRecord, str]]:
        """Running trials whose outcome is held (see :meth:`hold_outcome`), in index order,
        each with that outcome's JSON text: what a killed process left to judge."""
        rows = self._journal._rows(
            f"SELECT {_ALL_COLUMNS}, outcome AS held FROM trials WHERE session_id = ? "
            "AND status = ? AND outcome IS NOT NULL ORDER BY idx",
            (session_id, TrialStatus.running.value),
        )
        return [
            (TrialRecord.from_row({k: v for k, v in r.items() if k != "held"}), r["held"])
            for r in rows
        ]

    # --- rankings and counts -----------------------------------------------------------------

    def completed(
        self,
        kinds: tuple[TrialKind | str, ...] = (TrialKind.search, TrialKind.baseline),
        *,
        series: bool = True,
    ) -> list[TrialRecord]:
        """Every trial of every session that finished with metrics (``keep`` or ``discard``), of
        the given kinds, in the order they finished. The default leaves out test-window rows, so
        every number compared is a validation number. With ``series=False`` the per-day series
        come back None (what a chart ranking every run by its metrics reads)."""
        wanted = [TrialKind(k).value for k in kinds]
        if not wanted:
            return []
        marks = ", ".join("?" for _ in wanted)
        return self._records(
            f"SELECT {_columns(series)} FROM trials WHERE kind IN ({marks}) AND status IN (?, ?) "
            "AND metrics IS NOT NULL ORDER BY finished_at, id",
            (*wanted, *_SCORED),
        )

    def leaderboard(
        self, session_id: str, k: int = 10, *, series: bool = True
    ) -> list[TrialRecord]:
        """The ``k`` best finished search and baseline trials (validation window), best first:
        trials within the session's limits before those that break one (a discarded trial with
        a higher objective is no better than one that respects the limits), trials scored on
        all their folds before those raced out on one, then by objective, ties broken by the
        earlier index. Test-window rows never appear. With ``series=False`` the per-day series
        come back None. The ranking sorts ids only, so its cost does not grow with the size of
        the trials' rows."""
        if k < 1:
            raise ValueError(f"leaderboard needs k >= 1, got {k}")
        ranked = (
            "SELECT id FROM trials WHERE session_id = ? AND kind IN (?, ?) "
            f"AND status != ? AND objective IS NOT NULL {_LEADERBOARD_FIRST} LIMIT ?"
        )
        return self._records(
            f"SELECT {_columns(series)} FROM trials WHERE id IN ({ranked}) {_LEADERBOARD_FIRST}",
            (session_id, *_VALIDATION_KINDS, TrialStatus.running.value, k),
        )

    def best(self, session_id: str) -> TrialRecord | None:
        """The best kept search trial (ranked as :func:`~.models.best_kept` ranks: by the mean
        over its seeds when it was confirmed); else the best baseline (one within the limits
        first); else None."""
        for kind, statuses, order in (
            (TrialKind.search, (TrialStatus.keep.value,), _BEST_KEPT_FIRST),
            (TrialKind.baseline, _SCORED, _BEST_FIRST),
        ):
            marks = ", ".join("?" for _ in statuses)
            rows = self._records(
                f"SELECT {_ALL_COLUMNS} FROM trials WHERE session_id = ? AND kind = ? "
                f"AND status IN ({marks}) AND objective IS NOT NULL {order} LIMIT 1",
                (session_id, kind.value, *statuses),
            )
            if rows:
                return rows[0]
        return None

    def seconds(self, session_id: str) -> float:
        """Seconds the session's finished trials took, all kinds together."""
        rows = self._journal._rows(
            "SELECT COALESCE(SUM(elapsed_s), 0) AS s FROM trials WHERE session_id = ?",
            (session_id,),
        )
        return float(rows[0]["s"])

    def counted(self, session_id: str) -> int:
        """Search trials that used up the budget (see :data:`~.models.COUNTED_STATUSES`)."""
        rows = self._journal._rows(
            "SELECT COUNT(*) AS n FROM trials WHERE session_id = ? AND counted = 1", (session_id,)
        )
        return int(rows[0]["n"])

    def twin(self, session_id: str, config_hash: str) -> int | None:
        """The index of the session's first trial of this config (running or finished, invalid
        ones aside), or None: the loop never runs a config twice. A lookup in the index by
        config; left to itself, SQLite's shortcut for MIN walks the session's rows in index
        order, all of them when the config is new (as it nearly always is)."""
        rows = self._journal._rows(
            "SELECT MIN(idx) AS idx FROM trials INDEXED BY idx_trials_config "
            "WHERE session_id = ? AND config_hash = ? AND status != ?",
            (session_id, config_hash, TrialStatus.invalid.value),
        )
        return rows[0]["idx"]

    def total(self, session_id: str) -> int:
        """How many trials the session journaled (every kind), read from the index alone."""
        rows = self._journal._rows(
            "SELECT COUNT(*) AS n FROM trials WHERE session_id = ?", (session_id,)
        )
        return int(rows[0]["n"])

    # --- pages (:mod:`.pages`) ---------------------------------------------------------------

    def count(self, session_id: str, f: TrialFilter) -> int:
        """How many trials of ``session_id`` pass ``f``."""
        sql, params = where(session_id, f)
        rows = self._journal._rows(f"SELECT COUNT(*) AS n FROM trials WHERE {sql}", tuple(params))
        return int(rows[0]["n"])

    def page(
        self, session_id: str, f: TrialFilter, *, offset: int, limit: int
    ) -> list[TrialRecord]:
        """The trials of ``session_id`` that pass ``f``, in its order, from ``offset``."""
        sql, params = where(session_id, f)
        order, order_params = order_by(f)
        return self._records(
            f"SELECT {PAGE_COLUMNS} FROM trials WHERE {sql} {order} LIMIT ? OFFSET ?",
            (*params, *order_params, limit, offset),
        )

    def tail(self, session_id: str, n: int = 8) -> list[TrialRecord]:
        """The session's last ``n`` trials, newest first, without series: through the index on
        ``(session_id, idx)``, so its cost does not grow with the session. Trials still
        running are among them (they are the newest)."""
        sql = f"SELECT {PAGE_COLUMNS} FROM trials WHERE session_id = ? ORDER BY idx DESC LIMIT ?"
        return self._records(sql, (session_id, n))

    def scores_from(self, session_id: str, start: int) -> list[TrialScore]:
        """The session's trials of index ``start`` and above, in index order, as light rows:
        what a tally of its budgeted trials and best reads (:mod:`alphaloop.ops.tally`).
        Through the index on ``(session_id, idx)``: the few trials since an earlier read cost
        the same at any length, and every row comes from one snapshot of the journal."""
        rows = self._journal._rows(
            f"SELECT id, idx, kind, status, counted, objective, "
            f"CASE WHEN {_RANKED} THEN violation IS NOT NULL END AS violated, "
            f"CASE WHEN {_RANKED} THEN seed_mean END AS seed_mean "
            "FROM trials WHERE session_id = ? AND idx >= ? ORDER BY idx",
            (session_id, start),
        )
        return [_score(r) for r in rows]

    def settled(self, session_id: str) -> SettledTrials:
        """The session's trials before its first running one, summed up in SQL (one statement,
        so one snapshot of the journal): what a tally reads of a session the first time
        (:mod:`alphaloop.ops.tally`), at the cost of one :meth:`best`; later reads need only
        :meth:`scores_from` the last index."""
        before = "AND idx < (SELECT i FROM first)"

        def best(kind: str, statuses: str, order: str) -> str:
            return (
                f"SELECT * FROM (SELECT {_SCORE_COLUMNS} FROM trials WHERE session_id = :s "
                f"AND kind = {kind} AND status IN ({statuses}) AND objective IS NOT NULL "
                f"{before} {order} LIMIT 1)"
            )

        last = f"FROM trials WHERE session_id = :s {before} ORDER BY idx DESC LIMIT 1"
        # Every counted trial but those from the first running on, through the covering index
        # rather than the trials' rows (a running trial is never counted).
        counted = (
            "(SELECT COUNT(*) FROM trials WHERE session_id = :s AND counted = 1) - (SELECT "
            "COUNT(*) FROM trials WHERE session_id = :s AND idx >= (SELECT i FROM first) "
            "AND +counted = 1)"
        )
        rows = self._journal._rows(
            f"{_FIRST_RUNNING} SELECT (SELECT id {last}) AS id, COALESCE((SELECT idx {last}), -1) "
            f"AS idx, NULL AS kind, NULL AS status, {counted} AS counted, NULL AS objective, "
            "NULL AS violated, NULL AS seed_mean "
            f"UNION ALL {best(':search', ':keep', _BEST_KEPT_FIRST)} "
            f"UNION ALL {best(':baseline', ':keep, :discard', _BEST_FIRST)}",
            {"s": session_id, "search": TrialKind.search.value, "keep": TrialStatus.keep.value,
             "baseline": TrialKind.baseline.value, "discard": TrialStatus.discard.value},
        )  # fmt: skip
        head, found = rows[0], [_score(r) for r in rows[1:]]
        return SettledTrials(
            upto=head["idx"],
            upto_id=head["id"],
            counted=head["counted"],
            search=next((r for r in found if r.kind == TrialKind.search.value), None),
            baseline=next((r for r in found if r.kind == TrialKind.baseline.value), None),
        )

    def search_columns(self, session_id: str) -> dict[str, list[Any]]:
        """The session's search trials as columns (``id``, ``idx``, shown ``status``,
        ``objective``), in index order: read from the covering index of the history, so a
        search of 50,000 trials is sampled without reading its rows."""
        names = ("id", "idx", "status", "objective")
        rows = self._journal._rows(
            f"SELECT id, idx, {SHOWN_SQL} AS status, objective FROM trials "
            "WHERE session_id = ? AND kind = 'search' ORDER BY idx",
            (session_id,),
        )
        return {k: [r[k] for r in rows] for k in names}

    def sampled(self, trial_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """The config, start and finish of each of ``trial_ids`` (the rows a plot draws)."""
        out: dict[int, dict[str, Any]] = {}
        ids = list(trial_ids)
        for lo in range(0, len(ids), 500):  # SQLite's limit on bound parameters
            chunk = ids[lo : lo + 500]
            rows = self._journal._rows(
                "SELECT id, config, started_at, finished_at FROM trials "
                f"WHERE id IN ({', '.join('?' for _ in chunk)})",
                tuple(chunk),
            )
            out.update({r["id"]: {**r, "config": json.loads(r["config"])} for r in rows})
        return out

    def objective_columns(self, session_id: str) -> dict[str, list[Any]]:
        """The session's trials as columns (``idx``, ``kind``, ``status``, ``objective``), in
        index order: what a history chart of 50,000 trials needs, without a model per row.
        ``status`` is the shown one (:mod:`.status`: a raced-out trial is told apart)."""
        rows = self._journal._rows(
            f"SELECT idx, kind, {SHOWN_SQL} AS status, objective FROM trials "
            "WHERE session_id = ? ORDER BY idx",
            (session_id,),
        )
        return {k: [r[k] for r in rows] for k in ("idx", "kind", "status", "objective")}

    def batches(
        self, session_id: str, f: TrialFilter, batch: int = 2000
    ) -> Iterator[Sequence[TrialRecord]]:
        """Every trial passing ``f``, a batch at a time (an export)."""
        offset = 0
        while True:
            rows = self.page(session_id, f, offset=offset, limit=batch)
            if not rows:
                return
            yield rows
            offset += batch


class FollowedTrials:
    """A session's trials without their per-day series, as the journal has them at each read,
    reading only the rows written since the one before (:meth:`Trials.changed`).

    What a reader of a session's whole history at every step holds: the research loop reads it
    to propose, to race a trial's first fold and to judge it, and a read of every row grew
    with the session until it cost more than a Mean-CVaR trial. Records are frozen; the lists
    handed out are the reader's own."""

    def __init__(self, trials: Trials, session_id: str) -> None:
        self._trials = trials
        self._session_id = session_id
        self._revision = 0
        self._ordered: list[TrialRecord] = []
        self._at: dict[int, int] = {}  # trial id -> its place in _ordered
        self._lock = threading.Lock()  # a read and what it updates, as one

    def rows(self) -> list[TrialRecord]:
        """Every trial of the session in index order, as of now."""
        with self._lock:
            changed, self._revision = self._trials.changed(self._session_id, self._revision)
            new = [t for t in changed if t.id not in self._at]
            for t in changed:
                if t.id in self._at:
                    self._ordered[self._at[t.id]] = t
            start = len(self._ordered)
            self._ordered.extend(new)  # in index order, as ``changed`` gives them
            if new and start and new[0].idx < self._ordered[start - 1].idx:  # one came late
                self._ordered.sort(key=lambda r: r.idx)
                self._at = {r.id: i for i, r in enumerate(self._ordered)}
            else:
                self._at.update((t.id, start + i) for i, t in enumerate(new))
            return list(self._ordered)
