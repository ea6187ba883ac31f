"""What a poll reads and sends: trials after the cursor without their series, charts drawn
without series equal to the full ones, caching of the page's files; and the DPO start route's
refusals (nothing is trained here: every refusal comes before a job starts)."""

from __future__ import annotations

import json
import sqlite3

import httpx
import pytest

from alphaloop import ops
from alphaloop.journal import Journal
from alphaloop.ops import jobs
from alphaloop.ops import sessions as ops_sessions
from alphaloop.settings import Settings, get_settings

from .helpers import add_trials, live_server, new_session

RETURNS = [0.001 * ((i % 7) - 3) for i in range(754)]  # a validation window's days


@pytest.fixture
def home(settings: Settings) -> tuple[Settings, str, list[int]]:
    """A session with 4 finished trials carrying series (ids 1..4), a clip on trial 3, then a
    trial still running (id 5) with a curve."""
    with Journal(settings.journal_path) as j:
        sid = new_session(j)
        add_trials(j, sid, 4)
        rows = j.trials.of_session(sid)
        with sqlite3.connect(settings.journal_path) as raw:  # give them series to leave out
            raw.execute("UPDATE trials SET val_returns = ?", (json.dumps(RETURNS),))
        j.logs.add_clips(rows[2].id, [dict(knob="lookback", proposed=90.0, applied=60.0, low=5.0,
                                      high=60.0, reason="above the upper bound")])  # fmt: skip
        running = j.trials.start(sid, kind="search", config=rows[0].config, config_hash=None,
                                delta={"changes": {}}, parent_id=None, seed=9, rationale="r",
                                proposer="tpe")  # fmt: skip
        j.trials.set_curve(running.id, [[64, -1.0], [128, -0.5]])
    return settings, sid, [r.id for r in rows] + [running.id]


def test_snapshot_sends_trials_after_the_cursor_without_series(home) -> None:
    settings, sid, ids = home
    with live_server(settings) as base:
        snap = httpx.get(f"{base}/api/research/current", params={"session_id": sid}).json()
        assert [t["id"] for t in snap["trials"]] == ids
        assert all(t["val_returns"] is None and t["curve"] is None for t in snap["trials"])
        assert [c["applied"] for c in snap["trials"][2]["clips"]] == [60.0]
        # the running trial (id 5) holds the cursor at 4, so its end is sent again later
        assert snap["next_after"] == ids[3]
        assert snap["running"][0]["id"] == ids[4] and snap["running"][0]["curve_points"] == 2
        assert snap["running"][0]["latest"] == [128, -0.5]
        # objectives 0.50 .. 0.53: the best is the last finished one, sent without series
        assert snap["best"]["idx"] == 3 and snap["best"]["val_returns"] is None
        later = httpx.get(
            f"{base}/api/research/current", params={"session_id": sid, "after": ids[2]}
        ).json()
        assert [t["id"] for t in later["trials"]] == ids[3:] and later["trials"][0]["clips"] == []
        assert "chart" not in later


def test_snapshot_carries_the_progress_chart_when_asked(home) -> None:
    settings, sid, _ = home
    with live_server(settings) as base:
        snap = httpx.get(f"{base}/api/research/current?chart=true").json()
        chart = httpx.get(f"{base}/api/charts/research_progress?session_id={sid}").json()
    assert snap["chart"] == chart
    # the figure drawn from the full read (every series parsed) is the same figure
    full = ops.charts.build_chart("research_progress", get_settings(), session_id=sid)
    assert chart == json.loads(full.figure.to_json())
    assert chart["layout"]["meta"]["session_id"] == sid if "meta" in chart["layout"] else True
    assert chart["data"]


def test_ratio_curve_without_series_equals_the_full_read(home) -> None:
    settings, _, _ = home
    light = ops_sessions.metrics_chart(settings, "ratio_curve")
    full = ops.charts.build_chart("ratio_curve", settings)
    assert light.figure.to_json() == full.figure.to_json()
    with pytest.raises(ValueError, match="research_progress or ratio_curve"):
        ops_sessions.metrics_chart(settings, "weights")


