"""The REST API against a real uvicorn on 127.0.0.1 over a real journal."""

from __future__ import annotations

import base64
import json
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from alphaloop.exceptions import InvalidRequest
from alphaloop.journal import Journal
from alphaloop.settings import Settings

from .helpers import PAGE, add_trials, live_server, new_session

try:
    from tests.flywheel.helpers import add_decision
except ImportError:  # plain ``pytest``
    from flywheel.helpers import add_decision  # type: ignore[no-redef]

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64
JPEG = b"\xff\xd8\xff\xe0" + b"\0" * 64


@pytest.fixture
def session_home(settings: Settings) -> tuple[Settings, str]:
    with Journal(settings.journal_path) as j:
        sid = new_session(j)
        add_trials(j, sid, 5)
        j.sessions.update(sid, status="finished", owner_pid=None)
    return settings, sid


def test_sessions_journal_and_snapshot_page_with_after(session_home) -> None:
    settings, sid = session_home
    with live_server(settings) as base:
        page = httpx.get(f"{base}/api/sessions").json()
        assert [s["id"] for s in page["items"]] == [sid] and page["next_after"] == 1
        assert httpx.get(f"{base}/api/sessions?after=1").json()["items"] == []
        # trial ids 1..5 (the journal's first trials), idx 0..4
        j = httpx.get(f"{base}/api/sessions/{sid}/journal?after=2").json()
        assert [t["idx"] for t in j["trials"]] == [2, 3, 4] and j["next_after"] == 5
        # objectives 0.50 .. 0.54 at idx 0..4: the leaderboard leads with the highest
        assert j["leaderboard"][0]["objective"] == pytest.approx(0.54)
        snap = httpx.get(f"{base}/api/research/current").json()
        assert snap["session"]["id"] == sid and snap["counted_trials"] == 5
        assert len(snap["trials"]) == 5
        assert httpx.get(f"{base}/api/research/current?after=5").json()["trials"] == []


def test_errors_are_json_with_status_and_advice(session_home) -> None:
    settings, sid = session_home
    with live_server(settings) as base:
        missing = httpx.get(f"{base}/api/sessions/s-20000101-000000-abcd/journal")
        assert missing.status_code == 404 and "GET /api/sessions" in missing.json()["detail"]
        assert sid not in missing.json()["detail"]  # no other session's id, no file path
        assert str(settings.home) not in missing.text and "journal.db" in missing.text
        bad_id = httpx.get(f"{base}/api/sessions/..%2Fetc/journal")
        assert bad_id.status_code in (404, 422)
        bad = httpx.get(f"{base}/api/sessions/not-an-id/journal")
        assert bad.status_code == 422 and "session_id" in bad.json()["detail"]
        stop = httpx.post(f"{base}/api/research/{sid}/stop", headers=PAGE)
        assert stop.status_code == 409 and "not running" in stop.json()["detail"]
        knob = httpx.post(f"{base}/api/train", json={"knobs": {"warp": 1.0}})
        assert knob.status_code == 422 and "knobs.warp" in knob.json()["detail"]
        extra = httpx.post(f"{base}/api/research", json={"goal": "x", "rm": "-rf"})
        assert extra.status_code == 422
        path_data = httpx.post(f"{base}/api/research", json={"goal": "x", "data": "/etc/passwd"})
        assert path_data.status_code == 422 and "data" in path_data.json()["detail"]
        unknown_chart = httpx.get(f"{base}/api/charts/pie")
        assert (
            unknown_chart.status_code == 422
            and "'training_curve', 'research_progress'" in unknown_chart.json()["detail"]
        )


def test_no_journal_is_404_saying_what_to_do(settings: Settings) -> None:
    with live_server(settings) as base:
        assert httpx.get(f"{base}/api/sessions").json()["items"] == []
        r = httpx.get(f"{base}/api/sessions/s-20000101-000000-abcd/journal")
        assert r.status_code == 404 and "POST /api/research" in r.json()["detail"]


def test_interpret_reads_with_the_embedded_reader_and_checks_images(session_home) -> None:
    settings, sid = session_home
    with live_server(settings) as base:
        body = {"kind": "research_progress", "context": {"session_id": sid}}
        r = httpx.post(f"{base}/api/charts/interpret", json=body).json()
        assert r["model"] == "embedded-reader" and 4 <= len(r["bullets"]) <= 6
        assert r["signature"].startswith("\u2014 embedded reader")
        with Journal(settings.journal_path) as j:
            assert [c.id for c in j.logs.chart_reads(sid)] == [r["id"]]
        for ok in (PNG, JPEG):
            image = base64.b64encode(ok).decode()
            got = httpx.post(f"{base}/api/charts/interpret", json={**body, "image_b64": image})
            assert got.status_code == 200
        gif = base64.b64encode(b"GIF89a" + b"\0" * 20).decode()
        r = httpx.post(f"{base}/api/charts/interpret", json={**body, "image_b64": gif})
        assert r.status_code == 422 and "PNG or JPEG" in r.json()["detail"]
        big = base64.b64encode(PNG + b"\0" * (2 * 1024 * 1024)).decode()
        r = httpx.post(f"{base}/api/charts/interpret", json={**body, "image_b64": big})
        assert r.status_code == 422 and "cap" in r.json()["detail"]
        huge = json.dumps({**body, "image_b64": "A" * (5 * 1024 * 1024)})
        r = httpx.post(
            f"{base}/api/charts/interpret",
            content=huge,
            headers={"content-type": "application/json"},
        )
        assert r.status_code == 413


