"""The folds a trial was scored on (``trial_folds``): a repository the journal holds as
``journal.folds``.

A search, baseline or confirmation trial is scored on several walk-forward folds (see
``alphaloop.trials.folds``). Each fold's result is journaled as soon as it is known, before the
next fold runs, so a process killed mid-trial loses no fold: the run that takes the trial up
again carries the journaled folds over (``reused_from``) and runs only the rest.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from alphaloop.journal.codec import dumps, now
from alphaloop.journal.models import INTERRUPTED, _Record

if TYPE_CHECKING:
    from alphaloop.journal.connection import JournalFile


# Trials with VALIDATION returns and no fold rows: scored before folds existed.
_UNFOLDED = (
    "SELECT t.id, t.val_returns FROM trials t WHERE t.val_returns IS NOT NULL "
    "AND NOT EXISTS (SELECT 1 FROM trial_folds f WHERE f.trial_id = t.id)"
)


class FoldRecord(_Record):
    """One fold of one trial: its window, objective, metrics and daily returns."""

    json_fields: ClassVar[frozenset[str]] = frozenset({"metrics", "result", "returns"})

    id: int
    trial_id: int
    fold: int
    n_folds: int
    start_date: str
    end_date: str
    objective: float
    metrics: dict[str, Any]
    result: dict[str, Any]
    returns: list[float]
    env_steps: int | None = None
    elapsed_s: float
    evaluator_version: str | None = None
    reused_from: int | None = None
    created_at: str


class FoldScores(BaseModel):
    """A trial's objective on each fold it ran (by fold number, 0 the oldest window) and the
    number of folds its session scores a trial on: what a race or an export reads of its folds,
    without their windows, metrics and daily returns."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_folds: int
    objectives: dict[int, float]


