"""Parallel trials (``--workers``): the same session as one worker where the proposer allows,
verdicts in index order, a batch of TPE asks without repeats, and a session killed with two
trials in flight resumed through the CLI with each interrupted trial run again exactly once."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.journal import Journal, TrialRecord
from alphaloop.knobs import TrialConfig
from alphaloop.meta_agent import ProposalContext, TPEProposer, TrialView
from alphaloop.settings import Settings
from alphaloop.spec import Objective

try:  # see conftest.py: ``tests`` is a package only under ``python -m pytest``
    from tests.test_cli_research import spawn, wait_for
except ImportError:
    from test_cli_research import spawn, wait_for  # type: ignore[no-redef]

SESSION = [
    "research",
    "maximise validation Sharpe",
    "--mode",
    "cufolio_only",
    "--data",
    "synthetic",
    "--noise-seeds",
    "2",
    "--seed",
    "5",
    "--json",
]


def run_cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def rows_of(settings: Settings, sid: str) -> list[TrialRecord]:
    with Journal(settings.journal_path) as journal:
        return journal.trials.of_session(sid, series=False)


def context(pending: list[TrialConfig]) -> ProposalContext:
    history = [
        TrialView(
            idx=i,
            kind="search",
            status="discard",
            config=TrialConfig(),
            changes={},
            objective=0.1 * i,
        )
        for i in range(10)
    ]
    views = [
        TrialView(idx=10 + i, kind="search", status="running", config=c, changes={})
        for i, c in enumerate(pending)
    ]
    return ProposalContext(
        session_id="s",
        goal="g",
        objective=Objective(),
        mode="cufolio_only",
        n_assets=8,
        budget_total=20,
        budget_left=10,
        noise_floor=0.05,
        best_config=TrialConfig(),
        best_objective=0.9,
        history=history,
        seed=0,
        pending=views,
    )


def test_tpe_asks_a_batch_without_repeating_a_running_point() -> None:
    tpe = TPEProposer(n_startup_trials=2)
    batch: list[TrialConfig] = []
    for _ in range(4):
        delta = tpe.propose(context(batch))
        batch.append(TrialConfig(**{**TrialConfig().model_dump(), **delta.changes}))
    assert len({c.model_dump_json() for c in batch}) == 4
    # The same ask with no trial running is one-worker TPE: the same point as before.
    again = tpe.propose(context([]))
    assert again.changes == tpe.propose(context([])).changes


@pytest.mark.slow
@pytest.mark.heavy  # two worker processes
def test_two_workers_run_the_one_worker_session_of_a_seeded_proposer(settings: Settings) -> None:
    one = run_cli(*SESSION, "--budget", "4", "--proposer", "random")
    two = run_cli(*SESSION, "--budget", "4", "--proposer", "random", "--workers", "2")
    assert one.exit_code == 0, one.output
    assert two.exit_code == 0, two.output
    a, b = (rows_of(settings, json.loads(r.stdout)["session"]["id"]) for r in (one, two))
    for rows in (a, b):
        assert [t.idx for t in rows] == list(range(len(rows)))  # unique, in order
        assert sum(t.counted for t in rows) == 4
        assert all(t.status != "running" for t in rows)

    def search(rows: list[TrialRecord]) -> list[tuple[Any, ...]]:
        return [(t.config_hash, t.seed, t.status, t.objective) for t in rows if t.kind == "search"]

    # Same proposals (random draws are seeded by their position), same results, and the same
    # verdicts: each given in index order against the best so far as of that index.
    assert search(a) == search(b)
    # One worker proposes after each verdict; two keep a third search trial in flight (one
    # queued for the first worker free), journaled before the first has its verdict.
    alone, side_by_side = ([t for t in rows if t.kind == "search"] for rows in (a, b))
    assert alone[0].finished_at <= alone[1].started_at
    assert side_by_side[2].started_at < side_by_side[0].finished_at
    # The same work journaled: each row's folds (a raced-out trial has one), whatever ran early
    # on the second worker.
    with Journal(settings.journal_path) as journal:
        folds = [[len(journal.folds.of_trial(t.id)) for t in rows] for rows in (a, b)]
    assert folds[0] == folds[1]
    finals = [json.loads(r.stdout)["final"] for r in (one, two)]
    for key in ("best_validation_objective", "baseline_test_objective", "n_trials"):
        assert finals[0].get(key) == finals[1].get(key)


@pytest.mark.slow
@pytest.mark.heavy  # two worker processes
def test_a_kill_with_two_trials_in_flight_reruns_each_once_on_resume(
    settings: Settings, tmp_path: Path
) -> None:
    log = tmp_path / "session.out"
    args = [
        "research",
        "maximise validation Sharpe",
        "--mode",
        "ppo_only",
        "--budget",
        "2",
        "--data",
        "synthetic",
        "--noise-seeds",
        "2",
        "--total-timesteps",
        "64",
        "--proposer",
        "tpe",
        "--seed",
        "3",
        "--workers",
        "2",
        "--json",
    ]
    proc = spawn(args, settings, log)
    try:
        sid = wait_for(settings, lambda j: (j.sessions.list() or [None])[0], proc).id
        running = wait_for(
            settings,
            lambda j: (lambda r: r if len(r) == 2 else None)(
                [t for t in j.trials.of_session(sid, kind="search") if t.status == "running"]
            ),
            proc,
            timeout=120,
        )
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    result = run_cli("research", "resume", sid, "--json")
    assert result.exit_code == 0, result.output
    rows = rows_of(settings, sid)
    with Journal(settings.journal_path) as journal:
        session = journal.sessions.get(sid)
        [resumed] = journal.logs.events(sid, kind="Resumed")
    assert [t.idx for t in rows] == list(range(len(rows)))
    assert session.status == "finished" and session.final.n_trials == 2
    assert all(t.status != "running" for t in rows)
    search = [t for t in rows if t.kind == "search"]
    cut = [t for t in search if t.interrupted]
    assert {t.id for t in cut} >= {t.id for t in running}
    assert set(resumed.payload["interrupted_trials"]) >= {t.idx for t in running}
    for t in cut:  # each interrupted trial ran again exactly once, as it was proposed
        [again] = [r for r in search if (r.delta or {}).get("rerun_of") == t.id]
        assert (again.config_hash, again.seed, again.parent_id) == (
            t.config_hash,
            t.seed,
            t.parent_id,
        )
        assert again.status in ("keep", "discard") and again.counted
    assert sum(t.counted for t in rows) == 2


def _search(settings: Settings, sid: str) -> list[tuple[Any, ...]]:
    return [
        (t.config_hash, t.seed, t.status, t.objective)
        for t in rows_of(settings, sid)
        if t.kind == "search" and t.counted
    ]


@pytest.mark.slow
@pytest.mark.heavy  # two worker processes
def test_with_two_workers_a_trial_awaiting_its_verdict_is_judged_on_resume_not_rerun(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from alphaloop.meta_agent import nodes
    from alphaloop.meta_agent.session import SessionSpec, create_session, run_session

    spec = SessionSpec(
        goal="maximise validation Sharpe",
        data="synthetic",
        budget=3,
        noise_seeds=2,
        seed=5,
        proposer="random",
        workers=2,
    )
    reference = create_session(spec, settings)
    run_session(reference, settings)

    real = nodes.record

    def killed(ctx: Any) -> None:  # a kill once the outcome is held
        raise KeyboardInterrupt

    sid = create_session(spec, settings)
    monkeypatch.setattr(nodes, "record", killed)
    with pytest.raises(KeyboardInterrupt):
        run_session(sid, settings)
    with Journal(settings.journal_path) as journal:
        held = [row.idx for row, _ in journal.trials.awaiting_verdict(sid)]
    assert len(held) == 1
    monkeypatch.setattr(nodes, "record", real)
    run_session(sid, settings)
    with Journal(settings.journal_path) as journal:
        [event] = journal.logs.events(sid, kind="Resumed")
        assert journal.trials.awaiting_verdict(sid) == []
    assert event.payload["awaiting_verdict"] == held
    rows = rows_of(settings, sid)
    # The held trial kept its row (judged, not rerun); the two others in flight (two workers
    # keep three search trials in flight) ran again once each.
    [judged] = [t for t in rows if t.idx == held[0]]
    assert judged.counted and not judged.interrupted and judged.status in ("keep", "discard")
    assert len(event.payload["interrupted_trials"]) == 2
    assert _search(settings, sid) == _search(settings, reference)
