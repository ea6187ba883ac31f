"""Several connections and processes on one journal: no lost index, no "database is locked"."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from journal_helpers import new_session, new_trial, run_python

from alphaloop.exceptions import AlphaloopError
from alphaloop.journal import Journal


def test_two_journals_in_one_process_share_indexes(journal_path: Path) -> None:
    with Journal(journal_path) as a, Journal(journal_path) as b:
        sid = new_session(a)
        rows = [new_trial(a if i % 2 else b, sid) for i in range(10)]
        assert [r.idx for r in rows] == list(range(10))
        assert (
            [t.idx for t in a.trials.of_session(sid)]
            == [t.idx for t in b.trials.of_session(sid)]
            == list(range(10))
        )


def test_a_second_journal_in_one_process_keeps_the_first_ones_locks(journal_path: Path) -> None:
    """Opening (and closing) a second journal on the same file must not release the locks the
    first connection holds: another process closing its last connection would then take the
    WAL away from under it (the first connection's next read fails with a disk I/O error)."""
    wal = journal_path.with_name(journal_path.name + "-wal")
    with Journal(journal_path) as owner:
        sid = new_session(owner)
        with Journal(journal_path) as poll:
            poll.sessions.get(sid)
        other = run_python(
            "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\n"
            "c.execute('SELECT COUNT(*) FROM sessions').fetchone()\nc.close()",
            str(journal_path),
        )
        assert other.returncode == 0, other.stderr
        assert wal.exists()  # the other process saw a connection still open: it left the WAL
        new_trial(owner, sid)
        assert len(owner.trials.of_session(sid)) == 1


def test_stop_requested_from_another_connection_is_seen(journal_path: Path) -> None:
    with Journal(journal_path) as owner:
        sid = new_session(owner)
        t = new_trial(owner, sid)
        with Journal(journal_path) as cli:
            cli.sessions.request_stop(sid)
        assert owner.sessions.stop_requested(sid)
        owner.trials.finish(t.id, status="keep", objective=1.0)  # the owner goes on writing
        assert owner.sessions.get(sid).status == "stopping"


def test_two_processes_starting_trials_get_distinct_indexes(journal_path: Path) -> None:
    with Journal(journal_path) as j:
        sid = new_session(j)
    code = (
        "import sys\nfrom alphaloop.journal import Journal\n"
        "with Journal(sys.argv[1]) as j:\n"
        "    for _ in range(15):\n"
        "        t = j.trials.start(sys.argv[2], kind='search', config={}, config_hash=None,"
        " delta={}, parent_id=None, seed=0, rationale=None, proposer=sys.argv[3])\n"
        "        j.trials.finish(t.id, status='discard', objective=0.0)\n"
    )
    results: list = [None, None]

    def worker(i: int) -> None:
        results[i] = run_python(code, str(journal_path), sid, f"p{i}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for proc in results:
        assert proc.returncode == 0, proc.stderr
    with Journal(journal_path) as j:
        trials = j.trials.of_session(sid)
        assert sorted(t.idx for t in trials) == list(range(30))
        assert {t.proposer for t in trials} == {"p0", "p1"}
        assert j.trials.counted(sid) == 30


@pytest.fixture
def held_write(journal_path: Path):
    """A writer in the middle of a transaction (an uncommitted session row) on the journal."""
    with Journal(journal_path) as j:
        committed = new_session(j)
    conn = sqlite3.connect(journal_path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("UPDATE sessions SET goal = 'uncommitted' WHERE id = ?", (committed,))
    yield conn, committed
    if conn.in_transaction:
        conn.execute("ROLLBACK")
    conn.close()


def test_a_reader_in_another_process_is_not_blocked_by_a_writer(
    journal_path: Path, held_write
) -> None:
    _, committed = held_write
    code = (
        "import json, sys\nfrom alphaloop.journal import Journal\n"
        "with Journal(sys.argv[1], busy_timeout_s=1) as j:\n"
        "    print(json.dumps([s.model_dump(mode='json') for s in j.sessions.list()]))\n"
    )
    started = time.monotonic()
    proc = run_python(code, str(journal_path))
    assert proc.returncode == 0, proc.stderr
    assert "locked" not in proc.stderr
    [session] = json.loads(proc.stdout)
    assert session["id"] == committed and session["goal"] != "uncommitted"  # last commit only
    assert time.monotonic() - started < 20


def test_a_second_writer_waits_for_the_first(journal_path: Path, held_write) -> None:
    conn, sid = held_write
    errors: list[BaseException] = []

    def write() -> None:
        try:
            with Journal(journal_path, busy_timeout_s=10) as j:
                j.logs.add_event(sid, "Waited", {})
        except BaseException as err:
            errors.append(err)

    th = threading.Thread(target=write)
    th.start()
    time.sleep(0.3)
    assert th.is_alive()  # queued on the busy timeout, not failed
    conn.execute("COMMIT")
    th.join(timeout=10)
    assert not th.is_alive() and errors == []
    with Journal(journal_path) as j:
        assert [e.kind for e in j.logs.events(sid)] == ["Waited"]
        assert j.sessions.get(sid).goal == "uncommitted"


def test_a_writer_locked_out_too_long_gets_a_journal_error(journal_path: Path, held_write) -> None:
    _, sid = held_write
    with Journal(journal_path, busy_timeout_s=0.2) as j:
        with pytest.raises(AlphaloopError, match="stayed locked by another writer"):
            j.logs.add_event(sid, "Late", {})
        assert j.sessions.get(sid).goal != "uncommitted"  # reads still work
