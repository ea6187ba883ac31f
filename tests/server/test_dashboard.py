"""The dashboard's reads over a real journal: the session list with verdicts next to 1/N and
the default, trials paged, sorted and filtered by the server (checked against the same
selection made in Python over every trial), the CSV export, and one trial in full."""

from __future__ import annotations

import csv
import io
import os

import httpx
import pytest

from alphaloop.journal import FinalReport, Journal
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.settings import Settings

from .helpers import live_server, new_session

N = 57


def _excess(reference: str, difference: float, p: float) -> dict:
    test = {"sharpe_a": 0.5 + difference, "sharpe_b": 0.5, "difference": difference,
            "se": 0.3, "z": difference / 0.3, "p_value": p, "n_obs": 250, "lags": 5}  # fmt: skip
    return {"reference": reference, "test": test}


@pytest.fixture
def home(settings: Settings) -> tuple[Settings, dict[str, str]]:
    with Journal(settings.journal_path) as j:
        nogo = new_session(j, goal="nothing beats 1/N here", budget=N)
        for i in range(N):
            lookback = 5 + i % 50
            config = TrialConfig(lookback=lookback)
            row = j.trials.start(nogo, kind="search", config=config.model_dump(),
                                config_hash=config_hash(config),
                                delta={"changes": {"lookback": lookback}},
                                parent_id=None, seed=i, rationale=f"why {i}", proposer="tpe",
                                prompt=f"the exact prompt {i}")  # fmt: skip
            j.trials.finish(row.id, status=("keep", "discard", "crash")[i % 3],
                           objective=None if i % 3 == 2 else ((i * 37) % 101) / 100,
                           metrics={"sharpe": i / 10}, elapsed_s=0.01,
                           val_returns=[0.01, -0.005, 0.002])  # fmt: skip
        # the default's baseline run, after the search (the pick: nothing beat it)
        base = j.trials.start(nogo, kind="baseline", config=TrialConfig().model_dump(),
                              config_hash=None, delta={"changes": {}}, parent_id=None, seed=0,
                              rationale=None, proposer="baseline")  # fmt: skip
        j.trials.finish(base.id, status="keep", objective=0.5, metrics={"sharpe": 0.5},
                        elapsed_s=0.01)  # fmt: skip
        excess = {"default": _excess("default", -0.1, 0.7),
                  "equal_weight": _excess("equal_weight", -0.2, 0.9)}  # fmt: skip
        final = FinalReport(stop_reason="budget", n_trials=N, pick="default",
                            baseline_trial_id=base.id, baseline_test_objective=0.3,
                            gates_passed=True, excess=excess)  # fmt: skip
        j.sessions.update(nogo, status="finished", owner_pid=None, final=final,
                          best_trial_id=base.id)  # fmt: skip
        stopped = new_session(j, goal="stopped one")
        j.sessions.update(stopped, status="finished", owner_pid=None,
                         final=FinalReport(stop_reason="stop requested", n_trials=0))  # fmt: skip
        running = new_session(j, goal="running one")
        j.sessions.update(running, status="running", owner_pid=os.getpid())
        trial_id = j.trials.of_session(nogo)[4].id
    return settings, {"nogo": nogo, "stopped": stopped, "running": running, "trial": str(trial_id)}


def test_session_list_has_status_best_and_verdict(home) -> None:
    settings, ids = home
    with live_server(settings) as base:
        rows = httpx.get(f"{base}/api/dashboard/sessions").json()["items"]
    by_id = {r["id"]: r for r in rows}
    assert [r["id"] for r in rows] == [ids["running"], ids["stopped"], ids["nogo"]]
    assert by_id[ids["stopped"]]["status"] == "stopped"
    assert by_id[ids["running"]]["status"] == "running"
    nogo = by_id[ids["nogo"]]
    assert nogo["status"] == "finished" and nogo["trials"] == N and nogo["pick"] == "default"
    # "best" is the pick: the default's baseline run (#N), not the best kept search trial
    assert nogo["best"] == {"trial_id": nogo["best"]["trial_id"], "idx": N, "kind": "baseline",
                            "objective": 0.5, "final": True, "sharpe": 0.5}  # fmt: skip
    assert nogo["best_validation"] == 0.5 and nogo["best_test"] == 0.3
    assert nogo["default_test"] == 0.3 and nogo["go"] is False
    assert nogo["vs_equal_weight"]["difference"] == pytest.approx(-0.2)
    assert nogo["vs_equal_weight"]["beats"] is False


