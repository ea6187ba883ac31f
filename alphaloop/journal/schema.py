"""The journal's tables, indexes and schema version; :mod:`.migrations` brings an old journal up
to date.

The version lives in ``PRAGMA user_version`` and the file is marked as ours by
``PRAGMA application_id``; both sit in the database header, so they are written in the same
transaction as the tables. JSON columns are TEXT holding JSON (Python's dialect: ``NaN`` and
``Infinity`` are kept, since metrics of degenerate series can be non-finite).

To change the schema: bump :data:`SCHEMA_VERSION`, edit the DDL below so a new journal is
created at the new version directly, and add ``MIGRATIONS[old] = fn`` taking a journal at
version ``old`` to ``old + 1`` in :mod:`.migrations`. Migrations run in the transaction that opens
the journal.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

SCHEMA_VERSION = 14
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

# Walks (schema 14): the research loop replayed over history, one session per epoch
# (``alphaloop.walk``). ``walk_epochs`` links each epoch's session to its walk, written in the
# transaction that creates the session, and holds what the epoch traded once it has; a session
# belongs to at most one epoch. ``walk_returns``: search trials' daily returns over the period
# after their epoch (and the one after that), which none of them saw.
WALK_TABLES: dict[str, str] = {
    "walks": """
        CREATE TABLE walks (
            id TEXT PRIMARY KEY,
            goal TEXT NOT NULL,
            spec TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed')),
            owner_pid INTEGER,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            finished_at TEXT,
            report TEXT,
            error TEXT
        )""",
    "walk_epochs": """
        CREATE TABLE walk_epochs (
            walk_id TEXT NOT NULL REFERENCES walks(id),
            epoch INTEGER NOT NULL CHECK (epoch >= 0),
            session_id TEXT NOT NULL UNIQUE REFERENCES sessions(id),
            first_day TEXT NOT NULL,
            last_day TEXT NOT NULL,
            result TEXT,
            created_at TEXT NOT NULL,
            PRIMARY KEY (walk_id, epoch)
        )""",
    "walk_returns": """
        CREATE TABLE walk_returns (
            walk_id TEXT NOT NULL REFERENCES walks(id),
            trial_id INTEGER NOT NULL REFERENCES trials(id),
            epoch INTEGER NOT NULL,
            returns TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (trial_id, epoch)
        )""",
}
TABLES.update(WALK_TABLES)
WALK_INDEXES: tuple[str, ...] = (
    "CREATE INDEX idx_walks_created ON walks (created_at)",
    "CREATE INDEX idx_walk_returns_walk ON walk_returns (walk_id, epoch)",
)

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
    *WALK_INDEXES,
)


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
    if version < 14:
        expected -= set(WALK_TABLES)
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
