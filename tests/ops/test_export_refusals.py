"""What ``export_optuna`` refuses, and what it leaves when it refuses or fails: bad input writes
nothing, an export into an Optuna journal file is whole or absent, and two exports of one study
at once add each trial once (a journal file) or are refused and repaired (a database)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.storages.journal import JournalFileBackend

from alphaloop.exceptions import Conflict, InvalidRequest
from alphaloop.journal import Journal
from alphaloop.ops import _optuna_journal
from alphaloop.ops.export import export_optuna
from alphaloop.settings import Settings
from tests.ops.optuna_export import opened, session, start
from tests.ops.optuna_export import study as _study


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def test_bad_input_writes_nothing(
    settings: Settings, journal: Journal, fates: dict[str, Any], tmp_path: Path
) -> None:
    sid = fates["sid"]
    target = tmp_path / "study.log"
    with pytest.raises(InvalidRequest, match="no session 's-nope'"):
        export_optuna(settings, "s-nope", str(target))
    assert not target.exists()
    (tmp_path / "folder").mkdir()
    (tmp_path / "cut.log").write_bytes(b'{"op_code": 0, "worker_id": "w"')
    (tmp_path / "other.jsonl").write_text('{"a": 1}\n')
    (tmp_path / "notes.txt").write_text("not json\n")
    sqlite3.connect(tmp_path / "data.db").execute("CREATE TABLE t (x)").connection.close()
    before = _files(tmp_path)
    refused = {
        "": "must not be blank",
        "not a url://": "not a database URL",
        "nosuchdb://x": "Optuna refused the storage",
        str(tmp_path / "missing" / "s.log"): "no directory",
        f"sqlite:///{tmp_path}/missing/s.db": "Optuna refused the storage",
        str(tmp_path / "folder"): "is a directory",
        str(tmp_path / "cut.log"): "its last line is cut",
        str(tmp_path / "other.jsonl"): "not an Optuna journal file",
        str(tmp_path / "notes.txt"): "not an Optuna journal file",
        str(tmp_path / "data.db"): "give it as sqlite:///",
        str(settings.journal_path): "alphaloop's own journal",
        f"sqlite:///{settings.journal_path}": "alphaloop's own journal",
    }
    for storage, why in refused.items():
        with pytest.raises(InvalidRequest, match=why):
            export_optuna(settings, sid, storage)
    assert _files(tmp_path) == before
    assert not (tmp_path / "missing").exists() and list((tmp_path / "folder").iterdir()) == []
    # A study of that name holding another session's export is left as it is.
    other = session(journal)
    export_optuna(settings, other, str(target), study_name="shared")
    written = target.read_bytes()
    with pytest.raises(InvalidRequest, match="choose another --study-name"):
        export_optuna(settings, sid, str(target), study_name="shared")
    assert target.read_bytes() == written
    assert _study(str(target), "shared").user_attrs["alphaloop_session_id"] == other


def test_an_export_failing_half_way_writes_nothing(
    settings: Settings, fates: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure before the append leaves no file; one during it (half the bytes written) is
    cut back off the file, which then reads as before."""
    sid = fates["sid"]
    path = tmp_path / "study.log"

    def failing(*args: Any) -> None:
        raise OSError("disk full")

    with monkeypatch.context() as m:
        m.setattr(optuna.Study, "add_trials", failing)
        with pytest.raises(OSError, match="disk full"):
            export_optuna(settings, sid, str(path))
    assert not path.exists()

    class HalfWritten(JournalFileBackend):
        def append_logs(self, logs: list[dict[str, Any]]) -> None:
            with open(self._file_path, "ab") as f:
                f.write(b'{"op_code": 4, "worker_id": "half')
            raise OSError("disk full")

    for present in (False, True):
        if present:
            export_optuna(settings, sid, str(path), study_name="first")
        before = path.read_bytes() if present else None
        with monkeypatch.context() as m:
            m.setattr(_optuna_journal, "JournalFileBackend", HalfWritten)
            with pytest.raises(OSError, match="disk full"):
                export_optuna(settings, sid, str(path))
        assert (path.read_bytes() if path.exists() else None) == before
    export_optuna(settings, sid, str(path))
    assert len(_study(str(path), sid).trials) == 6
    assert sorted(optuna.get_all_study_names(opened(str(path)))) == sorted(["first", sid])
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "home") == ["study.log"]


