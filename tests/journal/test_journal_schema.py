"""Opening, creating, refusing and upgrading journal files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from journal_helpers import new_session, new_trial

from alphaloop.exceptions import AlphaloopError
from alphaloop.journal import SCHEMA_VERSION, Journal, migrations, schema
from alphaloop.spec import SessionSpec
from alphaloop.walk_spec import WalkSpec

TABLES = {"sessions", "trials", "bounds_clips", "llm_calls", "events", "chart_reads"}


def pragma(path: Path, name: str) -> object:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"PRAGMA {name}").fetchone()[0]
    finally:
        conn.close()


def test_a_new_journal_has_every_table_its_version_and_wal(journal_path: Path) -> None:
    assert not journal_path.parent.exists()
    with Journal(journal_path) as j:
        names = {r["name"] for r in j.db.query("SELECT name FROM sqlite_master WHERE type='table'")}
        indexes = {i.name for i in j.db["trials"].indexes}
    assert TABLES <= names
    assert {"idx_trials_session_status", "idx_trials_session_kind"} <= indexes
    assert pragma(journal_path, "user_version") == SCHEMA_VERSION
    assert pragma(journal_path, "application_id") == schema.APPLICATION_ID
    assert pragma(journal_path, "journal_mode") == "wal"


def test_reopening_keeps_the_rows(journal_path: Path) -> None:
    with Journal(journal_path) as j:
        sid = new_session(j)
    with Journal(journal_path) as j:
        assert [s.id for s in j.sessions.list()] == [sid]


def test_an_empty_file_becomes_a_journal(journal_path: Path) -> None:
    journal_path.parent.mkdir(parents=True)
    journal_path.touch()
    with Journal(journal_path) as j:
        assert j.sessions.list() == []
    assert pragma(journal_path, "user_version") == SCHEMA_VERSION


def test_create_false_refuses_a_missing_file(journal_path: Path) -> None:
    with pytest.raises(AlphaloopError, match="no journal at"):
        Journal(journal_path, create=False)
    assert not journal_path.exists()


def test_a_journal_from_a_newer_alphaloop_is_refused(journal_path: Path) -> None:
    Journal(journal_path).close()
    conn = sqlite3.connect(journal_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(AlphaloopError) as err:
        Journal(journal_path)
    assert (
        f"written by a newer alphaloop (schema {SCHEMA_VERSION + 1} > {SCHEMA_VERSION}); "
        "upgrade alphaloop"
    ) in str(err.value)
    assert isinstance(err.value, AlphaloopError)


@pytest.mark.parametrize(
    "content",
    [b"date,close\n2020-01-02,100.0\n" * 20, b"short", b"SQLite format 3\x00" + b"\xff" * 200],
    ids=["csv", "short-text", "corrupt-sqlite"],
)
def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "prices.csv"
    path.write_bytes(content)
    with pytest.raises(AlphaloopError, match=r"prices\.csv is not an alphaloop journal"):
        Journal(path)
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prices.csv"]


def test_an_sqlite_database_of_another_application_is_refused_and_left_untouched(
    tmp_path: Path,
) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.execute("INSERT INTO notes (body) VALUES ('keep me')")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(AlphaloopError, match=r"other\.db is not an alphaloop journal: .*notes"):
        Journal(path)
    assert path.read_bytes() == before
    assert pragma(path, "journal_mode") == "delete"


def test_a_file_marked_as_ours_but_missing_tables_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "half.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 1")
    conn.execute(schema.TABLES["sessions"])
    conn.commit()
    conn.close()
    with pytest.raises(AlphaloopError, match="tables missing: bounds_clips"):
        Journal(path)


def test_an_older_journal_is_migrated_on_open(
    journal_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Journal(journal_path) as j:
        sid = new_session(j)
    monkeypatch.setattr(schema, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    monkeypatch.setitem(
        migrations.MIGRATIONS,
        SCHEMA_VERSION,
        lambda conn: conn.execute("CREATE TABLE future (id INTEGER PRIMARY KEY)"),
    )
    with Journal(journal_path) as j:
        assert j.sessions.get(sid).id == sid
        assert "future" in j.db.table_names()
    assert pragma(journal_path, "user_version") == SCHEMA_VERSION + 1


def test_a_schema_1_journal_gains_env_steps_and_violations(journal_path: Path) -> None:
    limit = "max drawdown 31.0% exceeds the limit 15.0%"
    with Journal(journal_path) as j:
        sid = new_session(j)
        rows = [new_trial(j, sid, kind=k) for k in ("baseline", "search", "search", "search")]
        j.trials.finish(rows[0].id, status="keep", objective=1.0, reason="baseline")
        j.trials.finish(rows[1].id, status="discard", objective=2.0, reason=limit)
        j.trials.finish(rows[2].id, status="discard", objective=0.5, reason="does not beat best")
        j.trials.finish(rows[3].id, status="keep", objective=1.5, reason="beats best")
    # Back to what alphaloop wrote before schema 2: no such columns, version 1.
    conn = sqlite3.connect(journal_path)
    drop_the_continuous_loop(conn)
    for column in ("env_steps", "violation", "n_seeds", "seed_mean"):
        conn.execute(f"ALTER TABLE trials DROP COLUMN {column}")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with Journal(journal_path) as j:
        trials = j.trials.of_session(sid)
        assert [t.violation for t in trials] == [None, limit, None, None]
        assert all(t.env_steps is None for t in trials)
        assert [t.id for t in j.trials.leaderboard(sid)] == [rows[3].id, rows[0].id, rows[2].id,
                                                      rows[1].id]  # fmt: skip
    assert pragma(journal_path, "user_version") == SCHEMA_VERSION == 14


def drop_the_continuous_loop(conn: sqlite3.Connection) -> None:
    """Back to schema 3: no tables of the continuous loop, no ``trials.prompt``."""
    for name in reversed(list(schema.LOOP_TABLES)):
        conn.execute(f"DROP TABLE {name}")
    if "prompt" in {r[1] for r in conn.execute("PRAGMA table_info(trials)")}:
        conn.execute("ALTER TABLE trials DROP COLUMN prompt")


def test_a_schema_3_journal_gains_the_continuous_loop(journal_path: Path) -> None:
    with Journal(journal_path) as j:
        sid = new_session(j)
        row = new_trial(j, sid)
        j.trials.finish(row.id, status="keep", objective=1.5)
    conn = sqlite3.connect(journal_path)
    drop_the_continuous_loop(conn)
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    with Journal(journal_path) as j:
        assert j.trials.of_session(sid)[0].prompt is None
        assert set(schema.LOOP_TABLES) <= set(j.db.table_names())
        assert j.db.execute("PRAGMA foreign_key_check").fetchall() == []
    assert pragma(journal_path, "user_version") == SCHEMA_VERSION == 14


def test_a_schema_4_journal_gains_evaluator_versions_and_held_outcomes(
    journal_path: Path,
) -> None:
    with Journal(journal_path) as j:
        sid = new_session(j)
        row = new_trial(j, sid)
    conn = sqlite3.connect(journal_path)
    for table, column in (
        ("trials", "evaluator_version"),
        ("trials", "outcome"),
        ("replays", "evaluator_version"),
        ("decisions", "evaluator_version"),
    ):
        conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()
    with Journal(journal_path) as j:
        assert j.trials.get(row.id).evaluator_version is None
        j.trials.hold_outcome(row.id, '{"status": "ok"}')
        assert [(t.id, held) for t, held in j.trials.awaiting_verdict(sid)] == [
            (row.id, '{"status": "ok"}')
        ]
        assert j.trials.reap_interrupted(sid) == []  # judged on resume, not run again
        j.trials.finish(row.id, status="keep", objective=1.0, evaluator_version="1")
        assert (
            j.trials.awaiting_verdict(sid) == [] and j.trials.get(row.id).evaluator_version == "1"
        )
    assert pragma(journal_path, "user_version") == SCHEMA_VERSION == 14


def test_a_schema_5_journal_gains_the_jobs_table(journal_path: Path) -> None:
    with Journal(journal_path) as j:
        sid = new_session(j)
    conn = sqlite3.connect(journal_path)
    conn.execute("DROP TABLE jobs")
    conn.execute("PRAGMA user_version = 5")
    conn.commit()
    conn.close()
    with Journal(journal_path) as j:  # opens (the jobs table is not required at 5) and migrates
        assert j.sessions.get(sid).id == sid
        assert j.jobs.list() == []
        job_id = j.jobs.queue("pm_tick", {"kind": "pm_tick"})
        assert j.jobs.get(job_id).status == "queued"
        indexes = {i.name for i in j.db["jobs"].indexes}
    assert "idx_jobs_kind_status" in indexes
    assert pragma(journal_path, "user_version") == SCHEMA_VERSION == 14


def test_a_schema_7_journal_gains_pending_ticks_and_book_events(journal_path: Path) -> None:
    with Journal(journal_path) as j:
        j.books.create("main", "paper", 1000.0)
    conn = sqlite3.connect(journal_path)
    conn.execute("DROP TABLE pm_pending")
    conn.execute("DROP TABLE pm_book_events")
    conn.execute("PRAGMA user_version = 7")
    conn.commit()
    conn.close()
    with Journal(journal_path) as j:  # opens (neither table is required at 7) and migrates
        assert j.books.pending_tick("main") is None
        j.books.set_halt("main", "earnings", origin="api")
        j.books.set_halt("main", None, origin="cli", reason="earnings are out")
        events = [(e.kind, e.reason, e.origin) for e in j.books.events("main")]
        indexes = {i.name for i in j.db["pm_book_events"].indexes}
    assert events == [("resume", "earnings are out", "cli"), ("halt", "earnings", "api")]
    assert "idx_pm_book_events_book" in indexes
    assert pragma(journal_path, "user_version") == SCHEMA_VERSION == 14


def test_a_schema_9_journal_gains_dpo_lengths(journal_path: Path) -> None:
    with Journal(journal_path) as j:
        old = j.preferences.start_dpo_run(model_dir="m", out_dir="o", max_steps=4)
    conn = sqlite3.connect(journal_path)
    for column in ("accuracy_after_low", "accuracy_after_high", "max_length", "lengths"):
        conn.execute(f"ALTER TABLE dpo_runs DROP COLUMN {column}")
    conn.execute("PRAGMA user_version = 9")
    conn.commit()
    conn.close()
    with Journal(journal_path) as j:
        assert (
            j.preferences.get_dpo_run(old).max_length is None
            and j.preferences.get_dpo_run(old).lengths is None
        )
        run = j.preferences.finish_dpo_run(
            old, status="finished", max_length=512, lengths={"prompt_max": 300.0},
            accuracy_after=0.75, accuracy_after_low=0.5, accuracy_after_high=0.9,
        )  # fmt: skip
    assert run.max_length == 512 and run.lengths == {"prompt_max": 300.0}
    assert (run.accuracy_after_low, run.accuracy_after_high) == (0.5, 0.9)
    assert pragma(journal_path, "user_version") == SCHEMA_VERSION == 14


def schema_2_trials_ddl() -> str:
    """The ``trials`` table as schema 2 created it: no ``confirm`` kind, no seed columns."""
    ddl = schema.TABLES["trials"]
    for new in (
        ", 'confirm'",
        "\n            n_seeds INTEGER,",
        "\n            seed_mean REAL,",
        "\n            prompt TEXT,",
        "\n            evaluator_version TEXT,",
        "\n            outcome TEXT,",
    ):
        assert new in ddl
        ddl = ddl.replace(new, "", 1)
    return ddl.replace("CREATE TABLE trials", "CREATE TABLE trials_v2", 1)


def test_a_schema_2_journal_gains_confirmation_rows(journal_path: Path) -> None:
    with Journal(journal_path) as j:
        sid = new_session(j)
        base, search = new_trial(j, sid, kind="baseline"), new_trial(j, sid)
        j.trials.finish(base.id, status="keep", objective=1.0, reason="baseline")
        j.trials.finish(search.id, status="keep", objective=1.5, violation=None)
        j.logs.add_clips(search.id, [])
    # Back to schema 2: the trials table without the confirm kind and the seed columns.
    conn = sqlite3.connect(journal_path)
    drop_the_continuous_loop(conn)
    conn.execute(schema_2_trials_ddl())
    names = "id, session_id, idx, kind, status, counted, config, delta, objective, started_at"
    conn.execute(f"INSERT INTO trials_v2 ({names}) SELECT {names} FROM trials")
    conn.execute("DROP TABLE trials")
    conn.execute("ALTER TABLE trials_v2 RENAME TO trials")
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint"):
        conn.execute("UPDATE trials SET kind = 'confirm' WHERE id = ?", (search.id,))
    conn.close()
    with Journal(journal_path) as j:
        old = j.trials.of_session(sid)
        assert [(t.kind, t.objective, t.n_seeds, t.seed_mean) for t in old] == [
            ("baseline", 1.0, None, None),
            ("search", 1.5, None, None),
        ]
        row = new_trial(j, sid, kind="confirm", parent_id=search.id, seed=9)
        done = j.trials.finish(row.id, status="keep", objective=1.4)
        assert (done.kind, done.parent_id, done.counted) == ("confirm", search.id, False)
        assert j.trials.best(sid).id == search.id
        indexes = {r["name"] for r in j.db.query("SELECT name FROM sqlite_master")}
        assert {"idx_trials_session_status", "idx_trials_session_kind"} <= indexes
        assert j.db.execute("PRAGMA foreign_key_check").fetchall() == []
    assert pragma(journal_path, "user_version") == SCHEMA_VERSION == 14


def test_a_failed_migration_leaves_the_old_version(
    journal_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Journal(journal_path).close()
    monkeypatch.setattr(schema, "SCHEMA_VERSION", SCHEMA_VERSION + 1)

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE future (id INTEGER PRIMARY KEY)")
        conn.execute("SELECT * FROM no_such_table")

    monkeypatch.setitem(migrations.MIGRATIONS, SCHEMA_VERSION, broken)
    with pytest.raises(AlphaloopError, match="could not upgrade the journal"):
        Journal(journal_path)
    assert pragma(journal_path, "user_version") == SCHEMA_VERSION
    monkeypatch.undo()
    with Journal(journal_path) as j:  # still a valid journal at the old version
        assert "future" not in j.db.table_names()


def test_a_closed_journal_says_so(journal_path: Path) -> None:
    j = Journal(journal_path)
    j.close()
    j.close()  # idempotent
    with pytest.raises(AlphaloopError, match="is closed"):
        j.sessions.list()


def test_a_schema_6_journal_gains_the_mode_and_finish_reason_of_llm_calls(
    journal_path: Path,
) -> None:
    with Journal(journal_path) as j:
        sid = new_session(j)
        j.logs.add_llm_call(purpose="propose", model="m", latency_s=0.1, ok=True, session_id=sid)
    conn = sqlite3.connect(journal_path)
    conn.execute("ALTER TABLE llm_calls DROP COLUMN mode")
    conn.execute("ALTER TABLE llm_calls DROP COLUMN finish_reason")
    conn.execute("PRAGMA user_version = 6")
    conn.commit()
    conn.close()
    with Journal(journal_path) as j:
        (old,) = j.logs.llm_calls(sid)
        assert old.mode is None and old.finish_reason is None  # unknown before schema 7
        j.logs.add_llm_call(
            purpose="propose",
            model="m",
            latency_s=0.1,
            ok=True,
            session_id=sid,
            mode="json_schema",
            finish_reason="length",
        )
        new = j.logs.llm_calls(sid)[-1]
    assert (new.mode, new.finish_reason) == ("json_schema", "length")
    assert pragma(journal_path, "user_version") == SCHEMA_VERSION == 14


def test_a_schema_10_journal_gains_the_page_indexes(journal_path: Path) -> None:
    with Journal(journal_path) as j:
        sid = new_session(j)
        row = new_trial(j, sid)
    conn = sqlite3.connect(journal_path)
    for ddl in schema.PAGE_INDEXES:
        conn.execute(f"DROP INDEX {ddl.split()[2]}")
    conn.execute("PRAGMA user_version = 10")
    conn.commit()
    conn.close()
    with Journal(journal_path) as j:
        assert j.trials.get(row.id).session_id == sid
        indexes = {i.name for i in j.db["trials"].indexes}
    assert {"idx_trials_history", "idx_trials_session_counted", "idx_trials_page"} <= indexes
    assert pragma(journal_path, "user_version") == SCHEMA_VERSION == 14


def test_a_schema_11_journal_gains_trial_revisions(journal_path: Path) -> None:
    with Journal(journal_path) as j:
        a, b = new_session(j), new_session(j)
        rows = [new_trial(j, a), new_trial(j, b), new_trial(j, a)]
    conn = sqlite3.connect(journal_path)
    for ddl in (*reversed(schema.REVISION_DDL), *schema.CONFIG_INDEXES):
        conn.execute(f"DROP {ddl.split()[1]} {ddl.split()[2]}")
    conn.execute("DROP TABLE trial_revisions")
    conn.execute("PRAGMA user_version = 11")
    conn.commit()
    conn.close()
    with Journal(journal_path) as j:
        followed = j.trials.follow(a)
        assert [t.id for t in followed.rows()] == [rows[0].id, rows[2].id]
        # the triggers are back: a write after the upgrade is read as a change
        j.trials.finish(rows[0].id, status="keep", objective=1.0)
        changed = followed.rows()
        assert changed[0].status == "keep" and changed == j.trials.of_session(a, series=False)
        assert "idx_trials_config" in {i.name for i in j.db["trials"].indexes}
    assert pragma(journal_path, "user_version") == SCHEMA_VERSION == 14


def test_a_schema_12_journal_gains_where_trials_ran(journal_path: Path) -> None:
    with Journal(journal_path) as j:
        sid = new_session(j)
        old = new_trial(j, sid)
    conn = sqlite3.connect(journal_path)
    conn.execute("ALTER TABLE trials DROP COLUMN ran_on")
    conn.execute("PRAGMA user_version = 12")
    conn.commit()
    conn.close()
    with Journal(journal_path) as j:
        assert j.trials.get(old.id).ran_on is None  # not recorded before
        new = new_trial(j, sid, ran_on="ray:127.0.0.1:6379")
        assert j.trials.get(new.id).ran_on == "ray:127.0.0.1:6379"
    assert pragma(journal_path, "user_version") == SCHEMA_VERSION == 14


def test_a_schema_13_journal_gains_the_walk_tables(journal_path: Path) -> None:
    with Journal(journal_path) as j:
        sid = new_session(j)
    conn = sqlite3.connect(journal_path)
    for index in schema.WALK_INDEXES:
        conn.execute(f"DROP INDEX {index.split()[2]}")
    for table in ("walk_returns", "walk_epochs", "walks"):
        conn.execute(f"DROP TABLE {table}")
    conn.execute("PRAGMA user_version = 13")
    conn.commit()
    conn.close()
    with Journal(journal_path) as j:
        assert j.walks.list() == [] and j.walks.epoch_of(sid) is None
        walk = j.walks.create(goal="g", spec=WalkSpec(session=SessionSpec(goal="g")))
        assert [w.id for w in j.walks.list()] == [walk]
    assert pragma(journal_path, "user_version") == SCHEMA_VERSION == 14
