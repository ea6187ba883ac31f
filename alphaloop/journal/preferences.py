"""The preference flywheel: verdicts on decisions, preference pairs and DPO runs. A repository
the journal holds as ``journal.preferences``.

A pair's ``origin_key`` is unique (``pm:decision:12``, ``research:s-...:7>9``): extraction
inserts with ``INSERT OR IGNORE`` on it, so running it twice adds nothing.
"""

from __future__ import annotations

import os
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import Field

from alphaloop.exceptions import AlphaloopError, InvalidRequest, NotFound
from alphaloop.journal.codec import dumps, now, seconds_between
from alphaloop.journal.connection import JournalFile
from alphaloop.journal.models import _Record


class Verdict(StrEnum):
    """What a person said of a portfolio decision."""

    approve = "approve"
    reject = "reject"
    override = "override"


class PreferenceSource(StrEnum):
    pm = "pm"  # a decision's T+5 outcome against its alternative
    research = "research"  # two proposals from one state of a research session


class DpoStatus(StrEnum):
    running = "running"
    finished = "finished"
    failed = "failed"
    skipped = "skipped"


class DecisionView(_Record):
    """What the flywheel reads of a portfolio decision: its weights and its verdict."""

    json_fields: ClassVar[frozenset[str]] = frozenset(
        {"symbols", "pre_weights", "target_weights", "override_weights", "orders"}
    )

    id: int
    book: str
    date: str
    policy_id: int | None = None
    status: str
    symbols: list[str]
    pre_weights: dict[str, float] | None = None
    target_weights: dict[str, float] | None = None
    verdict: Verdict | None = None
    override_weights: dict[str, float] | None = None
    note: str | None = None
    decided_at: str | None = None
    created_at: str
    # What the tick sent: none on a hold day (no rebalance) or a halted one.
    orders: list[dict[str, Any]] = Field(default_factory=list)


class PreferenceRecord(_Record):
    """One preference pair: the prompt, the better and the worse answer, where it came from
    (``origin``: ids; ``origin_key``: unique), by how much one beat the other, and whether it is
    labelled (a pair whose outcome gap is below the threshold is kept, unlabelled)."""

    json_fields: ClassVar[frozenset[str]] = frozenset({"origin"})

    id: int
    source: PreferenceSource
    origin_key: str
    origin: dict[str, Any]
    prompt: str
    chosen: str
    rejected: str
    margin: float
    labelled: bool
    created_at: str


class DpoRunRecord(_Record):
    """One DPO run (or a check that decided not to train: ``skipped`` with its ``reason``).
    Columns from ``accuracy_after_low`` to ``lengths`` are None in rows of schema 8 and older."""

    json_fields: ClassVar[frozenset[str]] = frozenset({"loss_curve", "reward_margins", "lengths"})

    id: int
    status: DpoStatus
    model_dir: str | None = None
    out_dir: str | None = None
    lora: bool = False
    max_steps: int | None = None
    n_train: int | None = None
    n_heldout: int | None = None
    last_preference_id: int | None = None
    accuracy_before: float | None = None
    accuracy_after: float | None = None
    # The 95% Wilson interval of ``accuracy_after`` on the held-out pairs.
    accuracy_after_low: float | None = None
    accuracy_after_high: float | None = None
    max_length: int | None = None  # tokens: the longest prompt + answer trained on
    # Prompt tokens after fitting (min, median, max), the longest sequence, pairs and history
    # entries cut to fit ``max_length``.
    lengths: dict[str, float] | None = None
    margin_before: float | None = None
    margin_after: float | None = None
    loss_curve: list[Any] | None = None
    reward_margins: list[Any] | dict[str, Any] | None = None
    elapsed_s: float | None = None
    reason: str | None = None
    error: str | None = None
    owner_pid: int | None = None
    started_at: str
    finished_at: str | None = None


_DECISION_COLUMNS = ", ".join(k for k in DecisionView.model_fields)
# Decisions people lived: of live books (not deployment checks), the first of each (book, day)
# (a journal from before ticks were once per day may hold more).
_LIVED = (
    "book IN (SELECT name FROM pm_books WHERE purpose = 'live') "
    "AND id IN (SELECT MIN(id) FROM decisions GROUP BY book, date)"
)
_DPO_UPDATABLE = frozenset(DpoRunRecord.model_fields) - {"id", "started_at", "owner_pid"}


