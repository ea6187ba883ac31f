"""Work started through the API runs as typed jobs: a route answers with the job's id, a job
that fails answers with its journaled error (type, message, status), and a worker killed
mid-job leaves a job that reads as interrupted."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import httpx

from alphaloop.journal import FinalReport, Journal, SessionStatus
from alphaloop.settings import Settings

from .helpers import PAGE, live_server, new_session


def follow(base: str, job_id: int, until: tuple[str, ...], timeout_s: float = 60.0) -> Any:
    """``GET /api/jobs/{job_id}`` until its status is one of ``until``."""
    deadline = time.monotonic() + timeout_s
    while (job := httpx.get(f"{base}/api/jobs/{job_id}").json())["status"] not in until:
        assert time.monotonic() < deadline, f"job {job_id} still {job['status']}"
        time.sleep(0.2)
    return job


def test_a_run_that_fails_answers_with_its_typed_error_from_the_journal(
    settings: Settings,
) -> None:
    body = {"data": "synthetic:1", "symbols": ["NOPE"], "total_timesteps": 64}
    with live_server(settings) as base:
        r = httpx.post(f"{base}/api/train", json=body, timeout=90)
        assert r.status_code == 422, r.text
        answer = r.json()
        assert answer["error"] == "InvalidRequest" and "unknown symbol(s) NOPE" in answer["detail"]
        job = httpx.get(f"{base}/api/jobs/{answer['job_id']}").json()
        listed = httpx.get(f"{base}/api/jobs").json()
        assert httpx.get(f"{base}/api/jobs/{answer['job_id'] + 1}").status_code == 404
    assert job["status"] == "failed" and job["result"] is None and job["session_id"] is None
    defaults = {"kind": "train", "knobs": {}, "seed": 0, "metric": "sharpe", "advantage": "gae"}
    unset = ("fill", "date_format", "n_envs", "truncate_drawdown", "stop_properly")
    assert job["job"] == {**defaults, **dict.fromkeys(unset), "fill": "none", **body}
    assert job["error"] == {
        "type": "InvalidRequest",
        "message": answer["detail"],
        "exit_code": 2,
        "http_status": 422,
    }
    assert [j["id"] for j in listed["items"]] == [job["id"]] and listed["next_after"] == job["id"]
    with Journal(settings.journal_path) as j:  # what the route answered is the journal's row
        row = j.jobs.get(job["id"])
    assert (row.error_type, row.error, row.pid) == ("InvalidRequest", answer["detail"], job["pid"])


def test_a_tick_without_an_active_policy_is_refused_whole_before_a_job_is_queued(
    settings: Settings,
) -> None:
    """The tick is checked whole before anything is queued: a day in the future is a 422 even
    with no active policy (as the guide promises), a day it could decide a 409 naming the
    missing policy; a filter of the jobs by a kind there is not is a 422."""
    with Journal(settings.journal_path):
        pass
    with live_server(settings) as base:
        future = httpx.post(f"{base}/api/pm/tick", json={"date": "2030-01-07"})
        weekend = httpx.post(f"{base}/api/pm/tick", json={"date": "2013-07-06"})
        unset = httpx.post(f"{base}/api/pm/tick", json={"book": "paper"})
        bogus = httpx.get(f"{base}/api/jobs", params={"kind": "bogus"})
        known = httpx.get(f"{base}/api/jobs", params={"kind": "pm_tick"})
        jobs = httpx.get(f"{base}/api/jobs").json()["items"]
    assert future.status_code == 422 and "in the future" in future.json()["detail"], future.text
    assert weekend.status_code == 422 and "Saturday" in weekend.json()["detail"]
    assert unset.status_code == 409 and "no active policy" in unset.json()["detail"]
    assert bogus.status_code == 422 and "pm_tick" in bogus.json()["detail"], bogus.text
    assert known.status_code == 200 and known.json()["items"] == []
    assert jobs == []  # nothing was queued


def test_resume_is_refused_before_any_job_starts(settings: Settings) -> None:
    with Journal(settings.journal_path) as j:
        live = new_session(j)  # owned by this living process: it is running
        j.sessions.update(live, owner_pid=os.getpid())
        done = new_session(j)  # finished with nothing left to run
        final = FinalReport(stop_reason="trial budget of 5 reached", n_trials=5)
        j.sessions.update(done, status=SessionStatus.finished, final=final.journaled())
    with live_server(settings) as base:
        busy = httpx.post(f"{base}/api/research/{live}/resume", headers=PAGE)
        assert busy.status_code == 409 and "is running" in busy.json()["detail"]
        finished = httpx.post(f"{base}/api/research/{done}/resume", headers=PAGE)
        assert finished.status_code == 409 and "nothing to resume" in finished.json()["detail"]
        missing = httpx.post(f"{base}/api/research/s-20000101-000000-abcd/resume", headers=PAGE)
        assert missing.status_code == 404
        assert httpx.get(f"{base}/api/jobs").json() == {"items": [], "next_after": 0}


def test_a_session_worker_killed_mid_job_reads_as_interrupted(settings: Settings) -> None:
    goal = {"goal": "max Sharpe", "data": "synthetic:1", "budget": 1000, "noise_seeds": 2}
    with live_server(settings) as base:
        r = httpx.post(f"{base}/api/research", json=goal, timeout=90)
        assert r.status_code == 202, r.text
        started = r.json()
        running = httpx.get(f"{base}/api/jobs/{started['job_id']}").json()
        assert running["status"] == "running" and running["session_id"] == started["session_id"]
        os.kill(started["pid"], signal.SIGKILL)
        job = follow(base, started["job_id"], ("interrupted",))
        session = httpx.get(f"{base}/api/research/current").json()["session"]
    assert job["error"]["type"] == "WorkerDied" and str(started["pid"]) in job["error"]["message"]
    assert job["error"]["http_status"] == 500 and job["result"] is None
    assert session["id"] == started["session_id"] and session["status"] == "interrupted"


def test_a_bad_tick_day_is_refused_before_a_job_is_queued(settings: Settings) -> None:
    from alphaloop import library
    from tests.pm.helpers import add_policy

    settings.home.mkdir(parents=True, exist_ok=True)
    with Journal(settings.journal_path) as j:
        library.activate(j, settings, add_policy(j, settings, "mean_cvar").id)
    with live_server(settings) as base:
        impossible = httpx.post(f"{base}/api/pm/tick", json={"date": "2022-13-45"}, timeout=60)
        weekend = httpx.post(f"{base}/api/pm/tick", json={"date": "2013-07-06"}, timeout=60)
        ok = httpx.post(f"{base}/api/pm/tick", json={"date": "2013-07-02"}, timeout=60)
        assert ok.status_code == 202, ok.text
        follow(base, ok.json()["job_id"], ("finished", "failed", "interrupted"), 120)
        back = httpx.post(f"{base}/api/pm/tick", json={"date": "2013-07-01"}, timeout=60)
        jobs = httpx.get(f"{base}/api/jobs").json()["items"]
    assert (
        impossible.status_code == 422
        and "date: Input should be a valid date" in (impossible.json()["detail"])
    )
    assert weekend.status_code == 422 and "Saturday" in weekend.json()["detail"]
    assert back.status_code == 409 and "only ticks forward" in back.json()["detail"]
    assert [j["id"] for j in jobs] == [ok.json()["job_id"]]  # nothing else was queued


def test_a_tick_through_the_api_finishes_and_its_job_reads_the_decision(
    settings: Settings,
) -> None:
    """The page's tick button path: the job finishes with the decision it journaled, and the
    book it moved is the one ``/api/pm/status`` reads."""
    from alphaloop import library
    from tests.pm.helpers import add_policy

    settings.home.mkdir(parents=True, exist_ok=True)
    with Journal(settings.journal_path) as j:
        library.activate(j, settings, add_policy(j, settings, "mean_cvar").id)
    with live_server(settings) as base:
        r = httpx.post(f"{base}/api/pm/tick", json={"date": "2013-07-02", "book": "desk"})
        assert r.status_code == 202, r.text
        job = follow(base, r.json()["job_id"], ("finished", "failed", "interrupted"), 120)
        status = httpx.get(f"{base}/api/pm/status", params={"book": "desk"}).json()
    assert job["status"] == "finished" and job["error"] is None, job["error"]
    result = job["result"]
    with Journal(settings.journal_path) as j:
        decision = j.books.get_decision(result["decision_id"])
        book = j.books.get("desk")
    assert result == {
        "kind": "pm_tick",
        "decision_id": decision.id,
        "book": "desk",
        "date": "2013-07-02",
        "status": decision.status,
    }
    assert decision.status == "sent" and decision.orders and decision.book == "desk"
    assert book is not None and book.as_of == "2013-07-02" and book.positions
    assert [d["id"] for d in status["decisions"]] == [decision.id]
    assert status["book"]["positions"] == book.positions
