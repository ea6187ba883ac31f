"""Rankings, counts and pages of a session's trials, in SQL: the leaderboard and the best, the
budget counted, a page sorted and filtered (:mod:`.pages`), a tally's light rows and a long
session's columns, read without touching every trial's row where an index serves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from alphaloop.journal.models import TrialKind, TrialRecord, TrialStatus
from alphaloop.journal.pages import PAGE_COLUMNS, TrialFilter, order_by, where
from alphaloop.journal.ranking import Ranking
from alphaloop.journal.status import PARTLY_SCORED_SQL, SHOWN_SQL
from alphaloop.journal.tally import Tally, TrialScore, cache_key, keep, kept
from alphaloop.journal.trial_reads import TrialReads, columns_of

# Trials that finished with a verdict on their metrics, and the search/baseline kinds (the
# validation window), as SQL bound parameters.
_SCORED = (TrialStatus.keep.value, TrialStatus.discard.value)
_VALIDATION_KINDS = (TrialKind.search.value, TrialKind.baseline.value)
# A trial raced out ran fewer of its folds than there were: its objective is one fold's, not
# comparable with a mean over all of them, so it ranks below every trial scored on all its folds.
_PARTLY_SCORED = PARTLY_SCORED_SQL
_LEADERBOARD_FIRST = (
    f"ORDER BY violation IS NOT NULL, COALESCE({_PARTLY_SCORED}, 0), objective DESC, idx ASC"
)


_SCORE_COLUMNS = "id, idx, kind, status, counted, objective, seed_mean"


def _candidates(where: str = "") -> str:
    """The light rows of a session's (``:s``) trials that may rank as its best
    (:mod:`.ranking`): its kept search trials and scored baseline runs, each found through an
    index (by status, by kind), so a long session's other rows are never read."""
    return (
        f"SELECT {_SCORE_COLUMNS} FROM trials WHERE session_id = :s AND status = 'keep' "
        f"AND kind = 'search' {where} UNION ALL SELECT {_SCORE_COLUMNS} FROM trials "
        f"WHERE session_id = :s AND kind = 'baseline' AND objective IS NOT NULL {where}"
    )


class SettledTrials(NamedTuple):
    """A session's trials before its first running one (:meth:`Trials.settled`): the last of
    their indexes (-1: none) and the id of that trial, how many were counted against the
    budget, and their ranking (:mod:`.ranking`)."""

    upto: int
    upto_id: int | None
    counted: int
    ranking: Ranking[TrialScore]


# The first running trial's index (or past any index), for the statement of Trials.settled.
_FIRST_RUNNING = (
    "WITH first AS (SELECT COALESCE(MIN(idx), 9223372036854775807) AS i FROM trials "
    "WHERE session_id = :s AND status = 'running') "
)


def _score(row: dict[str, Any]) -> TrialScore:
    return TrialScore(**{**row, "counted": bool(row["counted"])})