def _meanwhile(monkeypatch: pytest.MonkeyPatch, times: int, write: Any) -> None:
    """Runs ``write()`` (another writer of the file) just before each of the first ``times``
    appends of an export."""
    commit = _optuna_journal._Staged.commit
    left = [times]

    def racing(self: Any, scratch: Path) -> bool:
        if left[0]:
            left[0] -= 1
            write()
        return commit(self, scratch)

    monkeypatch.setattr(_optuna_journal._Staged, "commit", racing)


def test_a_journal_file_appended_meanwhile_is_read_again(
    settings: Settings, fates: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer appends between the export's read and its append: the export reads the
    file again and writes its study once, after the other's; when the other keeps appending,
    the export is refused, having written nothing."""
    sid, path = fates["sid"], str(tmp_path / "study.log")
    n = iter(range(100))
    other = optuna.create_study(storage=opened(path), study_name="other")

    def write() -> None:
        other.add_trial(optuna.trial.create_trial(value=float(next(n))))

    _meanwhile(monkeypatch, 2, write)
    done = export_optuna(settings, sid, path)
    assert done.added == 6 and len(_study(path, sid).trials) == 6
    assert [t.value for t in _study(path, "other").trials] == [0.0, 1.0]
    _meanwhile(monkeypatch, _optuna_journal.ATTEMPTS, write)
    with pytest.raises(Conflict, match="nothing was written"):
        export_optuna(settings, sid, path, study_name="second")
    assert "second" not in optuna.get_all_study_names(opened(path))


def _at_once(settings: Settings, sid: str, storage: str) -> list[Any]:
    """Two threads exporting ``sid`` into ``storage`` at the same moment: what each returned,
    or the Conflict it raised."""
    start = threading.Barrier(2)
    done: list[Any] = []

    def export() -> None:
        start.wait()
        try:
            done.append(export_optuna(settings, sid, storage))
        except Conflict as err:
            done.append(err)

    threads = [threading.Thread(target=export) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done


def _late_trial(settings: Settings, journal: Journal, sid: str, storage: str) -> None:
    """``sid`` exported, then one more trial journaled: the next export adds one."""
    export_optuna(settings, sid, storage)
    late = start(journal, sid, cvar_alpha=0.95)
    journal.trials.finish(late.id, status="discard", objective=0.1)


@pytest.mark.parametrize("first", [True, False], ids=["new study", "update"])
def test_two_exports_into_a_journal_file_at_once_add_each_trial_once(
    settings: Settings, journal: Journal, fates: dict[str, Any], tmp_path: Path, first: bool
) -> None:
    """One appends; the other finds the file changed, reads it again and finds every trial."""
    sid, path = fates["sid"], str(tmp_path / "study.log")
    if not first:
        _late_trial(settings, journal, sid, path)
    done = _at_once(settings, sid, path)
    assert sorted(d.added for d in done) == [0, 6 if first else 1]
    study = _study(path, sid)
    assert len(study.trials) == (6 if first else 7)
    assert len({t.user_attrs["alphaloop_trial_id"] for t in study.trials}) == len(study.trials)
    assert sorted(t.number for t in study.trials) == list(range(len(study.trials)))


@pytest.mark.parametrize("first", [True, False], ids=["new study", "update"])
def test_two_exports_into_a_database_at_once_never_both_succeed_on_a_twice_added_trial(
    settings: Settings, journal: Journal, fates: dict[str, Any], tmp_path: Path, first: bool
) -> None:
    """A database gets each trial in its own commit: two exports at once may both add one. Then
    at least one of them is refused, and the next export writes the study again, each trial
    once."""
    sid, url = fates["sid"], f"sqlite:///{tmp_path / 'study.db'}"
    if not first:
        _late_trial(settings, journal, sid, url)
    done = _at_once(settings, sid, url)
    study = _study(url, sid)
    ids = [t.user_attrs["alphaloop_trial_id"] for t in study.trials]
    if len(set(ids)) != len(ids):
        assert any(isinstance(d, Conflict) for d in done), done
    for d in done:
        assert not isinstance(d, Conflict) or "run this export again" in str(d)
    export_optuna(settings, sid, url)
    study = _study(url, sid)
    assert len(study.trials) == (6 if first else 7)
    assert len({t.user_attrs["alphaloop_trial_id"] for t in study.trials}) == len(study.trials)
    assert sorted(t.number for t in study.trials) == list(range(len(study.trials)))
