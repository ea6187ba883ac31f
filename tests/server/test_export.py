"""``GET /api/sessions/{id}/export/optuna``: the study ``alphaloop export optuna`` writes, as a
SQLite file to download; an unknown session is a 422 and leaves no file behind."""

from __future__ import annotations

from pathlib import Path

import httpx
import optuna

from alphaloop.journal import Journal
from alphaloop.settings import Settings
from tests.server.helpers import add_trials, live_server, new_session


def test_the_study_downloads_as_a_sqlite_file(settings: Settings, tmp_path: Path) -> None:
    settings.home.mkdir(parents=True)
    with Journal(settings.journal_path) as j:
        sid = new_session(j)
        add_trials(j, sid, 5)
    with live_server(settings) as base:
        got = httpx.get(f"{base}/api/sessions/{sid}/export/optuna", timeout=60)
        unknown = httpx.get(f"{base}/api/sessions/s-20200101-000000-0000/export/optuna")
    assert got.status_code == 200, got.text
    assert got.headers["content-type"] == "application/vnd.sqlite3"
    assert f'filename="{sid}.optuna.db"' in got.headers["content-disposition"]
    saved = tmp_path / "download.db"
    saved.write_bytes(got.content)
    study = optuna.load_study(study_name=sid, storage=f"sqlite:///{saved}")
    assert [t.value for t in study.trials] == [0.5 + i / 100 for i in range(5)]
    assert unknown.status_code == 422
    assert "no session 's-20200101-000000-0000'" in unknown.json()["detail"]
    exports = settings.scratch_dir / "exports"
    assert not exports.exists() or list(exports.iterdir()) == []  # sent, then deleted