class Folds:
    """Reads and writes ``trial_folds`` through the journal's connection and transactions."""

    def __init__(self, journal: JournalFile) -> None:
        self._journal = journal

    def add(
        self,
        trial_id: int,
        *,
        fold: int,
        n_folds: int,
        start_date: str,
        end_date: str,
        objective: float,
        metrics: dict[str, Any],
        result: dict[str, Any],
        returns: Sequence[float],
        elapsed_s: float,
        env_steps: int | None = None,
        evaluator_version: str | None = None,
        reused_from: int | None = None,
    ) -> FoldRecord:
        """Journals fold ``fold`` of trial ``trial_id``: its ``result`` is the evaluator's
        (without the daily returns, kept in ``returns``). Once only: a fold already journaled
        is returned as it is, so a step that runs again on resume writes nothing twice."""
        values = {
            "trial_id": trial_id,
            "fold": fold,
            "n_folds": n_folds,
            "start_date": start_date,
            "end_date": end_date,
            "objective": float(objective),
            "metrics": dumps(metrics),
            "result": dumps(result),
            "returns": json.dumps([float(x) for x in returns]),
            "env_steps": env_steps,
            "elapsed_s": float(elapsed_s),
            "evaluator_version": evaluator_version,
            "reused_from": reused_from,
            "created_at": now(),
        }
        names = ", ".join(values)
        marks = ", ".join(f":{k}" for k in values)
        with self._journal._write() as conn:
            conn.execute(
                f"INSERT OR IGNORE INTO trial_folds ({names}) VALUES ({marks})",
                values,
            )
        [row] = self._journal._rows(
            "SELECT * FROM trial_folds WHERE trial_id = ? AND fold = ?", (trial_id, fold)
        )
        return FoldRecord.from_row(row)

    def of_trial(self, trial_id: int) -> list[FoldRecord]:
        """A trial's folds, oldest window first."""
        rows = self._journal._rows(
            "SELECT * FROM trial_folds WHERE trial_id = ? ORDER BY fold", (trial_id,)
        )
        return [FoldRecord.from_row(r) for r in rows]

    def counts(self, trial_ids: Sequence[int]) -> dict[int, tuple[int, int]]:
        """(folds run, folds the session has) of each of ``trial_ids`` that has folds."""
        rows = self._journal._rows_in(
            "SELECT trial_id, COUNT(*) AS run, MAX(n_folds) AS n FROM trial_folds "
            "WHERE trial_id IN ({ids}) GROUP BY trial_id",
            trial_ids,
        )
        return {r["trial_id"]: (r["run"], r["n"]) for r in rows}

    def objectives(self, trial_ids: Sequence[int]) -> dict[int, list[float]]:
        """Each of ``trial_ids``' objective on each fold it ran, oldest window first (the
        intermediate values a race is decided on), without their daily returns."""
        out: dict[int, list[float]] = {}
        rows = self._journal._rows_in(
            "SELECT trial_id, objective FROM trial_folds WHERE trial_id IN ({ids}) "
            "ORDER BY trial_id, fold",
            trial_ids,
        )
        for r in rows:
            out.setdefault(r["trial_id"], []).append(r["objective"])
        return out

    def scores_of_session(self, session_id: str) -> dict[int, FoldScores]:
        """The fold scores of each of a session's trials that has folds, by trial id. Reads
        four columns: a session's daily returns (most of :meth:`of_session`'s cost) are not
        parsed."""
        rows = self._journal._rows(
            "SELECT f.trial_id, f.fold, f.n_folds, f.objective FROM trial_folds f "
            "JOIN trials t ON t.id = f.trial_id WHERE t.session_id = ? ORDER BY f.trial_id, f.fold",
            (session_id,),
        )
        by_trial: dict[int, tuple[int, dict[int, float]]] = {}
        for r in rows:
            _, objectives = by_trial.setdefault(r["trial_id"], (r["n_folds"], {}))
            objectives[r["fold"]] = r["objective"]
        return {
            tid: FoldScores(n_folds=n, objectives=objectives)
            for tid, (n, objectives) in by_trial.items()
        }

    def of_session(self, session_id: str) -> dict[int, list[FoldRecord]]:
        """Every fold of a session's trials, by trial id, oldest window first."""
        rows = self._journal._rows(
            "SELECT f.* FROM trial_folds f JOIN trials t ON t.id = f.trial_id "
            "WHERE t.session_id = ? ORDER BY f.trial_id, f.fold",
            (session_id,),
        )
        out: dict[int, list[FoldRecord]] = {}
        for r in rows:
            rec = FoldRecord.from_row(r)
            out.setdefault(rec.trial_id, []).append(rec)
        return out

    def returns_by_fold(self, session_id: str) -> dict[int, dict[int, list[float]]]:
        """Each of a session's trials' daily returns by fold; a trial journaled before folds
        existed has its VALIDATION returns as its one fold, keyed -1."""
        out: dict[int, dict[int, list[float]]] = {}
        for tid, records in self.of_session(session_id).items():
            out[tid] = {r.fold: r.returns for r in records}
        for row in self._journal._rows(_UNFOLDED + " AND t.session_id = ?", (session_id,)):
            out[row["id"]] = {-1: json.loads(row["val_returns"])}
        return out

    def returns_of(self, trial_id: int) -> dict[int, list[float]]:
        """One trial's daily returns by fold, as :meth:`returns_by_fold` gives them."""
        records = self.of_trial(trial_id)
        if records:
            return {r.fold: r.returns for r in records}
        rows = self._journal._rows(_UNFOLDED + " AND t.id = ?", (trial_id,))
        return {-1: json.loads(rows[0]["val_returns"])} if rows else {}

    def done_before(self, session_id: str, config_hash: str, seed: int) -> dict[int, FoldRecord]:
        """Folds journaled for ``config_hash`` on ``seed`` by trials of the session that never
        finished (a kill cut them short), by fold: what a rerun carries over."""
        rows = self._journal._rows(
            "SELECT f.* FROM trial_folds f JOIN trials t ON t.id = f.trial_id "
            "WHERE t.session_id = ? AND t.config_hash = ? AND t.seed = ? "
            "AND (t.status = 'running' OR t.error = ?) ORDER BY f.id",
            (session_id, config_hash, seed, INTERRUPTED),
        )
        return {rec.fold: rec for rec in map(FoldRecord.from_row, rows)}
