"""Every write of the journal, read back through the models."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from journal_helpers import new_session, new_trial, run_python

from alphaloop.evidence import DeflatedSharpe
from alphaloop.exceptions import AlphaloopError, NotFound
from alphaloop.journal import (
    INTERRUPTED,
    STOP_REQUESTED,
    FinalReport,
    Journal,
    SessionStatus,
    TrialStatus,
    downsample_curve,
)
from alphaloop.knobs import BoundsClip, TrialConfig
from alphaloop.llm import LLMCallRecord
from alphaloop.spec import Objective, SessionSpec

METRICS = {"sharpe": 1.25, "max_drawdown": 0.12, "profit_factor": math.inf, "n_days": 250}


def test_create_session_round_trip(journal: Journal) -> None:
    sid = new_session(journal, time_budget_s=600.0, max_tokens_total=50_000)
    s = journal.sessions.get(sid)
    assert re.fullmatch(r"s-\d{8}-\d{6}-[0-9a-f]{4}", sid)
    assert (s.goal, s.mode, s.proposer, s.budget, s.seed) == (
        "maximise Sharpe, max drawdown under 15%",
        "cufolio_only",
        "tpe",
        5,
        7,
    )
    assert s.objective == Objective(metric="sharpe", max_drawdown=0.15)
    assert isinstance(s.spec, SessionSpec) and s.spec.objective == s.objective
    assert s.spec.trial_budget.eval_cost_bps == 10.0 and s.spec.train_end == "2020-12-31"
    assert s.baseline_config == TrialConfig().model_dump()
    assert (s.time_budget_s, s.max_tokens_total) == (600.0, 50_000)
    assert (s.data_source, s.data_fingerprint) == ("synthetic", "fp-123")
    assert s.status is SessionStatus.running and s.owner_pid == os.getpid()
    assert s.created_at == s.updated_at and datetime.fromisoformat(s.created_at).tzinfo
    assert s.final is None and s.noise_floor is None and s.finished_at is None


def test_session_ids_are_unique(journal: Journal) -> None:
    ids = [new_session(journal) for _ in range(25)]
    assert len(set(ids)) == 25


def test_create_session_names_a_bad_value(journal: Journal) -> None:
    with pytest.raises(ValueError, match="budget"):
        new_session(journal, budget="many")
    assert journal.sessions.list() == []


def test_update_session(journal: Journal) -> None:
    sid = new_session(journal)
    t = new_trial(journal, sid)
    s = journal.sessions.update(
        sid,
        noise_floor=0.03,
        best_trial_id=t.id,
        final={"stop_reason": "finished", "deflated_sharpe": 0.7, "n_trials": 5},
    )
    assert (s.noise_floor, s.best_trial_id, s.final) == (
        0.03,
        t.id,
        FinalReport(stop_reason="finished", deflated_sharpe=0.7, n_trials=5),
    )
    assert s.finished_at is None and s.updated_at >= s.created_at
    done = journal.sessions.update(sid, status="finished")
    assert done.status == "finished" and done.finished_at is not None
    with pytest.raises(ValueError, match=r"unknown field.*colour"):
        journal.sessions.update(sid, colour="red")
    with pytest.raises(ValueError, match="final"):  # a report with a key it does not have
        journal.sessions.update(sid, final={"stop_reason": "x", "n_trials": 1, "colour": "red"})
    with pytest.raises(ValueError, match="status"):
        journal.sessions.update(sid, status="paused")
    with pytest.raises(ValueError, match=r"unknown field.*created_at"):
        journal.sessions.update(sid, created_at="yesterday")
    with pytest.raises(NotFound):
        journal.sessions.update("s-nope", error="x")


def test_start_trial_assigns_indexes_per_session(journal: Journal) -> None:
    a, b = new_session(journal), new_session(journal)
    rows = [
        new_trial(journal, a),
        new_trial(journal, a, kind="baseline"),
        new_trial(journal, b),
        new_trial(journal, a, kind="test"),
    ]
    assert [(r.session_id, r.idx) for r in rows] == [(a, 0), (a, 1), (b, 0), (a, 2)]
    first = rows[0]
    assert first.status is TrialStatus.running and first.status == "running"
    assert first.owner_pid == os.getpid() and not first.counted and first.finished_at is None
    assert first.config == TrialConfig(lookback=30).model_dump()
    assert first.delta == {"changes": {"lookback": 30}, "rationale": "longer memory"}
    assert first.changes == {"lookback": 30}
    child = new_trial(journal, a, parent_id=first.id)
    assert child.parent_id == first.id


def test_start_trial_refuses_unknown_references(journal: Journal) -> None:
    sid = new_session(journal)
    with pytest.raises(NotFound):
        new_trial(journal, "s-nope")
    with pytest.raises(NotFound):
        new_trial(journal, sid, parent_id=999)
    with pytest.raises(ValueError, match="kind"):
        new_trial(journal, sid, kind="warmup")
    assert journal.trials.of_session(sid) == []


def test_finish_trial_round_trip(journal: Journal) -> None:
    sid = new_session(journal)
    t = new_trial(journal, sid)
    returns = np.array([0.01, -0.005, 0.002])
    done = journal.trials.finish(
        t.id,
        status="keep",
        objective=np.float64(1.25),
        metrics=METRICS,
        baselines={"equal_weight": {"sharpe": 0.8}, "min_cvar": {"sharpe": 0.9}},
        val_returns=returns,
        final_weights=np.array([0.25, 0.75]),
        elapsed_s=3.5,
        reason="beats best",
        policy_path="policies/s/0.zip",
    )
    assert done.status is TrialStatus.keep and done.counted
    assert done.objective == 1.25 and done.metrics == {**METRICS, "n_days": 250.0}
    assert done.baselines == {"equal_weight": {"sharpe": 0.8}, "min_cvar": {"sharpe": 0.9}}
    assert done.val_returns == returns.tolist() and done.final_weights == [0.25, 0.75]
    assert (done.elapsed_s, done.reason) == (3.5, "beats best")
    # A path relative to the working directory is journaled as the file it names.
    assert done.policy_path == str(Path("policies/s/0.zip").absolute())
    assert done.finished_at >= done.started_at
    assert journal.trials.get(t.id) == done
    by_name = journal.trials.finish(
        new_trial(journal, sid).id, status="discard", final_weights={"AAA": 0.4, "BBB": 0.6}
    )
    assert by_name.final_weights == {"AAA": 0.4, "BBB": 0.6}
    assert by_name.elapsed_s is not None and by_name.elapsed_s >= 0  # wall time by default


def test_finish_trial_records_a_crash(journal: Journal) -> None:
    t = new_trial(journal, new_session(journal))
    done = journal.trials.finish(
        t.id,
        status=TrialStatus.crash,
        error="SolverError('x')",
        traceback_tail="Traceback...\nSolverError: x",
    )
    assert (done.status, done.error, done.objective, done.metrics) == (
        "crash",
        "SolverError('x')",
        None,
        None,
    )
    assert done.traceback_tail.endswith("SolverError: x") and done.counted


def test_a_trial_finishes_once(journal: Journal) -> None:
    t = new_trial(journal, new_session(journal))
    with pytest.raises(ValueError, match="final status"):
        journal.trials.finish(t.id, status="running")
    with pytest.raises(ValueError):
        journal.trials.finish(t.id, status="won")
    journal.trials.finish(t.id, status="discard", objective=0.1)
    with pytest.raises(AlphaloopError, match="already finished as 'discard'"):
        journal.trials.finish(t.id, status="keep", objective=9.9)
    assert journal.trials.get(t.id).objective == 0.1
    with pytest.raises(NotFound):
        journal.trials.finish(12345, status="keep")


@pytest.mark.parametrize(
    ("kind", "status", "error", "counted"),
    [
        ("search", "keep", None, True),
        ("search", "discard", None, True),
        ("search", "crash", "ValueError('nan')", True),
        ("search", "timeout", "ran past 60 s", True),
        ("search", "crash", INTERRUPTED, False),
        ("search", "invalid", "unknown knob", False),
        ("baseline", "keep", None, False),
        ("test", "keep", None, False),
    ],
)
def test_counted(
    journal: Journal, kind: str, status: str, error: str | None, counted: bool
) -> None:
    sid = new_session(journal)
    t = new_trial(journal, sid, kind=kind)
    assert journal.trials.finish(t.id, status=status, error=error).counted is counted
    assert journal.trials.counted(sid) == int(counted)


def test_record_invalid_trial(journal: Journal) -> None:
    sid = new_session(journal)
    new_trial(journal, sid)
    bad = journal.trials.record_invalid(
        sid,
        proposer="llm",
        delta_raw='{"lookback": "5%"}',
        error="knob 'lookback': '5%' is a percentage",
    )
    assert (bad.idx, bad.kind, bad.status, bad.counted) == (1, "search", "invalid", False)
    assert bad.delta["raw"] == '{"lookback": "5%"}' and bad.delta["changes"] == {}
    assert "percentage" in bad.error and bad.finished_at == bad.started_at
    assert bad.config == {} and TrialConfig(**bad.config) == TrialConfig()
    assert journal.trials.counted(sid) == 0


def test_clips(journal: Journal) -> None:
    sid = new_session(journal)
    t1, t2 = new_trial(journal, sid), new_trial(journal, sid)
    c1 = BoundsClip(
        knob="max_position_pct",
        proposed=0.6,
        applied=0.3,
        low=0.02,
        high=0.3,
        reason="above the upper bound",
    )
    c2 = BoundsClip(knob="lookback", proposed=2, applied=5, low=5, high=60, reason="below")
    journal.logs.add_clips(t2.id, [c2])
    rows = journal.logs.add_clips(t1.id, [c1, c2.model_dump()])
    assert [r.to_bounds_clip() for r in rows] == [c1, c2]
    assert [r.to_bounds_clip() for r in journal.logs.clips(t1.id)] == [c1, c2]
    assert [(c.trial_id, c.knob) for c in journal.logs.session_clips(sid)] == [
        (t1.id, "max_position_pct"),
        (t1.id, "lookback"),
        (t2.id, "lookback"),
    ]
    assert journal.logs.add_clips(t1.id, []) == []
    with pytest.raises(NotFound):
        journal.logs.add_clips(999, [c1])


def test_events(journal: Journal) -> None:
    sid = new_session(journal)
    journal.logs.add_event(sid, "ProposerFallback", {"reason": "timeout", "fallback": "tpe"})
    journal.logs.add_event(sid, "PolicyRetrained", {"trial_id": 3})
    journal.logs.add_event(None, "Maintenance")
    assert [e.kind for e in journal.logs.events(sid)] == ["ProposerFallback", "PolicyRetrained"]
    [fallback] = journal.logs.events(sid, kind="ProposerFallback")
    assert fallback.payload == {"reason": "timeout", "fallback": "tpe"}
    assert fallback.session_id == sid
    assert [e.payload for e in journal.logs.events(None)] == [{}]
    with pytest.raises(NotFound):
        journal.logs.add_event("s-nope", "X", {})


def test_llm_calls_take_the_clients_record(journal: Journal) -> None:
    sid = new_session(journal)
    t = new_trial(journal, sid)
    ok = LLMCallRecord(
        purpose="propose",
        model="nemotron",
        prompt_tokens=900,
        completion_tokens=120,
        latency_s=1.5,
        ok=True,
        session_id=sid,
        trial_id=str(t.id),
    )
    failed = LLMCallRecord(
        purpose="propose",
        model="nemotron",
        latency_s=30.0,
        ok=False,
        error="timeout",
        session_id=sid,
    )
    journal.logs.add_llm_call(**ok.model_dump())
    journal.logs.add_llm_call(**failed.model_dump())
    journal.logs.add_llm_call(purpose="chat", model="m", latency_s=0.2, ok=True)
    calls = journal.logs.llm_calls(sid)
    assert [(c.ok, c.trial_id, c.total_tokens, c.error) for c in calls] == [
        (True, t.id, 1020, None),
        (False, None, 0, "timeout"),
    ]
    assert len(journal.logs.llm_calls()) == 3
    with pytest.raises(ValueError, match="trial_id"):
        journal.logs.add_llm_call(purpose="p", model="m", latency_s=0.1, ok=True, trial_id="abc")


def test_chart_reads(journal: Journal) -> None:
    sid = new_session(journal)
    t = new_trial(journal, sid)
    read = journal.logs.add_chart_read(
        kind="equity_curve",
        model="embedded",
        elapsed_s=0.01,
        bullets=["rises 12%", "drawdown 8% in March"],
        raw_text="...",
        context={"window": "validation"},
        session_id=sid,
        trial_id=t.id,
    )
    journal.logs.add_chart_read(kind="weights", model="vlm", bullets=[])
    assert journal.logs.chart_reads(sid) == [read]
    assert read.bullets == ["rises 12%", "drawdown 8% in March"]
    assert read.context == {"window": "validation"} and read.trial_id == t.id
    assert len(journal.logs.chart_reads()) == 2


def test_curves(journal: Journal) -> None:
    t = new_trial(journal, new_session(journal))
    assert journal.trials.set_curve(t.id, [[0, -1.0], [512, -0.5]]) == 2
    assert journal.trials.get(t.id).curve == [[0, -1.0], [512, -0.5]]
    with pytest.raises(NotFound):
        journal.trials.set_curve(999, [[0, 0.0]])
    with pytest.raises(ValueError, match="at least 2"):
        journal.trials.set_curve(t.id, [[0, 0.0]], max_points=1)


def test_set_curve_downsamples_evenly(journal: Journal) -> None:
    t = new_trial(journal, new_session(journal))
    points = [[i * 256, i / 10] for i in range(1001)]
    assert journal.trials.set_curve(t.id, points, max_points=200) == 200
    stored = journal.trials.get(t.id).curve
    assert stored[0] == points[0] and stored[-1] == points[-1]
    gaps = {b[0] - a[0] for a, b in itertools.pairwise(stored)}
    # 1000 intervals over 199 gaps: every gap is 5 or 6 updates (x 256 steps), never more.
    assert gaps <= {5 * 256, 6 * 256}
    assert journal.trials.set_curve(t.id, points[:50], max_points=200) == 50
    assert downsample_curve(list(range(10)), 4) == [0, 3, 6, 9]
    assert downsample_curve(list(range(3)), 4) == [0, 1, 2]


def test_request_stop(journal: Journal) -> None:
    sid = new_session(journal)
    assert not journal.sessions.stop_requested(sid)
    assert journal.sessions.request_stop(sid) is True
    assert journal.sessions.stop_requested(sid) and journal.sessions.get(sid).status == "stopping"
    [event] = journal.logs.events(sid, kind=STOP_REQUESTED)
    assert event.payload["applied"] is True and event.payload["status_before"] == "running"
    done = new_session(journal)
    journal.sessions.update(done, status="finished")
    assert journal.sessions.request_stop(done) is False
    assert journal.sessions.get(done).status == "finished" and not journal.sessions.stop_requested(
        done
    )
    with pytest.raises(NotFound):
        journal.sessions.request_stop("s-nope")


def test_reap_interrupted(journal: Journal, journal_path) -> None:
    sid = new_session(journal)
    # A real process starts a trial and dies without finishing it.
    code = (
        "import sys; from alphaloop.journal import Journal\n"
        "with Journal(sys.argv[1]) as j:\n"
        "    print(j.trials.start(sys.argv[2], kind='search', config={}, config_hash=None,"
        " delta={}, parent_id=None, seed=0, rationale=None, proposer='tpe').id)\n"
    )
    proc = run_python(code, str(journal_path), sid)
    assert proc.returncode == 0, proc.stderr
    orphan = journal.trials.get(int(proc.stdout))
    mine, kept = new_trial(journal, sid), new_trial(journal, sid)
    live = new_trial(journal, sid)
    journal.db.execute("UPDATE trials SET owner_pid = ? WHERE id = ?", (os.getppid(), live.id))
    journal.db.conn.commit()

    assert journal.trials.reap_interrupted(sid, keep={kept.id}, own_pid_alive=True) == [
        journal.trials.get(orphan.id)
    ]
    reaped = journal.trials.get(orphan.id)
    assert (reaped.status, reaped.error, reaped.counted) == ("crash", INTERRUPTED, False)
    assert reaped.finished_at is not None
    assert journal.trials.get(mine.id).status == "running"  # our own pid, declared live
    assert [t.id for t in journal.trials.reap_interrupted(sid, keep={kept.id})] == [mine.id]
    assert journal.trials.get(kept.id).status == "running"
    assert journal.trials.get(live.id).status == "running"  # a live process owns it
    with pytest.raises(AlphaloopError):
        journal.trials.finish(orphan.id, status="keep", objective=1.0)
    assert journal.trials.counted(sid) == 0
    assert new_trial(journal, sid).idx == 4  # indexes are never reused


def test_a_report_written_by_another_alphaloop_still_reads(journal: Journal) -> None:
    sid = new_session(journal)
    with journal._write() as conn:
        conn.execute(
            "UPDATE sessions SET final = ? WHERE id = ?",
            ('{"stop_reason": "finished", "n_trials": 3, "retired_key": 1}', sid),
        )
    final = journal.sessions.get(sid).final
    assert final == FinalReport(stop_reason="finished", n_trials=3)
    assert final.journaled() == {"stop_reason": "finished", "n_trials": 3}
    assert FinalReport.model_json_schema()["required"] == ["stop_reason", "n_trials"]


def test_a_report_whose_test_excess_was_deflated_still_reads_its_evidence(
    journal: Journal,
) -> None:
    # Reports journaled while the TEST excess was deflated by the configs tried (its trial
    # variance capped at Lo's i.i.d. variance) carry that deflated Sharpe: the evidence, the
    # paired test, reads without it.
    sid = new_session(journal)
    deflated = {
        "sharpe": 0.1, "n_obs": 750, "skew": 0.0, "kurtosis": 3.0, "psr": 0.99,
        "n_trials": 10.0, "sr_variance": 0.001, "hurdle": 0.05, "dsr": 0.9,
        "observed_sr_variance": 0.002, "luck_variance": 0.001,
    }  # fmt: skip
    test = {
        "sharpe_a": 1.2, "sharpe_b": 0.9, "difference": 0.3, "se": 0.2, "z": 1.5,
        "p_value": 0.07, "n_obs": 750, "lags": 7,
    }  # fmt: skip
    stored = {
        "stop_reason": "finished",
        "n_trials": 3,
        "excess": {"default": {"reference": "default", "test": test, "deflated": deflated}},
    }
    with journal._write() as conn:
        conn.execute("UPDATE sessions SET final = ? WHERE id = ?", (json.dumps(stored), sid))
    final = journal.sessions.get(sid).final
    evidence = final.excess["default"]
    assert evidence.test.p_value == 0.07 and evidence.reference == "default"
    assert "deflated" not in evidence.model_dump()
    # A validation report of then holds such a deflated Sharpe of the pick: it reads as it was.
    assert DeflatedSharpe.model_validate(deflated).dsr == 0.9