def _query(base: str, sid: str, **params) -> dict:
    r = httpx.get(f"{base}/api/sessions/{sid}/trials", params=params)
    assert r.status_code == 200, r.text
    return r.json()


def test_trials_are_paged_sorted_and_filtered_by_the_server(home) -> None:
    settings, ids = home
    sid = ids["nogo"]
    with Journal(settings.journal_path) as j:
        every = j.trials.of_session(sid, "search")
    with live_server(settings) as base:
        first = _query(base, sid, limit=10)
        assert first["total"] == N + 1 and [t["idx"] for t in first["items"]] == list(range(10))
        assert all("prompt" not in t and "val_returns" not in t for t in first["items"])
        # kept trials by objective, best first, second page of 5
        page = _query(base, sid, kept="true", sort="objective", order="desc", offset=5, limit=5)
        kept = sorted((t for t in every if t.status == "keep"), key=lambda t: (-t.objective, t.idx))
        assert page["total"] == len(kept)
        assert [t["id"] for t in page["items"]] == [t.id for t in kept[5:10]]
        # a knob range, two statuses, sorted by the knob
        page = _query(base, sid, knob="lookback", low=20, high=30, status=["keep", "crash"],
                      sort="lookback", limit=500)  # fmt: skip
        want = sorted((t for t in every if 20 <= t.config["lookback"] <= 30
                       and t.status in ("keep", "crash")),
                      key=lambda t: (t.config["lookback"], t.idx))  # fmt: skip
        assert [t["id"] for t in page["items"]] == [t.id for t in want] and want
        # empty objectives (crashes) sort last either way
        up = _query(base, sid, sort="objective", limit=500)["items"]
        assert up[-1]["objective"] is None and up[0]["objective"] == min(
            t.objective for t in every if t.objective is not None
        )
        bad = httpx.get(f"{base}/api/sessions/{sid}/trials", params={"sort": "warp"})
        assert bad.status_code == 422 and "unknown column 'warp'" in bad.json()["detail"]
        assert (
            httpx.get(f"{base}/api/sessions/{sid}/trials", params={"limit": 501}).status_code == 422
        )
        missing = httpx.get(f"{base}/api/sessions/s-20000101-000000-abcd/trials")
        assert missing.status_code == 404 and missing.json()["error"] == "NotFound"


def test_csv_export_holds_every_match(home) -> None:
    settings, ids = home
    sid = ids["nogo"]
    with live_server(settings) as base:
        r = httpx.get(f"{base}/api/sessions/{sid}/trials.csv", params={"kept": "true"})
        page = _query(base, sid, kept="true", limit=500)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert "attachment" in r.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert [int(x["id"]) for x in rows] == [t["id"] for t in page["items"]]
    assert [float(x["lookback"]) for x in rows] == [t["config"]["lookback"] for t in page["items"]]
    assert rows[0]["metric_sharpe"] and rows[0]["rationale"].startswith("why")


def test_one_trial_in_full(home) -> None:
    settings, ids = home
    with live_server(settings) as base:
        full = httpx.get(f"{base}/api/sessions/{ids['nogo']}/trials/{ids['trial']}").json()
        assert full["trial"]["prompt"] == "the exact prompt 4"
        assert full["trial"]["val_returns"] == [0.01, -0.005, 0.002]
        assert full["trial"]["delta"]["changes"] == {"lookback": 9}
        other = httpx.get(f"{base}/api/sessions/{ids['stopped']}/trials/{ids['trial']}")
        assert other.status_code == 404


