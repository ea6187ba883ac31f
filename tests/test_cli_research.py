"""``alphaloop research`` end to end: a whole session on synthetic data read back through
``alphaloop journal``, the keep rule and the limits replayed from the rows, stop and resume
from other processes, and bad input refused without touching the journal."""

from __future__ import annotations

import json
import math
import os
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.exceptions import AlphaloopError
from alphaloop.journal import Journal, SessionRecord, TrialRecord
from alphaloop.knobs import KNOBS, TrialConfig, knobs_for_mode
from alphaloop.market import load_market
from alphaloop.meta_agent.session import SessionSpec, create_session
from alphaloop.settings import Settings
from alphaloop.validation import sharpe_difference
from tests.cli_processes import spawn, wait_for

GOAL = "maximise validation Sharpe"
SESSION = [
    "research",
    GOAL,
    "--mode",
    "cufolio_only",
    "--budget",
    "4",
    "--data",
    "synthetic",
    "--noise-seeds",
    "2",
    # One fold: these tests replay the keep rule from each row's VALIDATION returns.
    "--folds",
    "1",
    "--json",
    "--proposer",
    "tpe",
]


def run_cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def read(settings: Settings, sid: str) -> tuple[SessionRecord, list[TrialRecord]]:
    with Journal(settings.journal_path) as journal:
        return journal.sessions.get(sid), journal.trials.of_session(sid)


def max_drawdown(returns: list[float]) -> float:
    wealth = np.concatenate([[1.0], np.cumprod(1 + np.asarray(returns))])
    return float(np.max(1 - wealth / np.maximum.accumulate(wealth)))


def per_day_sharpe(returns: list[float]) -> float:
    r = np.asarray(returns)
    return float(r.mean() / r.std(ddof=1))


def assert_verdicts_follow_the_rules(rows: list[TrialRecord], limit: float | None = None) -> None:
    """Replays every verdict from the rows alone: a trial that breaks the drawdown limit is a
    discard with the reason; while no trial is kept, the first within the limit is kept if the
    first baseline breaks it (it is then no bar); otherwise, with ``s`` the spread of the ``n``
    baseline Sharpes, ``t(a)`` the one-sided t quantile with ``n - 1`` dof and ``m`` the
    incumbent's seeds, a trial is confirmed on two fresh seeds only if its own Sharpe beats the
    incumbent's mean by ``t(0.10) s sqrt(1 + 1/m)``, and kept only if its mean over its three
    seeds beats it by ``t(0.05) s sqrt(1/3 + 1/m)`` and its seed-mean daily returns beat the
    incumbent's on the same days (paired Sharpe difference, p < 0.05)."""
    baselines = [t for t in rows if t.kind == "baseline"]
    base = [per_day_sharpe(t.val_returns) * math.sqrt(252) for t in baselines]
    floor, dof = float(np.std(base, ddof=1)), len(base) - 1
    best, m = float(np.mean(base)), len(base)
    incumbent = [t.val_returns for t in baselines]
    no_bar = limit is not None and max_drawdown(baselines[0].val_returns) > limit
    confirms: dict[int, list[TrialRecord]] = {}
    for t in rows:
        if t.kind == "confirm":
            confirms.setdefault(t.parent_id, []).append(t)
    for t in (t for t in rows if t.kind == "search"):
        objective = per_day_sharpe(t.val_returns) * math.sqrt(252)
        assert t.objective == pytest.approx(objective, rel=1e-9)
        drawdown = max_drawdown(t.val_returns)
        if limit is not None and drawdown > limit:
            assert t.status == "discard", t.idx
            assert t.reason == f"max drawdown {drawdown:.1%} exceeds the limit {limit:.1%}"
            assert t.id not in confirms
        elif no_bar:
            assert t.status == "keep", t.idx
            best, m, no_bar = objective, 1, False
            incumbent = [t.val_returns]
        elif objective - best <= stats.t.isf(0.10, dof) * floor * math.sqrt(1 + 1 / m):
            assert t.status == "discard" and "(screen, alpha 0.1," in t.reason, t.idx
            assert t.id not in confirms
        else:
            seeds = [objective] + [
                per_day_sharpe(c.val_returns) * math.sqrt(252) for c in confirms[t.id]
            ]
            assert [c.seed for c in confirms[t.id]] == [t.seed + len(base), t.seed + len(base) + 1]
            margin = stats.t.isf(0.05, dof) * floor * math.sqrt(1 / len(seeds) + 1 / m)
            ours = np.mean([t.val_returns, *(c.val_returns for c in confirms[t.id])], axis=0)
            window = sharpe_difference(ours, np.mean(incumbent, axis=0), reps=999).p_value < 0.05
            kept = float(np.mean(seeds)) - best > margin and window
            assert t.status == ("keep" if kept else "discard"), t.idx
            assert "(confirmed, alpha 0.05," in t.reason
            if kept:
                best, m = float(np.mean(seeds)), len(seeds)
                incumbent = [t.val_returns, *(c.val_returns for c in confirms[t.id])]