def test_token_guards_writes_on_loopback_and_everything_elsewhere(
    session_home, clean_env: pytest.MonkeyPatch
) -> None:
    settings, sid = session_home
    guarded = settings.model_copy(update={"api_token": "s3cret"})
    stop = f"/api/research/{sid}/stop"
    with live_server(guarded) as base:
        assert httpx.get(f"{base}/api/sessions").status_code == 200  # loopback reads are open
        assert httpx.post(base + stop, headers=PAGE).status_code == 401
        wrong = httpx.post(base + stop, headers={**PAGE, "Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and "Bearer" in wrong.json()["detail"]
        right = httpx.post(base + stop, headers={**PAGE, "Authorization": "Bearer s3cret"})
        assert right.status_code == 409  # past the guard: the session is not running
    with live_server(guarded, auth_reads=True) as base:
        assert httpx.get(f"{base}/api/sessions").status_code == 401
        ok = httpx.get(f"{base}/api/sessions", headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200
        assert httpx.get(f"{base}/").status_code == 200  # the page's shell holds no data


def test_non_loopback_needs_a_token(settings: Settings) -> None:
    from alphaloop.server import check_bind, is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    assert check_bind("127.0.0.1", settings) is False
    with pytest.raises(InvalidRequest, match="ALPHALOOP_API_TOKEN"):
        check_bind("0.0.0.0", settings)
    assert check_bind("0.0.0.0", settings.model_copy(update={"api_token": "t"})) is True


def test_serve_refuses_a_public_bind_without_token(settings: Settings) -> None:
    from typer.testing import CliRunner

    from alphaloop.cli import app

    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "1"])
    assert result.exit_code == 2 and "ALPHALOOP_API_TOKEN" in result.output


def test_policies_list_and_activate(settings: Settings) -> None:
    with Journal(settings.journal_path) as j:
        sid = new_session(j)
        add_trials(j, sid, 1)
        trial = j.trials.of_session(sid)[0]
        policy = j.policies.add(
            kind="mean_cvar", source="session", session_id=sid, trial_id=trial.id,
            mode="cufolio_only", config=trial.config, config_hash=trial.config_hash or "h",
            seed=0, symbols=["A", "B"], data_spec={"data": "synthetic"}, trial_budget={},
            objective={"metric": "sharpe"}, val_objective=0.5,
        )  # fmt: skip
    with live_server(settings) as base:
        page = httpx.get(f"{base}/api/policies").json()
        assert [p["id"] for p in page["items"]] == [policy.id] and not page["items"][0]["active"]
        assert httpx.post(f"{base}/api/policies/999/activate", headers=PAGE).status_code == 404
        refused = httpx.post(f"{base}/api/policies/{policy.id}/activate", headers=PAGE)
        assert refused.status_code == 409 and "gates were not evaluated" in refused.text
        bare = httpx.post(f"{base}/api/policies/{policy.id}/activate?force=true", headers=PAGE)
        assert bare.status_code == 422 and "needs a reason" in bare.text
        r = httpx.post(
            f"{base}/api/policies/{policy.id}/activate?force=true&reason=trial+run", headers=PAGE
        )
        assert r.status_code == 200
        (item,) = httpx.get(f"{base}/api/policies").json()["items"]
        assert item["active"] is True and item["override"] == "trial run"
        assert httpx.get(f"{base}/api/policies/active").json()["policy"]["id"] == policy.id


def test_decisions_and_verdicts(settings: Settings) -> None:
    with Journal(settings.journal_path) as j:
        first = add_decision(j, date="2024-01-02", symbols=["A", "B"], pre=None,
                             target={"A": 0.5, "B": 0.5})  # fmt: skip
        second = add_decision(j, date="2024-01-03", symbols=["A", "B"], pre=None,
                              target={"A": 0.6, "B": 0.4})  # fmt: skip
    with live_server(settings) as base:
        page = httpx.get(f"{base}/api/decisions").json()
        assert [d["id"] for d in page["items"]] == [first, second]
        assert httpx.get(f"{base}/api/decisions?after={first}").json()["items"][0]["id"] == second
        bad = httpx.post(f"{base}/api/decisions/{first}/verdict", json={"verdict": "maybe"})
        assert bad.status_code == 422
        ok = httpx.post(f"{base}/api/decisions/{first}/verdict", json={"verdict": "approve"})
        assert ok.status_code == 200 and ok.json()["verdict"] == "approve"
        again = httpx.post(f"{base}/api/decisions/{first}/verdict", json={"verdict": "reject"})
        assert again.status_code == 409 and "already" in again.json()["detail"]
        assert [d["id"] for d in httpx.get(f"{base}/api/decisions").json()["items"]] == [second]
        assert (
            httpx.post(f"{base}/api/decisions/77/verdict", json={"verdict": "approve"}).status_code
            == 404
        )
        stats = httpx.get(f"{base}/api/preferences/stats").json()
        assert stats["total"] == 0
        assert httpx.get(f"{base}/api/dpo/runs").json()["items"] == []


def test_pollers_never_see_a_locked_journal_while_a_session_writes(settings: Settings) -> None:
    with Journal(settings.journal_path) as j:
        sid = new_session(j)
        add_trials(j, sid, 50)
    stop = threading.Event()

    def write() -> None:
        with Journal(settings.journal_path) as j:
            while not stop.is_set():
                add_trials(j, sid, 1)

    writer = threading.Thread(target=write)
    with live_server(settings) as base:
        writer.start()
        paths = [f"/api/research/current?session_id={sid}", f"/api/sessions/{sid}/journal"]

        def poll(i: int) -> list[int]:
            with httpx.Client(base_url=base, timeout=30) as c:
                return [c.get(paths[i % 2]).status_code for _ in range(8)]

        try:
            with ThreadPoolExecutor(16) as pool:
                codes = [c for batch in pool.map(poll, range(16)) for c in batch]
        finally:
            stop.set()
            writer.join()
    assert codes == [200] * len(codes)
    with Journal(settings.journal_path) as j:
        assert len(j.trials.of_session(sid)) > 50  # the writer did write meanwhile


def test_env_knobs_and_page_assets(settings: Settings) -> None:
    with live_server(settings) as base:
        env = httpx.get(f"{base}/api/env?n_assets=3").json()
        # 20 days (default lookback) x 3 assets of returns, then 3 weights
        assert env["observation_space"]["shape"] == [20 * 3 + 3]
        assert env["action_space"]["shape"] == [3] and len(env["knobs"]) == 16
        assert len(httpx.get(f"{base}/api/knobs").json()["knobs"]) == 16
        page = httpx.get(f"{base}/").text
        # the header links every view, in the order of the work; each is an ES module served
        views = ["sessions", "compare", "deploy", "feedback", "schedule", "lab", "knobs"]
        assert [page.index(f'href="#/{v}"') for v in views] == sorted(
            page.index(f'href="#/{v}"') for v in views
        )
        assert '<script type="module" src="/static/js/main.js">' in page
        for v in [*views, "session", "trial"]:
            module = httpx.get(f"{base}/static/js/views/{v}.js")
            assert module.status_code == 200, v
            assert (
                "javascript" in module.headers["content-type"]
                and "export async function render" in module.text
            )
        js = httpx.get(f"{base}/plotly.min.js")
        assert js.status_code == 200 and "plotly.js" in js.text[:200]
        assert "openapi" in httpx.get(f"{base}/openapi.json").json()


def test_pm_halt_resume_and_status(settings: Settings) -> None:
    with Journal(settings.journal_path):
        pass
    with live_server(settings) as base:
        assert httpx.post(f"{base}/api/pm/halt", json={"why": ""}).status_code == 422
        halted = httpx.post(f"{base}/api/pm/halt", json={"why": "earnings week"})
        assert halted.status_code == 200 and "earnings week" in json.dumps(halted.json())
        assert httpx.get(f"{base}/api/pm/status").status_code == 200
        resumed = httpx.post(f"{base}/api/pm/resume", headers=PAGE)
        assert resumed.status_code == 200 and "earnings week" not in json.dumps(resumed.json())
        missing = httpx.get(f"{base}/api/pm/status?book=other")
        assert missing.status_code == 404 and "pm tick" in missing.json()["detail"]
        bad = httpx.post(f"{base}/api/pm/tick", json={"date": "yesterday"})
        assert bad.status_code == 422


def test_halt_and_resume_through_the_api_are_journaled_with_their_origin(
    settings: Settings,
) -> None:
    with Journal(settings.journal_path) as j:
        j.books.create("main", "paper", 1000.0)
    with live_server(settings) as base:
        halted = httpx.post(f"{base}/api/pm/halt", json={"why": "broker outage"})
        resumed = httpx.post(f"{base}/api/pm/resume", params={"why": "broker back"}, headers=PAGE)
        status = httpx.get(f"{base}/api/pm/status").json()
        page = httpx.get(f"{base}/static/js/views/deploy.js").text
    assert halted.status_code == 200 and halted.json()["halted"] == "broker outage"
    assert resumed.status_code == 200 and resumed.json()["halted"] is None
    assert [(e["kind"], e["reason"], e["origin"]) for e in status["events"]] == [
        ("resume", "broker back", "api"),
        ("halt", "broker outage", "api"),
    ]
    assert "/api/pm/status" in page and "events-table" in page  # the page shows them
