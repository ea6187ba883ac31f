"""``GET /api/sessions/{id}/export/optuna``: the study ``alphaloop export optuna`` writes, as an
Optuna journal file (or, with ``format=sqlite``, a SQLite file) to download; an unknown session
is a 422 naming no path and leaves no file behind."""

from __future__ import annotations

from pathlib import Path

import httpx
import optuna

from alphaloop.journal import Journal
from alphaloop.settings import Settings
from tests.ops.optuna_export import opened
from tests.server.helpers import add_trials, live_server, new_session


def test_the_study_downloads_as_a_journal_or_a_sqlite_file(
    settings: Settings, tmp_path: Path
) -> None:
    settings.home.mkdir(parents=True)
    with Journal(settings.journal_path) as j:
        sid = new_session(j)
        add_trials(j, sid, 5)
    route = f"/api/sessions/{sid}/export/optuna"
    with live_server(settings) as base:
        journal = httpx.get(f"{base}{route}", timeout=60)
        sqlite = httpx.get(f"{base}{route}?format=sqlite", timeout=60)
        unknown = httpx.get(f"{base}/api/sessions/s-20200101-000000-0000/export/optuna")
        bad = httpx.get(f"{base}{route}?format=csv")
    for got, media, name in (
        (journal, "application/x-ndjson", f"{sid}.optuna.log"),
        (sqlite, "application/vnd.sqlite3", f"{sid}.optuna.db"),
    ):
        assert got.status_code == 200, got.text
        assert got.headers["content-type"] == media
        assert f'filename="{name}"' in got.headers["content-disposition"]
        saved = tmp_path / name
        saved.write_bytes(got.content)
        storage = str(saved) if name.endswith(".log") else f"sqlite:///{saved}"
        study = optuna.load_study(study_name=sid, storage=opened(storage))
        assert [t.value for t in study.trials] == [0.5 + i / 100 for i in range(5)]
        assert [t.user_attrs["seed"] for t in study.trials] == list(range(5))
    assert unknown.status_code == 422 and bad.status_code == 422
    assert "no session 's-20200101-000000-0000'" in unknown.json()["detail"]
    assert str(settings.home) not in unknown.text and str(tmp_path) not in unknown.text
    exports = settings.scratch_dir / "exports"
    assert not exports.exists() or list(exports.iterdir()) == []  # sent, then deleted