def deflated_sharpe(best: list[float], every: list[list[float]], n_trials: int) -> float:
    """Bailey & Lopez de Prado's deflated Sharpe ratio, written out from the paper: the hurdle
    from the variance of the trials' Sharpe ratios and their number."""
    sharpes = np.array([per_day_sharpe(r) for r in every])
    variance = float(np.var(sharpes, ddof=1))
    gamma = 0.5772156649015329
    hurdle = math.sqrt(variance) * (
        (1 - gamma) * stats.norm.ppf(1 - 1 / n_trials)
        + gamma * stats.norm.ppf(1 - 1 / (n_trials * math.e))
    )
    r = np.asarray(best)
    sr = per_day_sharpe(best)
    skew, kurt = stats.skew(r), stats.kurtosis(r, fisher=False)
    z = (sr - hurdle) * math.sqrt(len(r) - 1) / math.sqrt(1 - skew * sr + (kurt - 1) / 4 * sr**2)
    return float(stats.norm.cdf(z))


def test_a_session_end_to_end_and_read_back(settings: Settings) -> None:
    result = run_cli(*SESSION, "--seed", "4")
    assert result.exit_code == 0, result.output
    review = json.loads(result.stdout)
    sid = review["session"]["id"]
    s, rows = read(settings, sid)
    with Journal(settings.journal_path) as journal:
        clips = journal.logs.session_clips(sid)

    baselines = [t for t in rows if t.kind == "baseline"]
    search = [t for t in rows if t.kind == "search"]
    tests = [t for t in rows if t.kind == "test"]
    confirms = [t for t in rows if t.kind == "confirm"]
    kept = [t for t in search if t.status == "keep"]
    best = max(kept, key=lambda t: t.score) if kept else None
    # 2 baseline seeds, 4 search trials, confirmation seeds, the test evaluations.
    assert [t.idx for t in rows] == list(range(len(rows)))
    assert len(confirms) % 2 == 0 and not any(t.counted for t in confirms)
    assert [(t.seed, t.status, t.counted, t.proposer) for t in baselines] == [
        (4, "keep", False, "baseline"),
        (5, "keep", False, "baseline"),
    ]
    assert all(t.config == TrialConfig().model_dump() for t in baselines)
    assert [t.proposer for t in search] == ["tpe"] * 4 and all(t.counted for t in search)
    assert {t.status for t in search} <= {"keep", "discard"}
    assert all(t.seed == 4 and len(t.val_returns) == 300 for t in search)
    assert s.noise_floor == pytest.approx(np.std([t.objective for t in baselines], ddof=1))
    assert_verdicts_follow_the_rules(rows)

    # Each search config is its parent's config plus the proposal, with every change that
    # clipping made journaled as a clip row; the configs that ran are feasible.
    by_id = {t.id: t for t in rows}
    clips_of: dict[int, dict[str, Any]] = {}
    for c in clips:
        clips_of.setdefault(c.trial_id, {})[c.knob] = c
    cvar_knobs = set(knobs_for_mode("cufolio_only"))
    for t in search:
        parent = by_id[t.parent_id]
        assert set(t.changes) <= cvar_knobs
        for name in KNOBS:
            if t.config[name] != parent.config[name] and name not in t.changes:
                assert name in clips_of.get(t.id, {}), (t.idx, name)
        for name, proposed in t.changes.items():
            if t.config[name] != proposed:
                clip = clips_of[t.id][name]
                assert (clip.proposed, clip.applied) == (proposed, t.config[name])
        for name, clip in clips_of.get(t.id, {}).items():
            assert clip.applied == t.config[name]
        assert t.config["max_position_pct"] * 6 >= 1 - 1e-12
        assert (1 - t.config["cvar_alpha"]) * t.config["n_scenarios"] >= 50 - 1e-9
    assert clips

    # Finalize: the baseline and the pick (a kept trial that beat the default), once each on
    # TEST; the default is the pick when none did.
    final = s.final.journaled()
    chosen = by_id[final["best_trial_id"]] if "best_trial_id" in final else baselines[0]
    assert final["pick"] == ("search" if "best_trial_id" in final else "default")
    if best is None:
        assert final["pick_reason"].startswith("no improvement found")
    assert [t.parent_id for t in tests] == [baselines[0].id] + (
        [chosen.id] if chosen is not baselines[0] else []
    )
    assert all(t.status == "keep" and not t.counted for t in tests)
    assert all(len(t.val_returns) == 300 for t in tests)
    assert tests[0].val_returns != baselines[0].val_returns
    assert s.status == "finished" and s.best_trial_id == chosen.id
    assert (final["stop_reason"], final["n_trials"]) == ("trial budget of 4 reached", 4)
    assert final["baseline_test_objective"] == tests[0].objective
    # N and the variance of Sharpe ratios come from one set, the search trials (not the
    # baseline runs): the deflated Sharpe differs from one over both.
    scored = [t.val_returns for t in search if t.status in ("keep", "discard")]
    assert (final["dsr_set"], final["dsr_n_trials"]) == ("search trials with validation returns", 4)
    assert final["deflated_sharpe"] == pytest.approx(
        deflated_sharpe(chosen.val_returns, scored, 4), rel=1e-9
    )
    with_baselines = deflated_sharpe(chosen.val_returns, [t.val_returns for t in rows[:6]], 4)
    assert final["deflated_sharpe"] != pytest.approx(with_baselines, rel=1e-6)

    # The review printed by the session is what the journal holds, and what `journal` prints.
    again = run_cli("journal", sid, "--json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout) == review
    assert review["counted_trials"] == 4 and review["final"] == final
    assert [{k: v for k, v in t.items() if k != "clips"} for t in review["trials"]] == [
        t.model_dump(mode="json") for t in rows
    ]
    assert [len(t["clips"]) for t in review["trials"]] == [
        len(clips_of.get(t.id, {})) for t in rows
    ]


def test_a_drawdown_limit_discards_the_trials_that_break_it(settings: Settings) -> None:
    result = run_cli(*SESSION, "--seed", "4", "--max-drawdown", "0.121")
    assert result.exit_code == 0, result.output
    review = json.loads(result.stdout)
    s, rows = read(settings, review["session"]["id"])
    search = [t for t in rows if t.kind == "search"]
    broke = [t for t in search if max_drawdown(t.val_returns) > 0.121]
    assert broke and len(broke) < len(search)
    assert_verdicts_follow_the_rules(rows, limit=0.121)
    assert s.objective.max_drawdown == 0.121
    assert s.best_trial_id not in {t.id for t in broke}


# -- bad input -----------------------------------------------------------------------------------


def snapshot(path: Path) -> tuple[bytes, dict[str, int], list[str]]:
    """The journal file's bytes, its row counts and the files beside it."""
    counts: dict[str, int] = {}
    try:
        with Journal(path, create=False) as journal:
            for table in ("sessions", "trials", "events", "bounds_clips"):
                counts[table] = journal.db[table].count
    except AlphaloopError:
        pass
    return path.read_bytes(), counts, sorted(p.name for p in path.parent.iterdir())


@pytest.fixture
def journal_with_a_session(settings: Settings) -> str:
    return create_session(SessionSpec(goal=GOAL, data="synthetic", budget=3), settings)


def test_a_goal_that_looks_like_markup_is_shown_as_written(settings: Settings) -> None:
    goal = "hedge [/x] tails [bold]now"
    started = run_cli("research", goal, "--budget", "1", "--data", "synthetic",
                      "--noise-seeds", "2", "--proposer", "random")  # fmt: skip
    assert started.exit_code == 0, started.output
    # Two seeds run, with a warning on stderr: one degree of freedom keeps only large gains.
    assert "warning: only 2 noise seeds: their spread has 1 degree of freedom" in started.stderr
    with Journal(settings.journal_path) as journal:
        [s] = journal.sessions.list()
    assert s.goal == goal
    for args in (["status"], ["sessions"], ["journal", s.id]):
        shown = run_cli(*args)
        assert shown.exit_code == 0, (args, shown.output)
        assert "[/x]" in shown.output and "[bold]" in shown.output, args


def test_the_largest_session_seed_runs(settings: Settings) -> None:
    """The search proposers derive optuna seeds from the session seed; the baselines use the
    seeds after it: both stay within numpy's range at the top of the accepted one."""
    from alphaloop.spec import SESSION_SEED_MAX

    top = str(SESSION_SEED_MAX)
    args = ["--seed", top, "--noise-seeds", "2", "--budget", "2", "--data", "synthetic"]
    result = run_cli("research", GOAL, "--json", *args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["session"]["status"] == "finished"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["research", "resume", "s-nope"], "no session 's-nope'"),
        (["research", "stop", "s-nope"], "no session 's-nope'"),
        (["status", "s-nope"], "no session 's-nope'"),
        (["journal", "s-nope"], "no session 's-nope'"),
        (
            ["research", GOAL, "--budget", "0"],
            "--budget: Input should be greater than or equal to 1, got 0",
        ),
        (
            ["research", GOAL, "--budget", "-3"],
            "--budget: Input should be greater than or equal to 1, got -3",
        ),
        (["research", GOAL, "--mode", "rl"], "unknown mode 'rl'; choose one of ppo_only"),
        (["research", GOAL, "--metric", "alpha"], "unknown metric 'alpha'; choose one of"),
        (["research", GOAL, "--proposer", "gpt"], "unknown proposer 'gpt'"),
        (
            ["research", GOAL, "--proposer", "llm"],
            "the llm proposer needs an endpoint: set ALPHALOOP_LLM_BASE_URL",
        ),
        (["research", GOAL, "--noise-seeds", "0"], "--noise-seeds: Input should be greater than"),
        (
            ["research", GOAL, "--noise-seeds", "1"],
            "--noise-seeds: Input should be greater than or equal to 2, got 1",
        ),
        (["research", GOAL, "--max-drawdown", "1.5"], "--max-drawdown: Input should be less than"),
        (["research", GOAL, "--max-drawdown", "nan"], "--max-drawdown: Input should be a finite"),
        (["research", GOAL, "--max-turnover", "inf"], "--max-turnover: Input should be a finite"),
        (["research", GOAL, "--time-budget", "soon"], "cannot read duration 'soon'"),
        (["research", GOAL, "--time-budget", "10"], "--time-budget '10' has no unit; write 10s"),
        (["research", GOAL, "--symbols", ",,"], "no symbols in --symbols ',,'"),
        (
            ["research", GOAL, "--seed", "-1"],
            "--seed: Input should be greater than or equal to 0, got -1",
        ),
        (
            ["research", GOAL, "--seed", "4294967277"],
            "--seed: Input should be less than or equal to 4294967276",
        ),
        (["research", GOAL, "--data", "absent.csv"], "price file not found: absent.csv"),
        (["research", GOAL, "--folds", "4"], "is too short for 4 folds"),
        (["research", GOAL, "--folds", "4"], "ask for 3 folds or fewer"),
        (["research", GOAL, "--folds", "0"], "--folds"),
    ],
)
def test_bad_input_exits_2_and_leaves_the_journal_alone(
    settings: Settings, journal_with_a_session: str, args: list[str], message: str
) -> None:
    before = snapshot(settings.journal_path)
    if args[:2] == ["research", GOAL] and "--data" not in args:
        args = [*args, "--data", "synthetic"]
    result = run_cli(*args)
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert message in text and "Traceback" not in result.output
    if "s-nope" in args:
        assert journal_with_a_session in text  # the message lists the sessions there are
    assert snapshot(settings.journal_path) == before
    assert before[1]["sessions"] == 1