def test_journal_leaves_series_out_unless_asked(home) -> None:
    settings, sid, ids = home
    with live_server(settings) as base:
        plain = httpx.get(f"{base}/api/sessions/{sid}/journal").json()
        assert [t["id"] for t in plain["trials"]] == ids
        assert all(t["val_returns"] is None for t in plain["trials"] + plain["leaderboard"])
        full = httpx.get(f"{base}/api/sessions/{sid}/journal?series=true&after={ids[1]}").json()
        assert [t["id"] for t in full["trials"]] == ids[2:]
        assert full["trials"][0]["val_returns"] == pytest.approx(RETURNS)
        assert full["trials"][-1]["curve"] == [[64, -1.0], [128, -0.5]]
        assert full["leaderboard"][0]["val_returns"] == pytest.approx(RETURNS)
        assert "prompt" not in full["trials"][0]
        spec = httpx.get(f"{base}/openapi.json").json()
    params = spec["paths"]["/api/sessions/{session_id}/journal"]["get"]["parameters"]
    series = next(p for p in params if p["name"] == "series")
    assert series["schema"]["default"] is False and "val_returns" in series["description"]


def test_page_files_are_cached_with_etags(settings: Settings) -> None:
    with live_server(settings) as base, httpx.Client(base_url=base) as c:
        index = c.get("/")
        assert index.headers["cache-control"] == "no-cache"
        assert c.get("/", headers={"If-None-Match": index.headers["etag"]}).status_code == 304
        src = index.text.split('id="plotly-js" href="')[1].split('"')[0]
        assert src.startswith("/plotly.min.js?v=")
        js = c.get(src)
        assert js.status_code == 200 and "immutable" in js.headers["cache-control"]
        again = c.get(src, headers={"If-None-Match": js.headers["etag"]})
        assert again.status_code == 304 and again.content == b""
        # an address without the version is revalidated, not kept
        assert c.get("/plotly.min.js").headers["cache-control"] == "no-cache"
        app_js = c.get("/static/js/main.js")
        assert app_js.headers["cache-control"] == "no-cache"
        revalidated = c.get("/static/js/main.js", headers={"If-None-Match": app_js.headers["etag"]})
        assert revalidated.status_code == 304


def test_dpo_train_needs_a_configured_model(settings: Settings) -> None:
    with Journal(settings.journal_path):
        pass
    with live_server(settings) as base:
        r = httpx.post(f"{base}/api/dpo/train", json={})
        assert r.status_code == 422 and "ALPHALOOP_DPO_MODEL" in r.json()["detail"]
        # paths are refused by the schema: a run is a name, a model is never sent
        for body in ({"run": "../../etc"}, {"model_dir": "/tmp/m"}, {"model_id": "a/b"}):
            assert httpx.post(f"{base}/api/dpo/train", json=body).status_code == 422


def test_dpo_train_refuses_while_a_run_is_going_on(
    settings: Settings, clean_env: pytest.MonkeyPatch, tmp_path
) -> None:
    clean_env.setenv("ALPHALOOP_DPO_MODEL", str(tmp_path / "tiny-model"))
    settings = get_settings()
    with Journal(settings.journal_path) as j:
        # a run journaled by this (living) process: it is running
        live = j.preferences.start_dpo_run(model_dir=str(tmp_path / "tiny-model"), out_dir="x")
    with live_server(settings) as base:
        wrong = httpx.post(f"{base}/api/dpo/train", json={"model_id": "other"})
        assert wrong.status_code == 422 and "tiny-model" in wrong.json()["detail"]
        busy = httpx.post(f"{base}/api/dpo/train", json={"model_id": "tiny-model"})
        assert busy.status_code == 409 and "already running" in busy.json()["detail"]
        # the same row left by a process that is gone blocks nothing: the next refusal is
        # about the pairs (this journal has none), not about a run going on
        with sqlite3.connect(settings.journal_path) as raw:
            raw.execute("UPDATE dpo_runs SET owner_pid = 999999999 WHERE id = ?", (live,))
        few = httpx.post(f"{base}/api/dpo/train", json={})
        assert few.status_code == 409 and "at least 2 labelled" in few.json()["detail"]
        (settings.home / "dpo" / "taken").mkdir(parents=True)
        taken = httpx.post(f"{base}/api/dpo/train", json={"run": "taken"})
        assert taken.status_code == 409 and "'taken' exists" in taken.json()["detail"]
    assert jobs.list_jobs(settings) == []  # no worker was started
