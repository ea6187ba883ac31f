"""Walks through the API: a walk is a job. A request the data cannot hold is a 422 naming what
fits, before any job is queued; a resume the state forbids is refused before any job too; a
tiny walk on synthetic data runs to its end as a job whose typed result is the journal's
verdict; a walk whose worker is killed mid-epoch resumes through the API with no epoch run
twice."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import httpx
import pytest

from alphaloop.journal import Journal, WalkReport
from alphaloop.ops.requests import WalkRequest, shared_fields
from alphaloop.server import create_app
from alphaloop.settings import Settings
from alphaloop.spec import SessionSpec
from alphaloop.walk_spec import DEFAULT_RULE, WalkSpec
from tests.walk.helpers import TINY

from .helpers import PAGE, live_server
from .test_jobs import follow

ENDED = ("finished", "failed", "interrupted")
SPEC = WalkSpec(session=SessionSpec(goal="g"))


def _nothing_queued(base: str, settings: Settings) -> None:
    assert httpx.get(f"{base}/api/jobs").json()["items"] == []
    walks = httpx.get(f"{base}/api/walks").json()
    assert walks == {"items": [], "default_rule": DEFAULT_RULE.value}


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"start": "2010-06-01"}, "cannot start on 2010-06-01: its sessions need 1 fold(s) of "
         "126 days before the first epoch; the earliest quarterly start is 2011-04-01"),
        ({"start": "2015-06-01"}, "holds fewer than two quarterly epochs"),
        ({"fold_days": 1200, "start": None}, "a walk needs 1528 trading days (about 6.1 years)"),
        ({"end": "2014-01-01"}, "the walk's end 2014-01-01 must be after its start 2014-10-01"),
        ({"cadence": "weekly"}, "cadence: Input should be 'yearly', 'quarterly' or 'monthly'"),
        ({"data": "/etc/prices.csv"}, "price files are named on the command line only"),
        ({"workers": 2}, "workers: Extra inputs are not permitted"),
    ],
)  # fmt: skip
def test_a_walk_the_data_cannot_hold_is_refused_before_any_job(
    settings: Settings, change: dict[str, Any], said: str
) -> None:
    body = {k: v for k, v in {**TINY, **change}.items() if v is not None}
    with live_server(settings) as base:
        r = httpx.post(f"{base}/api/walks", json=body, timeout=60)
        assert r.status_code == 422, r.text
        answer = r.json()
        # what the data cannot hold is the walk operation's refusal, checked before any job;
        # the rest the request's own validation
        on_data = "cannot start" in said or "needs" in said
        expected = "InvalidRequest" if on_data or "fewer than two" in said else "ValidationError"
        assert answer["error"] == expected and answer["exit_code"] == 2, answer
        assert said in answer["detail"], answer["detail"]
        assert str(settings.home) not in r.text and "/tmp" not in r.text  # no paths
        _nothing_queued(base, settings)


def test_a_resume_the_state_forbids_is_refused_before_any_job(settings: Settings) -> None:
    with Journal(settings.journal_path) as j:
        live = j.walks.create(goal="g", spec=SPEC)  # owned by this living process: running
        done = j.walks.create(goal="g", spec=SPEC)
        j.walks.update(done, status="finished")
    with live_server(settings) as base:
        busy = httpx.post(f"{base}/api/walks/{live}/resume", headers=PAGE)
        assert busy.status_code == 409 and "is running" in busy.json()["detail"]
        finished = httpx.post(f"{base}/api/walks/{done}/resume", headers=PAGE)
        assert finished.status_code == 409 and "already finished" in finished.json()["detail"]
        missing = httpx.post(f"{base}/api/walks/w-20000101-000000-abcd/resume", headers=PAGE)
        assert missing.status_code == 404 and live in missing.json()["detail"]
        bad = httpx.post(f"{base}/api/walks/..%2Fjournal.db/resume", headers=PAGE)
        assert bad.status_code in (404, 422)
        assert httpx.get(f"{base}/api/jobs").json()["items"] == []


def test_every_walk_route_declares_its_answer(settings: Settings) -> None:
    doc = create_app(settings).openapi()
    answers = {
        ("post", "/api/walks"): ("202", "WalkStarted"),
        ("post", "/api/walks/{walk_id}/resume"): ("202", "WalkStarted"),
        ("get", "/api/walks"): ("200", "WalkList"),
        ("get", "/api/walks/{walk_id}"): ("200", "WalkView"),
        ("get", "/api/walks/{walk_id}/figures"): ("200", "WalkFigures"),
    }
    for (method, path), (status, model) in answers.items():
        op = doc["paths"][path][method]
        schema = op["responses"][status]["content"]["application/json"]["schema"]
        assert schema == {"$ref": f"#/components/schemas/{model}"}, (path, schema)
        # a walk id or a body can be refused, and every route reads the journal
        assert ("422" in op["responses"]) == (path != "/api/walks" or method == "post")
        assert "404" in op["responses"]
    # the body is the walk request as declared once, less what names this machine's things
    body = doc["components"]["schemas"]["WalkRequest"]
    assert list(body["properties"]) == shared_fields(WalkRequest)
    assert body["additionalProperties"] is False


def _epochs_have_no_days(view: dict[str, Any]) -> None:
    for e in view["epochs"]:
        assert set(e) == {"epoch", "session_id", "first_day", "last_day", "traded", "n_days",
                          "picks"}, e  # fmt: skip
        assert all(set(p) == {"trial_id", "config_hash"} for p in e["picks"].values())


@pytest.mark.slow
def test_a_tiny_walk_runs_to_its_verdict_as_a_job(settings: Settings) -> None:
    with live_server(settings) as base:
        key = {"Idempotency-Key": "walk-key-1"}
        r = httpx.post(f"{base}/api/walks", json=TINY, headers=key, timeout=90)
        assert r.status_code == 202, r.text
        started = r.json()
        again = httpx.post(f"{base}/api/walks", json=TINY, headers=key)
        assert again.json() == started  # one walk per key
        walk_id = started["walk_id"]
        job = follow(base, started["job_id"], ENDED, 300)
        view = httpx.get(f"{base}/api/walks/{walk_id}").json()
        listed = httpx.get(f"{base}/api/walks").json()["items"]
        figures = httpx.get(f"{base}/api/walks/{walk_id}/figures").json()["figures"]
    with Journal(settings.journal_path) as j:
        walk = j.walks.get(walk_id)
        epochs = j.walks.epochs(walk_id)
        sessions = j.sessions.list()
    report = walk.report
    assert job["status"] == "finished", job["error"]
    assert job["result"] == {"kind": "walk", "walk_id": walk_id, "status": "finished",
                             "go": report.go, "verdict": report.verdict}  # fmt: skip
    assert job["session_id"] == epochs[-1].session_id  # the epoch it ran last
    assert job["job"]["walk_id"] == walk_id and job["job"]["kind"] == "walk"
    assert len(sessions) == len(epochs) == len(report.epochs) == 4  # one session an epoch
    assert WalkReport.model_validate(view["walk"]["report"]) == report
    assert view["resume"] is None and [e["session_id"] for e in view["epochs"]] == [
        e.session_id for e in epochs
    ]
    _epochs_have_no_days(view)
    [row] = listed
    assert (row["id"], row["go"], row["verdict"]) == (walk_id, report.go, report.verdict)
    assert row["detectable"] == pytest.approx(report.record().detectable)
    equity = figures["equity"]["data"][0]
    assert equity["x"] == sorted(equity["x"]) and equity["y"][0] == 1.0


def _second_epoch_begun(settings: Settings, walk_id: str) -> bool:
    with Journal(settings.journal_path) as j:
        return len(j.walks.epochs(walk_id)) >= 2


@pytest.mark.slow
def test_a_walk_whose_worker_is_killed_resumes_through_the_api(settings: Settings) -> None:
    with live_server(settings) as base:
        started = httpx.post(f"{base}/api/walks", json=TINY, timeout=90).json()
        walk_id = started["walk_id"]
        deadline = time.monotonic() + 120
        while not _second_epoch_begun(settings, walk_id):
            assert time.monotonic() < deadline, "the walk's second epoch never began"
            time.sleep(0.05)
        os.kill(started["pid"], signal.SIGKILL)
        killed = follow(base, started["job_id"], ("interrupted",))
        assert httpx.get(f"{base}/api/walks/{walk_id}").json()["walk"]["status"] == "interrupted"
        begun = [e["session_id"] for e in httpx.get(f"{base}/api/walks/{walk_id}").json()["epochs"]]
        resumed = httpx.post(f"{base}/api/walks/{walk_id}/resume", headers=PAGE, timeout=90)
        assert resumed.status_code == 202, resumed.text
        job = follow(base, resumed.json()["job_id"], ENDED, 300)
        view = httpx.get(f"{base}/api/walks/{walk_id}").json()
    assert killed["error"]["type"] == "WorkerDied"
    assert job["status"] == "finished", job["error"]
    assert job["result"]["kind"] == "walk_resume" and job["result"]["walk_id"] == walk_id
    with Journal(settings.journal_path) as j:
        sessions = j.sessions.list()
    # every epoch once: the sessions begun before the kill are the ones it finished with
    assert [e["session_id"] for e in view["epochs"]][: len(begun)] == begun
    assert len(sessions) == len(view["epochs"]) == 4
    assert view["walk"]["status"] == "finished" and view["walk"]["report"] is not None
