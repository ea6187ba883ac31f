"""Notes on sessions and trials: versioned, every version kept, and an edit made on an older
version refused with a 409, also when two edits race."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

from alphaloop.journal import Journal
from alphaloop.settings import Settings

from .helpers import add_trials, live_server, new_session


def test_notes_are_versioned_and_a_stale_edit_is_a_409(settings: Settings) -> None:
    with Journal(settings.journal_path) as j:
        sid = new_session(j)
        add_trials(j, sid, 2)
        other = new_session(j)
        add_trials(j, other, 1)
        trial, foreign = j.trials.of_session(sid)[1].id, j.trials.of_session(other)[0].id
    with live_server(settings) as base:
        url = f"{base}/api/sessions/{sid}/notes"
        empty = httpx.get(url).json()
        assert empty["version"] == 0 and empty["text"] == "" and empty["history"] == []
        first = httpx.put(url, json={"text": "lookback matters", "base_version": 0})
        assert first.status_code == 200 and first.json()["version"] == 1
        second = httpx.put(url, json={"text": "lookback matters most", "base_version": 1})
        assert second.json()["version"] == 2
        stale = httpx.put(url, json={"text": "overwrite?", "base_version": 1})
        assert stale.status_code == 409 and stale.json()["error"] == "Conflict"
        assert "version 2" in stale.json()["detail"]
        now = httpx.get(url).json()
        assert now["text"] == "lookback matters most"
        assert [v["text"] for v in now["history"]] == ["lookback matters", "lookback matters most"]
        # a trial's note is its own
        t = httpx.put(url, json={"text": "a fluke?", "base_version": 0, "trial_id": trial})
        assert t.json()["version"] == 1 and httpx.get(url).json()["version"] == 2
        assert httpx.get(url, params={"trial_id": trial}).json()["text"] == "a fluke?"
        wrong = httpx.put(url, json={"text": "x", "base_version": 0, "trial_id": foreign})
        assert wrong.status_code == 404
        assert httpx.put(url, json={"text": "x" * 20_001, "base_version": 2}).status_code == 422

        # two edits on one version at once: one is saved, the other is told
        def edit(text: str) -> int:
            return httpx.put(url, json={"text": text, "base_version": 2}).status_code

        with ThreadPoolExecutor(2) as pool:
            statuses = sorted(pool.map(edit, ["mine", "theirs"]))
        assert statuses == [200, 409]
        assert httpx.get(url).json()["version"] == 3