@pytest.mark.parametrize(
    "args",
    [
        ["sessions"],
        ["status"],
        ["journal", "s-any"],
        ["research", "resume", "s-any"],
        ["research", "stop", "s-any"],
        ["research", GOAL, "--data", "synthetic", "--budget", "1"],
    ],
)
@pytest.mark.parametrize("kind", ["text", "foreign sqlite"])
def test_a_file_that_is_not_a_journal_is_refused_untouched(
    settings: Settings, args: list[str], kind: str
) -> None:
    path = settings.journal_path
    path.parent.mkdir(parents=True)
    if kind == "text":
        path.write_text("these are my notes, not a journal\n")
        reason = "not an SQLite database"
    else:
        import sqlite3

        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE notes (body TEXT)")
            conn.execute("INSERT INTO notes VALUES ('keep me')")
        conn.close()
        reason = "an SQLite database of another application (notes)"
    before = path.read_bytes(), sorted(p.name for p in path.parent.iterdir())
    result = run_cli(*args)
    # The journal cannot be used: the work fails (1), as for any unusable journal.
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert "is not an alphaloop journal" in text and reason in text
    assert (path.read_bytes(), sorted(p.name for p in path.parent.iterdir())) == before


@pytest.mark.parametrize("args", [["research", "resume", "s-any"], ["status", "s-any"]])
def test_commands_that_read_a_journal_say_when_there_is_none(
    settings: Settings, args: list[str]
) -> None:
    result = run_cli(*args)
    assert result.exit_code == 2, result.output
    assert "no journal at" in " ".join(result.output.split())
    assert not settings.home.exists()