def test_pulse_and_history(home) -> None:
    settings, ids = home
    sid = ids["nogo"]
    with Journal(settings.journal_path) as j:
        every = j.trials.of_session(sid, "search")
        best = max((t for t in every if t.status == "keep"), key=lambda t: t.objective)
        j.sessions.update(sid, best_trial_id=best.id)
        running = j.trials.start(sid, kind="search", config=every[0].config, config_hash=None,
                                delta={"changes": {}}, parent_id=None, seed=99, rationale="r",
                                proposer="tpe")  # fmt: skip
    with live_server(settings) as base:
        newest = httpx.get(f"{base}/api/pulse").json()
        assert newest["session"]["id"] == ids["running"] and newest["status"] == "running"
        p = httpx.get(f"{base}/api/pulse", params={"session_id": sid}).json()
        assert p["trials"] == N + 2 and p["status"] == "finished"
        assert p["tail"][0]["id"] == running.id and p["tail"][0]["status"] == "running"
        assert p["best"]["trial_id"] == best.id and p["best"]["idx"] == best.idx
        h = httpx.get(f"{base}/api/sessions/{sid}/history").json()
    assert h["idx"] == [t.idx for t in every] + [running.idx]
    incumbent, top = [], None
    for t in [*every, running]:
        if t.status == "keep":
            top = t.objective if top is None else max(top, t.objective)
        incumbent.append(top)
    assert h["incumbent"] == incumbent and h["baseline"] == 0.5


def _trial(j: Journal, sid: str, kind: str, status: str, objective: float, folds: int) -> int:
    """A finished trial of ``kind`` scored on ``folds`` of the session's 3 folds."""
    config = TrialConfig()
    row = j.trials.start(sid, kind=kind, config=config.model_dump(), config_hash=None,
                         delta={"changes": {}}, parent_id=None, seed=0, rationale=None,
                         proposer="tpe")  # fmt: skip
    for fold in range(folds):
        j.folds.add(row.id, fold=fold, n_folds=3, start_date="2020-01-01",
                    end_date="2020-06-30", objective=objective, metrics={}, result={},
                    returns=[0.01], elapsed_s=0.1)  # fmt: skip
    why = "raced out on fold 3 of 3" if folds == 1 else None
    j.trials.finish(row.id, status=status, objective=objective, metrics={"sharpe": objective},
                    elapsed_s=0.1, reason=why)  # fmt: skip
    return row.id