class TrialRankings(TrialReads):
    """The rankings, counts, pages and columns of the ``trials`` table."""

    def completed(
        self,
        kinds: tuple[TrialKind | str, ...] = (TrialKind.search, TrialKind.baseline),
        *,
        series: bool = True,
    ) -> list[TrialRecord]:
        """Every trial of every session that finished with metrics (``keep`` or ``discard``), of
        the given kinds, in the order they finished. The default leaves out test-window rows, so
        every number compared is a validation number; a trial raced out after its first folds
        is left out too (its metrics are those folds' only, not comparable with a full score).
        With ``series=False`` the per-day series come back None (what a chart ranking every run
        by its metrics reads)."""
        wanted = [TrialKind(k).value for k in kinds]
        if not wanted:
            return []
        marks = ", ".join("?" for _ in wanted)
        return self._records(
            f"SELECT {columns_of(series)} FROM trials WHERE kind IN ({marks}) AND status IN (?, ?) "
            f"AND metrics IS NOT NULL AND NOT COALESCE({_PARTLY_SCORED}, 0) "
            "ORDER BY finished_at, id",
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
            f"SELECT {columns_of(series)} FROM trials WHERE id IN ({ranked}) {_LEADERBOARD_FIRST}",
            (session_id, *_VALIDATION_KINDS, TrialStatus.running.value, k),
        )

    def ranking(self, session_id: str) -> Ranking[TrialScore]:
        """The session's ranking (:mod:`.ranking`), from the light rows of the trials that may
        rank (its kept search trials and scored baselines: a few, at any length)."""
        rows = self._journal._rows(_candidates(), {"s": session_id})
        return Ranking().add(map(_score, rows))

    def best(self, session_id: str) -> TrialRecord | None:
        """The session's best trial (:mod:`.ranking`: the best kept search trial, else the
        default's first baseline run), or None before any could rank."""
        best = self.ranking(session_id).best
        return self.get(best.trial.id) if best is not None else None

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

    def tally(self, session_id: str) -> Tally:
        """The session's tally now (:mod:`.tally`): its counted trials and its ranking, the
        kept tally with the trials journaled since folded in."""
        key = cache_key(self._journal.path, session_id)
        known = kept(key)
        tally, rows = known, []
        if tally is not None:
            # Read from the last trial kept: still there, the journal is the one it was read
            # from (a copy written over the file in place is not).
            rows = self.scores_from(session_id, max(tally.upto, 0))
            if tally.upto >= 0:
                head, rows = (rows[0], rows[1:]) if rows else (None, [])
                if head is None or head.id != tally.upto_id:
                    tally = None
        if tally is None:  # a first read: summed up in SQL
            summed = self.settled(session_id)
            tally = Tally(summed.upto, summed.upto_id, summed.counted, summed.ranking)
            rows = self.scores_from(session_id, tally.upto + 1)
        running = TrialStatus.running.value
        first_running = next((i for i, r in enumerate(rows) if r.status == running), len(rows))
        if first_running:
            last = rows[first_running - 1]
            tally = tally.add(rows[:first_running])._replace(upto=last.idx, upto_id=last.id)
        if tally is not known:
            keep(key, tally)
        return tally.add([r for r in rows[first_running:] if r.status != running])

    def scores_from(self, session_id: str, start: int) -> list[TrialScore]:
        """The session's trials of index ``start`` and above, in index order, as light rows:
        what a tally of its budgeted trials and best reads (:meth:`tally`).
        Through the index on ``(session_id, idx)``: the few trials since an earlier read cost
        the same at any length, and every row comes from one snapshot of the journal."""
        rows = self._journal._rows(
            f"SELECT {_SCORE_COLUMNS} FROM trials WHERE session_id = ? AND idx >= ? ORDER BY idx",
            (session_id, start),
        )
        return [_score(r) for r in rows]

    def settled(self, session_id: str) -> SettledTrials:
        """The session's trials before its first running one, summed up in SQL (one statement,
        so one snapshot of the journal): what a tally reads of a session the first time
        (:mod:`.tally`), at the cost of one :meth:`ranking`; later reads need only
        :meth:`scores_from` the last index."""
        before = "AND idx < (SELECT i FROM first)"
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
            f"NULL AS seed_mean UNION ALL {_candidates(before)}",
            {"s": session_id},
        )
        head, found = rows[0], [_score(r) for r in rows[1:]]
        return SettledTrials(
            upto=head["idx"], upto_id=head["id"], counted=head["counted"],
            ranking=Ranking().add(found),
        )  # fmt: skip

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
        """The config, start, finish, max drawdown and any limit's violation of each of
        ``trial_ids`` (the rows a plot draws)."""
        rows = self._journal._rows_in(
            "SELECT id, config, started_at, finished_at, violation, "
            "json_extract(metrics, '$.max_drawdown') AS max_drawdown FROM trials "
            "WHERE id IN ({ids})",
            trial_ids,
        )
        return {r["id"]: {**r, "config": json.loads(r["config"])} for r in rows}

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