# -- other processes -----------------------------------------------------------------------------


def only_session(journal: Journal) -> str | None:
    sessions = journal.sessions.list()
    return sessions[0].id if sessions else None


@pytest.mark.slow
def test_stop_from_another_process_ends_after_the_current_trial(
    settings: Settings, tmp_path: Path
) -> None:
    log = tmp_path / "session.out"
    args = [*SESSION[:5], "100", *SESSION[6:-1], "random"]
    assert args[4:6] == ["--budget", "100"] and args[-2:] == ["--proposer", "random"]
    proc = spawn(args, settings, log)
    try:
        sid = wait_for(settings, only_session, proc)
        wait_for(settings, lambda j: j.trials.counted(sid) >= 2, proc)
        stopped = run_cli("research", "stop", sid)
        assert stopped.exit_code == 0, stopped.output
        assert f"stop requested for {sid}" in stopped.output
        assert proc.wait(timeout=60) == 0, log.with_suffix(".err").read_text()
    finally:
        proc.kill()
    review = json.loads(log.read_text())
    s, rows = read(settings, sid)
    with Journal(settings.journal_path) as journal:
        [stop] = journal.logs.events(sid, kind="StopRequested")
        counted = journal.trials.counted(sid)
    assert stop.payload["applied"] is True and stop.payload["status_before"] == "running"
    assert s.status == "finished" and s.final.stop_reason == "stop requested"
    assert review["final"] == s.final.journaled()
    assert 2 <= counted == s.final.n_trials < 100
    search = [t for t in rows if t.kind == "search"]
    # At most the current trial finished after the request (the one running, or the one being
    # proposed when it came), and it finished normally.
    assert len([t for t in search if t.finished_at > stop.created_at]) <= 1
    assert all(t.status in ("keep", "discard") for t in search)
    assert [t.parent_id for t in rows if t.kind == "test"][:1] == [rows[0].id]
    assert all(t.status != "running" for t in rows)