def test_one_status_vocabulary(settings: Settings) -> None:
    """The page's rows, its status filter, the CSV and the command line's table say the same
    word for each trial: ``ran`` for a baseline, confirmation or TEST run, ``raced out`` for a
    search trial scored on one of its folds, whose one-fold score is not its objective."""
    from typer.testing import CliRunner

    from alphaloop.cli import app

    with Journal(settings.journal_path) as j:
        sid = new_session(j, budget=3)
        ids = {
            "baseline": _trial(j, sid, "baseline", "keep", 0.8, 3),
            "kept": _trial(j, sid, "search", "keep", 1.0, 3),
            "raced": _trial(j, sid, "search", "discard", 1.6, 1),
            "discarded": _trial(j, sid, "search", "discard", 0.7, 3),
            "confirm": _trial(j, sid, "confirm", "keep", 0.9, 3),
            "test": _trial(j, sid, "test", "keep", 0.6, 0),
        }
    want = {"baseline": "ran", "kept": "keep", "raced": "raced out", "discarded": "discard",
            "confirm": "ran", "test": "ran"}  # fmt: skip
    with live_server(settings) as base:
        rows = {t["id"]: t for t in _query(base, sid, limit=50)["items"]}
        raced = _query(base, sid, status="raced out")["items"]
        discarded = _query(base, sid, status="discard")["items"]
        text = httpx.get(f"{base}/api/sessions/{sid}/trials.csv").text
    assert {k: rows[i]["status"] for k, i in ids.items()} == want
    assert [t["id"] for t in raced] == [ids["raced"]]
    assert [t["id"] for t in discarded] == [ids["discarded"]]
    # the raced-out trial's one-fold score is apart from the comparable objectives
    assert rows[ids["raced"]]["objective"] is None
    assert rows[ids["raced"]]["partial_objective"] == 1.6
    assert (rows[ids["raced"]]["folds_run"], rows[ids["raced"]]["n_folds"]) == (1, 3)
    assert rows[ids["test"]]["objective"] is None and rows[ids["test"]]["test_objective"] == 0.6
    csv_rows = {int(r["id"]): r for r in csv.DictReader(io.StringIO(text))}
    assert {k: csv_rows[i]["status"] for k, i in ids.items()} == want
    assert csv_rows[ids["raced"]]["objective"] == "" and csv_rows[ids["raced"]]["partial_objective"]
    out = CliRunner().invoke(app, ["journal", sid], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    for line in out.output.splitlines():
        cells = [c.strip() for c in line.split("│")]
        if len(cells) > 4 and cells[2] in ("search", "baseline", "confirm", "test"):
            idx = int(cells[1])
            kind = next(k for k, i in ids.items() if rows[i]["idx"] == idx)
            assert cells[3] == want[kind], line
            if kind == "raced":
                assert cells[4] == "-"


def test_trials_sort_by_a_metric(home) -> None:
    settings, ids = home
    sid = ids["nogo"]
    with Journal(settings.journal_path) as j:
        every = j.trials.of_session(sid)
    with live_server(settings) as base:
        page = _query(base, sid, sort="metric_sharpe", order="desc", limit=500)
    want = sorted(every, key=lambda t: (-(t.metrics or {}).get("sharpe", float("-inf")), t.idx))
    assert [t["id"] for t in page["items"]] == [t.id for t in want]


def test_best_is_the_pick_everywhere(home) -> None:
    """A session whose pick is the default (a kept search trial scored higher, without
    confidence): the list, the pulse, the snapshot and `alphaloop status` all name the
    default's run as its best."""
    from typer.testing import CliRunner

    from alphaloop.cli import app

    settings, ids = home
    sid = ids["nogo"]
    with Journal(settings.journal_path) as j:
        pick = j.sessions.get(sid).best_trial_id
        kept = max((t.objective or 0) for t in j.trials.of_session(sid, "search")
                   if t.status == "keep")  # fmt: skip
    assert kept > 0.5  # a higher kept search trial exists
    with live_server(settings) as base:
        row = next(r for r in httpx.get(f"{base}/api/dashboard/sessions").json()["items"]
                   if r["id"] == sid)  # fmt: skip
        pulse = httpx.get(f"{base}/api/pulse", params={"session_id": sid}).json()
        snap = httpx.get(f"{base}/api/research/current", params={"session_id": sid}).json()
    status = CliRunner().invoke(app, ["status", sid, "--json"])
    assert status.exit_code == 0, status.output
    import json

    assert row["best"]["trial_id"] == pulse["best"]["trial_id"] == pick
    assert snap["best"]["id"] == json.loads(status.stdout)["best"]["id"] == pick


def test_a_raced_out_score_is_never_ranked_with_full_ones(settings: Settings) -> None:
    """The lab's ratio curve (and the chart reader, which reads its figure) ranks full scores
    only: a raced-out trial's one-fold Sharpe of 1.6 is above every full one, and absent."""
    from alphaloop.ops import sessions as ops_sessions

    with Journal(settings.journal_path) as j:
        sid = new_session(j, budget=3)
        full = {
            _trial(j, sid, "search", "keep", 1.0, 3),
            _trial(j, sid, "baseline", "keep", 0.8, 3),
        }
        _trial(j, sid, "search", "discard", 1.6, 1)
        assert {t.id for t in j.trials.completed(series=False)} == full
    figure = ops_sessions.metrics_chart(settings, "ratio_curve").figure
    bars = next(t for t in figure.data if t.type == "bar")
    assert list(bars.y) == [1.0, 0.8]  # the raced-out 1.6 would rank first