class Preferences:
    """Reads and writes of ``preferences``, ``dpo_runs`` and the verdict columns of
    ``decisions``."""

    def __init__(self, journal: JournalFile) -> None:
        self._journal = journal

    # --- decisions: verdicts -----------------------------------------------------------------

    def decision_view(self, decision_id: int) -> DecisionView:
        """One decision as the flywheel sees it.

        Raises:
            NotFound: no such id (the message lists undecided ids).
        """
        rows = self._journal._rows(
            f"SELECT {_DECISION_COLUMNS} FROM decisions WHERE id = ?", (decision_id,)
        )
        if not rows:
            open_ids = [str(d.id) for d in self.undecided_decisions()[:10]]
            hint = (
                f"undecided decisions: {', '.join(open_ids)}"
                if open_ids
                else "no decision awaits a verdict (`alphaloop pm review` lists them)"
            )
            raise NotFound(f"no decision {decision_id!r} in {self._journal.path}; {hint}")
        return DecisionView.from_row(rows[0])

    def undecided_decisions(self) -> list[DecisionView]:
        """Decisions of live books (not deployment checks) with target weights and no verdict
        yet, oldest first."""
        rows = self._journal._rows(
            f"SELECT {_DECISION_COLUMNS} FROM decisions "
            f"WHERE verdict IS NULL AND target_weights IS NOT NULL AND {_LIVED} ORDER BY date, id"
        )
        return [DecisionView.from_row(r) for r in rows]

    def decided_decisions(self) -> list[DecisionView]:
        """Decisions people lived with a verdict, oldest first (what the T+5 label job reads):
        of live books only, and one per (book, day)."""
        rows = self._journal._rows(
            f"SELECT {_DECISION_COLUMNS} FROM decisions WHERE verdict IS NOT NULL AND {_LIVED} "
            "ORDER BY date, id"
        )
        return [DecisionView.from_row(r) for r in rows]

    def set_verdict(
        self,
        decision_id: int,
        verdict: Verdict | str,
        *,
        override_weights: dict[str, float] | None = None,
        note: str | None = None,
    ) -> DecisionView:
        """Records a person's verdict on a decision (once: a verdict is never rewritten, since a
        pair may already have been labelled from it).

        Raises:
            NotFound: no such decision.
            InvalidRequest: it already has a verdict, or override weights with a verdict other
                than ``override`` (or none with ``override``).
        """
        verdict = Verdict(verdict)
        if (verdict == Verdict.override) != (override_weights is not None):
            raise InvalidRequest("override weights go with the verdict 'override', and only it")
        with self._journal._write() as conn:
            row = conn.execute(
                "SELECT verdict FROM decisions WHERE id = ?", (decision_id,)
            ).fetchone()
            if row is None:
                raise NotFound(f"no decision {decision_id!r} in {self._journal.path}")
            check = conn.execute(
                "SELECT b.name FROM decisions d JOIN pm_books b ON b.name = d.book "
                "WHERE d.id = ? AND b.purpose = 'check'",
                (decision_id,),
            ).fetchone()
            if check is not None:
                raise InvalidRequest(
                    f"decision {decision_id} belongs to the deployment check {check[0]!r}: a "
                    "simulated day nobody lived; verdicts are for decisions of live books"
                )
            if row[0] is not None:
                raise InvalidRequest(
                    f"decision {decision_id} already has the verdict {row[0]!r}; "
                    "a verdict is recorded once"
                )
            conn.execute(
                "UPDATE decisions SET verdict = ?, override_weights = ?, note = ?, "
                "decided_at = ? WHERE id = ?",
                (
                    verdict.value,
                    None if override_weights is None else dumps(override_weights),
                    note,
                    now(),
                    decision_id,
                ),
            )
        return self.decision_view(decision_id)

    # --- preferences -------------------------------------------------------------------------

    def add(
        self,
        *,
        source: PreferenceSource | str,
        origin_key: str,
        origin: dict[str, Any],
        prompt: str,
        chosen: str,
        rejected: str,
        margin: float,
        labelled: bool,
    ) -> bool:
        """Journals a pair unless one with this ``origin_key`` exists; True when it was added."""
        row = {
            "source": PreferenceSource(source).value,
            "origin_key": origin_key,
            "origin": dumps(origin),
            "prompt": prompt,
            "chosen": chosen,
            "rejected": rejected,
            "margin": float(margin),
            "labelled": int(bool(labelled)),
            "created_at": now(),
        }
        names = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self._journal._write() as conn:
            cur = conn.execute(
                f"INSERT OR IGNORE INTO preferences ({names}) VALUES ({marks})", tuple(row.values())
            )
            return cur.rowcount == 1

    def has(self, origin_key: str) -> bool:
        rows = self._journal._rows("SELECT 1 FROM preferences WHERE origin_key = ?", (origin_key,))
        return bool(rows)

    def list(
        self,
        *,
        source: PreferenceSource | str | None = None,
        labelled: bool | None = None,
        after_id: int | None = None,
    ) -> list[PreferenceRecord]:
        """Pairs in id order, filtered by source, labelled flag and ``id > after_id``."""
        where, params = [], []
        if source is not None:
            where.append("source = ?")
            params.append(PreferenceSource(source).value)
        if labelled is not None:
            where.append("labelled = ?")
            params.append(int(labelled))
        if after_id is not None:
            where.append("id > ?")
            params.append(after_id)
        sql = "SELECT * FROM preferences" + (" WHERE " + " AND ".join(where) if where else "")
        return [
            PreferenceRecord.from_row(r)
            for r in self._journal._rows(sql + " ORDER BY id", tuple(params))
        ]

    def counts(self) -> dict[str, dict[str, int]]:
        """``{source: {"labelled": n, "unlabelled": m}}`` for both sources."""
        counts = {s.value: {"labelled": 0, "unlabelled": 0} for s in PreferenceSource}
        for r in self._journal._rows(
            "SELECT source, labelled, COUNT(*) AS n FROM preferences GROUP BY source, labelled"
        ):
            counts[r["source"]]["labelled" if r["labelled"] else "unlabelled"] = r["n"]
        return counts

    # --- DPO runs ----------------------------------------------------------------------------

    def start_dpo_run(self, *, status: DpoStatus | str = DpoStatus.running, **fields: Any) -> int:
        """Journals a DPO run (``running``, or ``skipped`` with a reason); returns its id."""
        unknown = set(fields) - _DPO_UPDATABLE
        if unknown:
            raise ValueError(f"DpoRunRecord: unknown field(s) {', '.join(sorted(unknown))}")
        stamp = now()
        row = {k: _dpo_column(k, v) for k, v in fields.items()}
        for key in ("model_dir", "out_dir"):
            if row.get(key) is not None:
                row[key] = self._journal.stored_path(row[key])
        row.update(status=DpoStatus(status).value, owner_pid=os.getpid(), started_at=stamp)
        if row["status"] != DpoStatus.running:
            row["finished_at"] = stamp
        with self._journal._write():
            return int(self._journal.db["dpo_runs"].insert(row).last_rowid)

    def finish_dpo_run(
        self, run_id: int, *, status: DpoStatus | str, **fields: Any
    ) -> DpoRunRecord:
        """Closes a running DPO run with its outcome (``finished`` or ``failed``).

        Raises:
            AlphaloopError: no such run, or it is not running.
        """
        unknown = set(fields) - _DPO_UPDATABLE
        if unknown:
            raise ValueError(f"DpoRunRecord: unknown field(s) {', '.join(sorted(unknown))}")
        row = {k: _dpo_column(k, v) for k, v in fields.items()}
        for key in ("model_dir", "out_dir"):
            if row.get(key) is not None:
                row[key] = self._journal.stored_path(row[key])
        with self._journal._write() as conn:
            found = conn.execute(
                "SELECT status, started_at FROM dpo_runs WHERE id = ?", (run_id,)
            ).fetchone()
            if found is None or found[0] != DpoStatus.running:
                raise AlphaloopError(f"DPO run {run_id!r} is not running in {self._journal.path}")
            stamp = now()
            row.update(status=DpoStatus(status).value, finished_at=stamp)
            row.setdefault("elapsed_s", seconds_between(found[1], stamp))
            self._journal.db["dpo_runs"].update(run_id, row)
        return self.get_dpo_run(run_id)

    def get_dpo_run(self, run_id: int) -> DpoRunRecord:
        rows = self._journal._rows("SELECT * FROM dpo_runs WHERE id = ?", (run_id,))
        if not rows:
            raise AlphaloopError(f"no DPO run {run_id!r} in {self._journal.path}")
        return DpoRunRecord.from_row(rows[0])

    def dpo_runs(self) -> list[DpoRunRecord]:
        """Every DPO run and skipped check, newest first."""
        return [
            DpoRunRecord.from_row(r)
            for r in self._journal._rows("SELECT * FROM dpo_runs ORDER BY id DESC")
        ]

    def last_trained_id(self) -> int:
        """The newest pair id a finished DPO run trained on (0 when none has)."""
        rows = self._journal._rows(
            "SELECT MAX(last_preference_id) AS last FROM dpo_runs WHERE status = 'finished'"
        )
        return int(rows[0]["last"] or 0)


def _dpo_column(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in DpoRunRecord.json_fields:
        return dumps(value)
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, bool):
        return int(value)
    return value
