"""The journal's tables, indexes and schema version, and how an old journal is brought up to date.

The version lives in ``PRAGMA user_version`` and the file is marked as ours by
``PRAGMA application_id``; both sit in the database header, so they are written in the same
transaction as the tables. JSON columns are TEXT holding JSON (Python's dialect: ``NaN`` and
``Infinity`` are kept, since metrics of degenerate series can be non-finite).

To change the schema: bump :data:`SCHEMA_VERSION`, edit the DDL below so a new journal is
created at the new version directly, and add ``MIGRATIONS[old] = fn`` taking a journal at
version ``old`` to ``old + 1``. Migrations run in the transaction that opens the journal.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from alphaloop.exceptions import JournalError

SCHEMA_VERSION = 13
# "ALPL" in ASCII: marks the file as an alphaloop journal in the SQLite header.
APPLICATION_ID = 0x414C504C
SQLITE_MAGIC = b"SQLite format 3\x00"

TABLES: dict[str, str] = {
    "sessions": """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            goal TEXT NOT NULL,
            mode TEXT NOT NULL,
            objective TEXT NOT NULL,
            proposer TEXT NOT NULL,
            budget INTEGER NOT NULL,
            time_budget_s REAL,
            max_tokens_total INTEGER,
            seed INTEGER NOT NULL,
            data_source TEXT NOT NULL,
            data_fingerprint TEXT,
            settings TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN
                ('running', 'stopping', 'finished', 'failed', 'interrupted')),
            owner_pid INTEGER,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            finished_at TEXT,
            noise_floor REAL,
            best_trial_id INTEGER,
            baseline_config TEXT NOT NULL,
            final TEXT,
            error TEXT
        )""",
    "trials": """
        CREATE TABLE trials (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id),
            idx INTEGER NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('baseline', 'search', 'confirm', 'test')),
            status TEXT NOT NULL CHECK (status IN
                ('running', 'keep', 'discard', 'crash', 'timeout', 'invalid')),
            counted INTEGER NOT NULL DEFAULT 0 CHECK (counted IN (0, 1)),
            proposer TEXT,
            config TEXT NOT NULL,
            config_hash TEXT,
            delta TEXT NOT NULL,
            parent_id INTEGER REFERENCES trials(id),
            seed INTEGER,
            objective REAL,
            metrics TEXT,
            baselines TEXT,
            val_returns TEXT,
            final_weights TEXT,
            elapsed_s REAL,
            rationale TEXT,
            reason TEXT,
            error TEXT,
            traceback_tail TEXT,
            policy_path TEXT,
            owner_pid INTEGER,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            curve TEXT,
            env_steps INTEGER,
            violation TEXT,
            n_seeds INTEGER,
            seed_mean REAL,
            prompt TEXT,
            evaluator_version TEXT,
            outcome TEXT,
            ran_on TEXT,
            UNIQUE (session_id, idx)
        )""",
    "bounds_clips": """
        CREATE TABLE bounds_clips (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            trial_id INTEGER NOT NULL REFERENCES trials(id),
            knob TEXT NOT NULL,
            proposed REAL NOT NULL,
            applied REAL NOT NULL,
            low REAL NOT NULL,
            high REAL NOT NULL,
            reason TEXT NOT NULL
        )""",
    "llm_calls": """
        CREATE TABLE llm_calls (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT REFERENCES sessions(id),
            trial_id INTEGER REFERENCES trials(id),
            purpose TEXT NOT NULL,
            model TEXT NOT NULL,
            prompt_tokens INTEGER NOT NULL DEFAULT 0,
            completion_tokens INTEGER NOT NULL DEFAULT 0,
            latency_s REAL NOT NULL,
            ok INTEGER NOT NULL CHECK (ok IN (0, 1)),
            error TEXT,
            created_at TEXT NOT NULL,
            mode TEXT,
            finish_reason TEXT
        )""",
    "events": """
        CREATE TABLE events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT REFERENCES sessions(id),
            kind TEXT NOT NULL,
            payload TEXT NOT NULL,
            created_at TEXT NOT NULL
        )""",
    "chart_reads": """
        CREATE TABLE chart_reads (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT REFERENCES sessions(id),
            trial_id INTEGER REFERENCES trials(id),
            kind TEXT NOT NULL,
            model TEXT NOT NULL,
            elapsed_s REAL,
            bullets TEXT NOT NULL,
            raw_text TEXT,
            context TEXT NOT NULL,
            created_at TEXT NOT NULL
        )""",
}

# Tables of the continuous loop (schema 4): the policy library, replays, the portfolio manager's
# books, decisions and fills, preference pairs, DPO runs and scheduled-job runs.
LOOP_TABLES: dict[str, str] = {
    "policies": """
        CREATE TABLE policies (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL CHECK (kind IN ('ppo', 'mean_cvar', 'unified')),
            source TEXT NOT NULL CHECK (source IN ('session', 'manual')),
            session_id TEXT NOT NULL REFERENCES sessions(id),
            trial_id INTEGER NOT NULL REFERENCES trials(id),
            mode TEXT NOT NULL,
            config TEXT NOT NULL,
            config_hash TEXT NOT NULL,
            seed INTEGER NOT NULL,
            data_fingerprint TEXT,
            symbols TEXT NOT NULL,
            data_spec TEXT NOT NULL,
            trial_budget TEXT NOT NULL,
            objective TEXT NOT NULL,
            val_objective REAL,
            val_metrics TEXT,
            test_metrics TEXT,
            gates_passed INTEGER CHECK (gates_passed IN (0, 1)),
            path TEXT,
            sha256 TEXT,
            created_at TEXT NOT NULL,
            UNIQUE (trial_id)
        )""",
    "replays": """
        CREATE TABLE replays (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            parent_trial_id INTEGER REFERENCES trials(id),
            parent_policy_id INTEGER REFERENCES policies(id),
            config_hash TEXT NOT NULL,
            start TEXT NOT NULL,
            end TEXT NOT NULL,
            data_source TEXT NOT NULL,
            data_fingerprint TEXT NOT NULL,
            metrics TEXT NOT NULL,
            returns TEXT NOT NULL,
            warning TEXT,
            evaluator_version TEXT,
            created_at TEXT NOT NULL,
            CHECK ((parent_trial_id IS NULL) != (parent_policy_id IS NULL))
        )""",
    "pm_books": """
        CREATE TABLE pm_books (
            name TEXT PRIMARY KEY,
            broker TEXT NOT NULL,
            initial_cash REAL NOT NULL,
            cash REAL NOT NULL,
            positions TEXT NOT NULL,
            peak_equity REAL NOT NULL,
            as_of TEXT,
            halted TEXT,
            purpose TEXT NOT NULL DEFAULT 'live' CHECK (purpose IN ('live', 'check')),
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )""",
    "decisions": """
        CREATE TABLE decisions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            book TEXT NOT NULL REFERENCES pm_books(name),
            date TEXT NOT NULL,
            policy_id INTEGER REFERENCES policies(id),
            status TEXT NOT NULL CHECK (status IN ('sent', 'halted', 'failed')),
            halt_reason TEXT,
            symbols TEXT NOT NULL,
            pre_weights TEXT,
            stages TEXT,
            target_weights TEXT,
            truncated INTEGER NOT NULL DEFAULT 0 CHECK (truncated IN (0, 1)),
            orders TEXT NOT NULL,
            fills TEXT NOT NULL,
            equity_before REAL,
            error TEXT,
            verdict TEXT CHECK (verdict IN ('approve', 'reject', 'override')),
            override_weights TEXT,
            note TEXT,
            decided_at TEXT,
            evaluator_version TEXT,
            created_at TEXT NOT NULL
        )""",
    "pm_fills": """
        CREATE TABLE pm_fills (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            book TEXT NOT NULL REFERENCES pm_books(name),
            decision_id INTEGER NOT NULL REFERENCES decisions(id),
            date TEXT NOT NULL,
            symbol TEXT NOT NULL,
            shares REAL NOT NULL,
            price REAL NOT NULL,
            cost REAL NOT NULL,
            broker_order_id TEXT,
            created_at TEXT NOT NULL
        )""",
    "preferences": """
        CREATE TABLE preferences (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            source TEXT NOT NULL CHECK (source IN ('pm', 'research')),
            origin_key TEXT NOT NULL UNIQUE,
            origin TEXT NOT NULL,
            prompt TEXT NOT NULL,
            chosen TEXT NOT NULL,
            rejected TEXT NOT NULL,
            margin REAL NOT NULL,
            labelled INTEGER NOT NULL CHECK (labelled IN (0, 1)),
            created_at TEXT NOT NULL
        )""",
    "dpo_runs": """
        CREATE TABLE dpo_runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'skipped')),
            model_dir TEXT,
            out_dir TEXT,
            lora INTEGER NOT NULL DEFAULT 0 CHECK (lora IN (0, 1)),
            max_steps INTEGER,
            n_train INTEGER,
            n_heldout INTEGER,
            last_preference_id INTEGER,
            accuracy_before REAL,
            accuracy_after REAL,
            accuracy_after_low REAL,
            accuracy_after_high REAL,
            max_length INTEGER,
            lengths TEXT,
            margin_before REAL,
            margin_after REAL,
            loss_curve TEXT,
            reward_margins TEXT,
            elapsed_s REAL,
            reason TEXT,
            error TEXT,
            owner_pid INTEGER,
            started_at TEXT NOT NULL,
            finished_at TEXT
        )""",
    "schedule_runs": """
        CREATE TABLE schedule_runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            job TEXT NOT NULL,
            trigger TEXT NOT NULL CHECK (trigger IN ('schedule', 'manual')),
            outcome TEXT NOT NULL CHECK (outcome IN ('running', 'ok', 'skipped', 'failed')),
            detail TEXT,
            error TEXT,
            started_at TEXT NOT NULL,
            finished_at TEXT
        )""",
}
TABLES.update(LOOP_TABLES)

# Long work the REST server hands to worker processes (schema 6): the typed job (``request``),
# where it is, and its typed result or error. ``pid`` is the worker's: a row left ``queued`` or
# ``running`` by a process that is gone reads as interrupted.
JOB_TABLES: dict[str, str] = {
    "jobs": """
        CREATE TABLE jobs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            request TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'finished', 'failed')),
            session_id TEXT,
            result TEXT,
            error_type TEXT,
            error TEXT,
            exit_code INTEGER,
            http_status INTEGER,
            traceback_tail TEXT,
            pid INTEGER,
            created_at TEXT NOT NULL,
            started_at TEXT,
            finished_at TEXT
        )""",
}
TABLES.update(JOB_TABLES)
JOB_INDEXES: tuple[str, ...] = ("CREATE INDEX idx_jobs_kind_status ON jobs (kind, status)",)

# Exactly-once ticks (schema 7). ``pm_pending``: the tick of a book whose orders are named and
# journaled but not yet settled (its decision's fields and its order plan, as JSON); written
# before the broker is called and removed in the transaction that journals the decision, so a
# row left behind is a tick the next one must finish first. ``pm_book_events``: who halted or
# resumed a book, why, and from where.
TICK_TABLES: dict[str, str] = {
    "pm_pending": """
        CREATE TABLE pm_pending (
            book TEXT PRIMARY KEY REFERENCES pm_books(name),
            date TEXT NOT NULL,
            fields TEXT NOT NULL,
            plan TEXT NOT NULL,
            peak_equity REAL NOT NULL,
            created_at TEXT NOT NULL
        )""",
    "pm_book_events": """
        CREATE TABLE pm_book_events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            book TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('halt', 'resume')),
            reason TEXT NOT NULL,
            origin TEXT NOT NULL CHECK (origin IN ('cli', 'api', 'scheduler', 'kill_switch')),
            created_at TEXT NOT NULL
        )""",
}
TABLES.update(TICK_TABLES)
TICK_INDEXES: tuple[str, ...] = (
    "CREATE INDEX idx_pm_book_events_book ON pm_book_events (book, id)",
)

# The folds a trial was scored on (schema 9): each fold's window, objective, metrics, result
# (the evaluator's, without its daily returns) and daily returns, so every statistic over folds
# can be recomputed from the journal. ``reused_from``
# names the fold row of an interrupted run of the same config and seed whose result this one
# carries over instead of running the fold again.
FOLD_TABLES: dict[str, str] = {
    "trial_folds": """
        CREATE TABLE trial_folds (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            trial_id INTEGER NOT NULL REFERENCES trials(id),
            fold INTEGER NOT NULL,
            n_folds INTEGER NOT NULL,
            start_date TEXT NOT NULL,
            end_date TEXT NOT NULL,
            objective REAL NOT NULL,
            metrics TEXT NOT NULL,
            result TEXT NOT NULL,
            returns TEXT NOT NULL,
            env_steps INTEGER,
            elapsed_s REAL NOT NULL,
            evaluator_version TEXT,
            reused_from INTEGER,
            created_at TEXT NOT NULL,
            UNIQUE (trial_id, fold)
        )""",
}
TABLES.update(FOLD_TABLES)
FOLD_INDEXES: tuple[str, ...] = ("CREATE INDEX idx_trial_folds_trial ON trial_folds (trial_id)",)

# Each trial's revision (schema 12): a number, increasing within its session, that triggers
# raise on every insert or update of the trial's row, whoever writes it. A reader holding the
# highest revision it has seen reads only the rows changed since (``Trials.changed``): the loop
# reads its history at every step, and reading the whole of it grew with the session. Kept
# beside the row rather than in it, so a change does not write the row (with its series) twice.
REVISION_TABLES: dict[str, str] = {
    "trial_revisions": """
        CREATE TABLE trial_revisions (
            trial_id INTEGER PRIMARY KEY REFERENCES trials(id),
            session_id TEXT NOT NULL,
            rev INTEGER NOT NULL
        )""",
}
TABLES.update(REVISION_TABLES)
_NEXT_REVISION = (
    "(SELECT COALESCE(MAX(rev), 0) + 1 FROM trial_revisions WHERE session_id = NEW.session_id)"
)
REVISION_DDL: tuple[str, ...] = (
    "CREATE INDEX idx_trial_revisions_session ON trial_revisions (session_id, rev)",
    "CREATE TRIGGER trial_revision_on_insert AFTER INSERT ON trials BEGIN "
    "INSERT INTO trial_revisions (trial_id, session_id, rev) "
    f"VALUES (NEW.id, NEW.session_id, {_NEXT_REVISION}); END",
    "CREATE TRIGGER trial_revision_on_update AFTER UPDATE ON trials BEGIN "
    f"UPDATE trial_revisions SET rev = {_NEXT_REVISION} WHERE trial_id = NEW.id; END",
)

# A config's trials in a session (schema 12): the loop looks them up as it proposes
# (``Trials.twin``) and starts a trial (``Folds.done_before``), which scanned the session's rows.
CONFIG_INDEXES: tuple[str, ...] = (
    "CREATE INDEX idx_trials_config ON trials (session_id, config_hash)",
)

# The page's reads of a long session without touching every trial's row (its series and
# prompt): the history chart and the count of budgeted trials from the index alone, and the
# first page in trial order (the expression is the one its ORDER BY puts empty values last by).
PAGE_INDEXES: tuple[str, ...] = (
    "CREATE INDEX idx_trials_history ON trials (session_id, idx, kind, status, objective)",
    "CREATE INDEX idx_trials_session_counted ON trials (session_id, counted)",
    "CREATE INDEX idx_trials_page ON trials (session_id, idx IS NULL, idx)",
)

LOOP_INDEXES: tuple[str, ...] = (
    "CREATE INDEX idx_policies_session ON policies (session_id)",
    "CREATE INDEX idx_replays_trial ON replays (parent_trial_id)",
    "CREATE INDEX idx_decisions_book_date ON decisions (book, date)",
    "CREATE INDEX idx_fills_decision ON pm_fills (decision_id)",
    "CREATE INDEX idx_preferences_source ON preferences (source, labelled)",
    "CREATE INDEX idx_schedule_runs_job ON schedule_runs (job, started_at)",
)

INDEXES: tuple[str, ...] = (
    "CREATE INDEX idx_sessions_created ON sessions (created_at)",
    "CREATE INDEX idx_trials_session_status ON trials (session_id, status)",
    "CREATE INDEX idx_trials_session_kind ON trials (session_id, kind)",
    "CREATE INDEX idx_clips_trial ON bounds_clips (trial_id)",
    "CREATE INDEX idx_llm_calls_session ON llm_calls (session_id)",
    "CREATE INDEX idx_events_session_kind ON events (session_id, kind)",
    "CREATE INDEX idx_chart_reads_session ON chart_reads (session_id)",
    *LOOP_INDEXES,
    *PAGE_INDEXES,
    *JOB_INDEXES,
    *TICK_INDEXES,
    *FOLD_INDEXES,
    *CONFIG_INDEXES,
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
}


def sniff(path: Path) -> str | None:
    """Why the file at ``path`` cannot be a journal, judged from its first bytes, or None.

    Reads the file without opening it as a database, so nothing can be written to it.
    """
    with path.open("rb") as f:
        header = f.read(100)
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        return "not an SQLite database"
    return None


def create(conn: sqlite3.Connection) -> None:
    """Creates every table and index and stamps the header. Run inside a write transaction."""
    for ddl in (*TABLES.values(), *INDEXES, *REVISION_DDL):
        conn.execute(ddl)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def problem(conn: sqlite3.Connection) -> str | None:
    """Why the open database is not an alphaloop journal, or None if it is one. Reads only."""
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if app_id != APPLICATION_ID or version < 1:
        found = ", ".join(sorted(names - {"sqlite_sequence"})) or "no tables"
        return f"an SQLite database of another application ({found})"
    if version > SCHEMA_VERSION:
        return None  # ours, but newer: the caller says so (its tables may differ from ours)
    expected = set(TABLES) - (set(JOB_TABLES) if version < 6 else set())
    if version < 12:
        expected -= set(REVISION_TABLES)
    if version < 9:
        expected -= set(FOLD_TABLES)
    if version < 8:
        expected -= set(TICK_TABLES)
    if version < 4:
        expected -= set(LOOP_TABLES)
    missing = sorted(expected - names)
    if missing:
        return f"tables missing: {', '.join(missing)}"
    return None


def version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, from_version: int) -> None:
    """Brings a journal from ``from_version`` to :data:`SCHEMA_VERSION`, one step at a time.

    Run inside a write transaction: a failed step leaves the journal at its old version.
    """
    for v in range(from_version, SCHEMA_VERSION):
        if v not in MIGRATIONS:
            raise JournalError(f"no migration from journal schema {v} to {v + 1}")
        MIGRATIONS[v](conn)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