@pytest.mark.slow
def test_a_session_killed_mid_trial_resumes_without_losing_or_repeating_a_trial(
    settings: Settings, tmp_path: Path
) -> None:
    log = tmp_path / "session.out"
    # PPO trials on synthetic data; with seed 3 the first search trial trains for seconds.
    args = [
        "research",
        GOAL,
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
        "--json",
    ]
    proc = spawn(args, settings, log)
    try:
        sid = wait_for(settings, only_session, proc)
        running = wait_for(
            settings,
            lambda j: [t for t in j.trials.of_session(sid, kind="search") if t.status == "running"],
            proc,
        )
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    [cut] = running
    s, rows = read(settings, sid)
    # The row still says running, but its owner is gone: reads show it interrupted.
    assert s.status == "interrupted" and s.owner_pid == proc.pid
    assert s.error == f"its process {proc.pid} ended while it was running"
    assert next(t for t in rows if t.id == cut.id).status == "running"

    result = run_cli("research", "resume", sid, "--json")
    assert result.exit_code == 0, result.output
    s, rows = read(settings, sid)
    with Journal(settings.journal_path) as journal:
        counted = journal.trials.counted(sid)
        [resumed] = journal.logs.events(sid, kind="Resumed")
    assert counted == 2 == s.final.n_trials
    assert s.status == "finished" and s.final.stop_reason == "trial budget of 2 reached"
    assert [t.idx for t in rows] == list(range(len(rows)))
    search = [t for t in rows if t.kind == "search"]
    assert (search[0].id, search[0].status, search[0].error) == (cut.id, "crash", "interrupted")
    assert not search[0].counted and resumed.payload["interrupted_trials"] == [cut.idx]
    # The cut trial ran again with the config it was proposed, then the search went on.
    assert search[1].config_hash == cut.config_hash and search[1].seed == cut.seed
    assert [t.status in ("keep", "discard") for t in search[1:]] == [True, True]
    assert all(t.status != "running" for t in rows)
    tests = [t for t in rows if t.kind == "test"]
    assert tests and all(t.status == "keep" for t in tests)
    assert s.final.baseline_test_objective == tests[0].objective
    assert json.loads(result.stdout)["final"] == s.final.journaled()
    assert load_market("synthetic").fingerprint == s.data_fingerprint


def test_folds_are_journaled_and_one_fold_says_what_it_does_not_measure(
    settings: Settings,
) -> None:
    args = [a for a in SESSION if a not in ("--folds", "1")]
    result = run_cli(*args, "--budget", "2")
    assert result.exit_code == 0, result.output
    final = json.loads(result.stdout)["final"]
    assert final["folds"]["n"] == 3
    assert final["folds"]["note"].startswith("all 3 folds of ")
    sid = json.loads(result.stdout)["session"]["id"]
    with Journal(settings.journal_path) as journal:
        folds = journal.folds.of_session(sid)
        baselines = journal.trials.of_session(sid, kind="baseline")
    assert all(len(folds[t.id]) == 3 for t in baselines)
    assert [f.end_date for f in folds[baselines[0].id]][-1] == final["folds"]["windows"][-1][1]
    one = run_cli(*SESSION, "--budget", "1")
    assert one.exit_code == 0
    assert "window noise" in " ".join(one.stderr.split())
    assert "window noise" in json.loads(one.stdout)["final"]["folds"]["note"]
