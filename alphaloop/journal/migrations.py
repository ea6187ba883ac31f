"""How an old journal is brought up to date: ``MIGRATIONS[v]`` takes a journal at schema
version ``v`` to ``v + 1``, and :func:`migrate` runs them in turn, in the transaction that
opens the journal (a failed step leaves the journal at its old version). The tables and indexes
a migration creates are :mod:`.schema`'s, so a migrated journal and a new one are alike.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

from alphaloop.exceptions import AlphaloopError
from alphaloop.journal import schema
from alphaloop.journal.schema import (
    CONFIG_INDEXES,
    FOLD_INDEXES,
    FOLD_TABLES,
    INDEXES,
    JOB_INDEXES,
    JOB_TABLES,
    LOOP_INDEXES,
    LOOP_TABLES,
    PAGE_INDEXES,
    REVISION_DDL,
    REVISION_TABLES,
    TABLES,
    TICK_INDEXES,
    TICK_TABLES,
    WALK_INDEXES,
    WALK_TABLES,
)

Migration = Callable[[sqlite3.Connection], None]

# The only reasons a limit ever wrote (``Objective.violation``), as LIKE patterns.
_LIMIT_REASONS = ("max drawdown % exceeds the limit %", "annual turnover % exceeds the limit %")


def _add_env_steps_and_violation(conn: sqlite3.Connection) -> None:
    """Schema 1 -> 2: ``trials.env_steps`` (PPO env steps actually trained, which SB3 rounds up
    to whole rollouts) and ``trials.violation`` (the limit a trial's metrics break, so a
    leaderboard can rank trials within the limits first).

    Env steps of old trials are unknown and stay NULL. A discarded search trial whose reason is
    a limit's message gets it as its violation; baselines were never checked against the limits
    in schema 1 and stay NULL (read as within them).
    """
    conn.execute("ALTER TABLE trials ADD COLUMN env_steps INTEGER")
    conn.execute("ALTER TABLE trials ADD COLUMN violation TEXT")
    conn.execute(
        "UPDATE trials SET violation = reason WHERE kind = 'search' AND status = 'discard' "
        f"AND ({' OR '.join('reason LIKE ?' for _ in _LIMIT_REASONS)})",
        _LIMIT_REASONS,
    )


# The trials columns of schema 2, in table order: what schema 3 copies from an older table.
_SCHEMA_2_TRIAL_COLUMNS = (
    "id, session_id, idx, kind, status, counted, proposer, config, config_hash, delta, "
    "parent_id, seed, objective, metrics, baselines, val_returns, final_weights, elapsed_s, "
    "rationale, reason, error, traceback_tail, policy_path, owner_pid, started_at, finished_at, "
    "curve, env_steps, violation"
)


def _add_confirmations(conn: sqlite3.Connection) -> None:
    """Schema 2 -> 3: trials of kind ``confirm`` (a candidate re-run on fresh seeds before it is
    kept), and ``trials.n_seeds`` / ``trials.seed_mean`` (the seeds a confirmed search trial ran
    on and the mean objective over them).

    SQLite cannot change a CHECK constraint in place, so ``trials`` is rebuilt the way the SQLite
    manual describes (https://www.sqlite.org/lang_altertable.html, "other kinds of table schema
    changes"): create the new table, copy the rows, drop the old one, rename, re-create its
    indexes. Foreign keys are not yet enforced on the connection while it migrates (they are
    switched on after), so dropping the referenced table is allowed. Old trials ran on one seed:
    their new columns stay NULL.
    """
    conn.execute(TABLES["trials"].replace("CREATE TABLE trials", "CREATE TABLE trials_v3", 1))
    conn.execute(
        f"INSERT INTO trials_v3 ({_SCHEMA_2_TRIAL_COLUMNS}) "
        f"SELECT {_SCHEMA_2_TRIAL_COLUMNS} FROM trials"
    )
    conn.execute("DROP TABLE trials")
    conn.execute("ALTER TABLE trials_v3 RENAME TO trials")
    for ddl in INDEXES:
        if " ON trials " in ddl:
            conn.execute(ddl)


def _add_the_continuous_loop(conn: sqlite3.Connection) -> None:
    """Schema 3 -> 4: ``trials.prompt`` (the exact prompt an LLM proposal was made from) and the
    tables of the continuous loop (:data:`LOOP_TABLES`). Old trials keep a NULL prompt. (A
    journal migrated from schema 2 already has the column: step 2 -> 3 rebuilds ``trials`` from
    today's definition.)"""
    columns = {r[1] for r in conn.execute("PRAGMA table_info(trials)")}
    if "prompt" not in columns:
        conn.execute("ALTER TABLE trials ADD COLUMN prompt TEXT")
    for ddl in (*LOOP_TABLES.values(), *LOOP_INDEXES):
        conn.execute(ddl)


def _add_evaluator_versions_and_outcomes(conn: sqlite3.Connection) -> None:
    """Schema 4 -> 5: ``evaluator_version`` on trials, replays and decisions (which version of
    the frozen evaluator produced their numbers; NULL for rows written before it was recorded),
    and ``trials.outcome``: what a finished search trial produced while it awaits its verdict,
    so a resumed session gives that verdict from the journal instead of running it again
    (cleared once the verdict is journaled)."""
    # A journal migrated from an older schema may have them already: earlier steps build
    # ``trials`` and the loop's tables from today's definitions.
    for table, column in (
        ("trials", "evaluator_version"),
        ("trials", "outcome"),
        ("replays", "evaluator_version"),
        ("decisions", "evaluator_version"),
    ):
        if column not in {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")


def _create_missing(conn: sqlite3.Connection, ddls: Sequence[str]) -> None:
    """Runs each ``CREATE TABLE|INDEX|TRIGGER name ...`` of ``ddls`` whose name the journal does
    not have yet: a migration that runs twice creates nothing twice."""
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    for ddl in ddls:
        if ddl.split()[2] not in names:
            conn.execute(ddl)


def _add_jobs(conn: sqlite3.Connection) -> None:
    """Schema 5 -> 6: the ``jobs`` table (:data:`JOB_TABLES`), empty: work started before it
    existed was never journaled as a job. A journal an earlier step rebuilt from today's
    definitions has it already."""
    _create_missing(conn, (*JOB_TABLES.values(), *JOB_INDEXES))


def _add_llm_call_mode(conn: sqlite3.Connection) -> None:
    """Schema 6 -> 7: ``llm_calls.mode`` (how the answer was asked for: ``tools``,
    ``json_schema``, ``json_text`` or ``text``) and ``llm_calls.finish_reason`` (``length`` when
    the max_tokens cap cut the reply). Calls journaled before stay NULL: their mode is unknown."""
    columns = {r[1] for r in conn.execute("PRAGMA table_info(llm_calls)")}
    for column in ("mode", "finish_reason"):
        if column not in columns:
            conn.execute(f"ALTER TABLE llm_calls ADD COLUMN {column} TEXT")


def _add_exactly_once_ticks(conn: sqlite3.Connection) -> None:
    """Schema 7 -> 8: the pending ticks and the halt/resume events of the portfolio manager's
    books (:data:`TICK_TABLES`), empty: no tick before them was left half done on purpose, and
    halts before them were not journaled."""
    _create_missing(conn, (*TICK_TABLES.values(), *TICK_INDEXES))


def _add_trial_folds(conn: sqlite3.Connection) -> None:
    """Schema 8 -> 9: the ``trial_folds`` table (:data:`FOLD_TABLES`), empty: trials before it
    were scored on VALIDATION alone, whose returns their own row keeps."""
    _create_missing(conn, (*FOLD_TABLES.values(), *FOLD_INDEXES))


def _add_dpo_lengths(conn: sqlite3.Connection) -> None:
    """Schema 9 -> 10: what a DPO run measured of its pairs and its held-out accuracy:
    ``max_length`` (tokens), ``lengths`` (JSON: prompt tokens after fitting, the longest
    sequence, pairs and history entries cut) and the accuracy's 95% Wilson interval. Runs
    journaled before stay NULL: they trained at a fixed 1024 tokens and measured none of it."""
    columns = {r[1] for r in conn.execute("PRAGMA table_info(dpo_runs)")}
    for column, kind in (
        ("accuracy_after_low", "REAL"),
        ("accuracy_after_high", "REAL"),
        ("max_length", "INTEGER"),
        ("lengths", "TEXT"),
    ):
        if column not in columns:
            conn.execute(f"ALTER TABLE dpo_runs ADD COLUMN {column} {kind}")


def _add_page_indexes(conn: sqlite3.Connection) -> None:
    """Schema 10 -> 11: the covering indexes of the page's reads (:data:`PAGE_INDEXES`); no
    data changes."""
    _create_missing(conn, PAGE_INDEXES)


def _add_trial_revisions(conn: sqlite3.Connection) -> None:
    """Schema 11 -> 12: the ``trial_revisions`` table and its triggers (:data:`REVISION_DDL`),
    every existing trial at a revision of its journal id (increasing within each session), and
    the index of a session's trials by config (:data:`CONFIG_INDEXES`)."""
    _create_missing(conn, (*REVISION_TABLES.values(), *REVISION_DDL, *CONFIG_INDEXES))
    conn.execute(
        "INSERT OR IGNORE INTO trial_revisions (trial_id, session_id, rev) "
        "SELECT id, session_id, id FROM trials"
    )


def _add_where_trials_ran(conn: sqlite3.Connection) -> None:
    """Schema 12 -> 13: ``trials.ran_on``, where a trial ran (``local``, or a Ray cluster's
    ``ray:HOST:PORT`` or ``ray://HOST:PORT``), since a resumed session can move between
    clusters and this machine. Trials journaled before stay NULL: where they ran was not
    recorded."""
    _add_missing_columns(conn, "trials", {"ran_on": "TEXT"})


def _add_walks(conn: sqlite3.Connection) -> None:
    """Schema 13 -> 14: the walk tables (:data:`.schema.WALK_TABLES`): walks, their epochs'
    sessions and results, and the search trials' returns over the periods after their epoch."""
    _create_missing(conn, (*WALK_TABLES.values(), *WALK_INDEXES))


def _add_missing_columns(conn: sqlite3.Connection, table: str, columns: dict[str, str]) -> None:
    """Adds each of ``columns`` (name -> SQL type) ``table`` lacks: a journal an earlier step
    rebuilt from today's definitions has them already, and nothing is added twice."""
    have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
    for name, kind in columns.items():
        if name not in have:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")


# MIGRATIONS[v] takes a journal at schema version v to v + 1.
MIGRATIONS: dict[int, Migration] = {
    1: _add_env_steps_and_violation,
    2: _add_confirmations,
    3: _add_the_continuous_loop,
    4: _add_evaluator_versions_and_outcomes,
    5: _add_jobs,
    6: _add_llm_call_mode,
    7: _add_exactly_once_ticks,
    8: _add_trial_folds,
    9: _add_dpo_lengths,
    10: _add_page_indexes,
    11: _add_trial_revisions,
    12: _add_where_trials_ran,
    13: _add_walks,
}


def migrate(conn: sqlite3.Connection, from_version: int) -> None:
    """Brings a journal from ``from_version`` to ``schema.SCHEMA_VERSION``, one step at a time.

    Run inside a write transaction: a failed step leaves the journal at its old version.
    """
    for v in range(from_version, schema.SCHEMA_VERSION):
        if v not in MIGRATIONS:
            raise AlphaloopError(f"no migration from journal schema {v} to {v + 1}")
        MIGRATIONS[v](conn)
    conn.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION}")
