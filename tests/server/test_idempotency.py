"""A start sent twice with one ``Idempotency-Key`` starts one session: the second request, sent
while the first is still starting its worker, gets the first one's answer."""

from __future__ import annotations

import os
import signal
from concurrent.futures import ThreadPoolExecutor

import httpx

from alphaloop.journal import Journal
from alphaloop.server.idempotency import Idempotency
from alphaloop.settings import Settings

from .helpers import live_server


def test_two_starts_with_one_key_start_one_session(settings: Settings) -> None:
    goal = {"goal": "max Sharpe", "data": "synthetic:1", "budget": 1000, "noise_seeds": 2}
    key = {"Idempotency-Key": "k-0123456789abcdef"}
    with live_server(settings) as base:

        def start() -> httpx.Response:
            return httpx.post(f"{base}/api/research", json=goal, headers=key, timeout=90)

        with ThreadPoolExecutor(2) as pool:
            first, second = pool.map(lambda _: start(), range(2))
        assert first.status_code == second.status_code == 202, (first.text, second.text)
        assert first.json() == second.json()
        assert "1" in (
            first.headers.get("idempotent-replay"),
            second.headers.get("idempotent-replay"),
        )
        again = start()  # later, too
        assert again.json() == first.json()
        other = httpx.post(f"{base}/api/research", json={**goal, "budget": 5}, headers=key)
        assert other.status_code == 422 and "another request" in other.json()["detail"]
        fresh = httpx.post(f"{base}/api/research", json=goal, headers={"Idempotency-Key": "x"})
        assert fresh.status_code == 422  # too short to be a key
        os.kill(first.json()["pid"], signal.SIGKILL)
    with Journal(settings.journal_path) as j:
        assert len(j.sessions.list()) == 1
        assert [job.kind for job in j.jobs.list()] == ["research"]


def test_a_failed_first_request_lets_the_key_run_again() -> None:
    keys = Idempotency(keep=2)
    runs: list[int] = []

    def boom() -> None:
        runs.append(1)
        raise RuntimeError("worker could not start")

    for _ in range(2):
        try:
            keys.once("k-12345678", "research", {"goal": "g"}, boom)
        except RuntimeError:
            pass
    assert len(runs) == 2
    assert keys.once("k-12345678", "research", {"goal": "g"}, lambda: {"ok": 1}) == {"ok": 1}
    assert keys.once("k-12345678", "research", {"goal": "g"}, lambda: {"ok": 2}).status_code == 202
    for k in ("k-a0000000", "k-b0000000"):  # only the newest keys are kept
        keys.once(k, "research", {}, lambda: {})
    assert keys.once("k-12345678", "research", {"goal": "g"}, lambda: {"ok": 3}) == {"ok": 3}
