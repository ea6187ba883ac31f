"""Research sessions through the library: the keep rule and its noise floor, crashes that do not
stop the loop, resuming after an interruption at any step, and what the proposer may see.

Sessions run for real (SQLite journal, the research loop, Mean-CVaR trials) on the seeded
synthetic data, each in a temporary alphaloop home.
"""

from __future__ import annotations

import itertools
import math
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console
from scipy import stats

from alphaloop.cli import views
from alphaloop.exceptions import (
    InvalidRequest,
    TrialCrashed,
    TrialTimeout,
)
from alphaloop.journal import Journal, SessionRecord, TrialRecord
from alphaloop.knobs import ConfigDelta
from alphaloop.market import PLANTED_HOLD_DAYS, market_of, split, synthetic_prices
from alphaloop.meta_agent import nodes, session
from alphaloop.meta_agent.proposers import ProposalContext, ProposerBase, TPEProposer
from alphaloop.meta_agent.session import SessionSpec, create_session, run_session
from alphaloop.meta_agent.state import SessionContext
from alphaloop.placement import jobs as trial_jobs
from alphaloop.settings import Settings
from alphaloop.spec import DataSpec, Objective
from alphaloop.trials import TrialBudget
from alphaloop.validation import sharpe_difference


@pytest.fixture
def settings(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> Settings:
    return Settings(ALPHALOOP_HOME=str(tmp_path / "home"))


def spec(**overrides: Any) -> SessionSpec:
    values: dict[str, Any] = dict(
        goal="maximise validation Sharpe",
        mode="cufolio_only",
        budget=4,
        proposer="tpe",
        data="synthetic",
        noise_seeds=2,
        # One fold: these tests count trials and evaluator calls (folds have their own).
        folds=1,
    )
    return SessionSpec(**{**values, **overrides})


def run(settings: Settings, **overrides: Any) -> str:
    sid = create_session(spec(**overrides), settings)
    run_session(sid, settings)
    return sid


def read(settings: Settings, sid: str) -> tuple[SessionRecord, list[TrialRecord]]:
    with Journal(settings.journal_path) as journal:
        return journal.sessions.get(sid), journal.trials.of_session(sid)


def sharpe(returns: list[float]) -> float:
    r = np.asarray(returns)
    return float(r.mean() / r.std(ddof=1) * math.sqrt(252))


def fold_objective(folds: list[list[float]]) -> float:
    """A trial's objective from its folds' returns: the mean fold Sharpe less one standard
    error of it (the Sharpe itself for one fold)."""
    values = [sharpe(f) for f in folds]
    if len(values) == 1:
        return values[0]
    return float(np.mean(values) - np.std(values, ddof=1) / math.sqrt(len(values)))


def replay_verdicts(
    rows: list[TrialRecord], folds: dict[int, list[list[float]]]
) -> tuple[float, dict[int, str]]:
    """The noise floor and the keep rule, recomputed from the journal rows and their folds'
    returns alone (limits aside): with ``s`` the spread of the ``n`` baseline objectives and
    ``t(a)`` the one-sided t quantile with ``n - 1`` dof, a search trial runs its other folds
    only if its last fold's paired Sharpe-difference z against the incumbent's seed mean is at
    least -0.5; it is confirmed on two more seeds only if its own objective beats the
    incumbent's mean by ``t(0.10) s sqrt(1 + 1/m)``, and kept only if its mean over its three
    seeds beats it by ``t(0.05) s sqrt(1/3 + 1/m)`` (``m``: the incumbent's seeds) and its
    seed-mean daily returns beat the incumbent's on all folds' days at p < 0.05."""
    k = max(len(f) for f in folds.values())
    series = {t.id: [x for f in folds.get(t.id, []) for x in f] for t in rows}
    base_rows = [t for t in rows if t.kind == "baseline" and t.status == "keep"]
    base = [fold_objective(folds[t.id]) for t in base_rows]
    floor, dof = float(np.std(base, ddof=1)), len(base) - 1
    best, m = float(np.mean(base)), len(base)
    incumbent = [folds[t.id] for t in base_rows]
    confirms: dict[int, list[TrialRecord]] = {}
    for t in rows:
        if t.kind == "confirm":
            confirms.setdefault(t.parent_id, []).append(t)
    verdicts = {}
    for t in rows:
        if t.kind != "search" or t.status not in ("keep", "discard"):
            continue
        last = np.mean([f[-1] for f in incumbent], axis=0)
        if len(folds[t.id]) < k:  # raced out on its most recent fold
            assert sharpe_difference(folds[t.id][0], last).z < -0.5, t.idx
            verdicts[t.idx] = "discard"
            continue
        objective = fold_objective(folds[t.id])
        assert t.objective == pytest.approx(objective, rel=1e-9)
        assert series[t.id] == pytest.approx(t.val_returns, rel=1e-12)
        screen = stats.t.isf(0.10, dof) * floor * math.sqrt(1 + 1 / m)
        if objective - best <= screen:
            assert t.id not in confirms and t.n_seeds is None, t.idx
            verdicts[t.idx] = "discard"
            continue
        if t.id not in confirms:  # a limit discarded it before any confirmation
            verdicts[t.idx] = "screened"
            continue
        seeds = [objective, *(fold_objective(folds[c.id]) for c in confirms[t.id])]
        assert len(seeds) == 3 and t.seed_mean == pytest.approx(np.mean(seeds), rel=1e-9)
        margin = stats.t.isf(0.05, dof) * floor * math.sqrt(1 / 3 + 1 / m)
        ours = np.mean([series[t.id], *(series[c.id] for c in confirms[t.id])], axis=0)
        theirs = np.mean([np.concatenate(f) for f in incumbent], axis=0)
        window = sharpe_difference(ours, theirs, reps=999).p_value < 0.05  # the rule's resamples
        verdicts[t.idx] = "keep" if np.mean(seeds) - best > margin and window else "discard"
        if verdicts[t.idx] == "keep":
            best, m = float(np.mean(seeds)), 3
            incumbent = [folds[t.id], *(folds[c.id] for c in confirms[t.id])]
    return floor, verdicts


def journaled_folds(settings: Settings, sid: str) -> dict[int, list[list[float]]]:
    with Journal(settings.journal_path) as journal:
        return {i: [f.returns for f in fs] for i, fs in journal.folds.of_session(sid).items()}


def test_a_lucky_seed_short_of_the_t_margin_is_discarded(settings: Settings) -> None:
    sid = run(settings, seed=3, noise_seeds=3, folds=3)
    s, rows = read(settings, sid)
    floor, verdicts = replay_verdicts(rows, journaled_folds(settings, sid))
    assert s.noise_floor == pytest.approx(floor, rel=1e-9) and floor > 0.01
    assert verdicts == {t.idx: t.status for t in rows if t.kind == "search"}
    # The case the rule exists for: better than the baseline mean, not by the t-margin.
    base_mean = np.mean([t.objective for t in rows if t.kind == "baseline"])
    lucky = [t for t in rows if t.kind == "search" and t.objective > base_mean]
    assert lucky and all(t.status == "discard" and "t-margin" in t.reason for t in lucky)
    assert all("alpha" in t.reason and "2 dof)" in t.reason for t in lucky)
    assert s.final.stop_reason == "trial budget of 4 reached"
    assert s.final.best_trial_id is None  # nothing kept: only the baseline is tested
    assert [t.parent_id for t in rows if t.kind == "test"] == [rows[0].id]
    # the TEST row names what it evaluates, as the page's TEST table shows it
    assert [t.reason for t in rows if t.kind == "test"] == [f"TEST of the default, #{rows[0].idx}"]


class PlantedEdit(ProposerBase):
    """Proposes the holding period the planted market truly rewards (see market.worlds)."""

    name = "tpe"

    def propose(self, ctx: ProposalContext) -> ConfigDelta:
        return ConfigDelta(changes={"cufolio_hold_days": PLANTED_HOLD_DAYS}, rationale="short")


def test_a_candidate_is_kept_only_after_its_confirmation_seeds_and_the_folds_days(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session, "make_proposer", lambda *args: PlantedEdit())
    sid = run(settings, seed=4, noise_seeds=3, budget=1, data="planted:0", folds=None)
    s, rows = read(settings, sid)
    folds = journaled_folds(settings, sid)
    _, verdicts = replay_verdicts(rows, folds)
    assert verdicts == {t.idx: t.status for t in rows if t.kind == "search"}
    [kept] = [t for t in rows if t.kind == "search" and t.status == "keep"]
    confirms = [t for t in rows if t.kind == "confirm"]
    # Two fresh seeds after the baseline's 4, 5, 6; the same config; not counted.
    assert [(t.parent_id, t.seed, t.config_hash, t.counted) for t in confirms] == [
        (kept.id, 7, kept.config_hash, False),
        (kept.id, 8, kept.config_hash, False),
    ]
    assert kept.n_seeds == 3 and kept.reason.startswith("mean ")
    assert "over the incumbent on the same 2,268 days of 3 folds" in kept.reason
    # Every scored row has its three folds, three VALIDATION lengths ending where TEST starts.
    scored = [t for t in rows if t.kind in ("baseline", "search", "confirm")]
    assert all(len(folds[t.id]) == 3 for t in scored)
    assert s.final.n_trials == 1 and s.final.best_trial_id == kept.id
    assert s.final.pick == "search" and s.final.pick_reason.startswith(f"trial {kept.idx} beats")
    assert s.final.folds.n == 3 and s.final.folds.windows[-1][1] == "2016-08-05"


def test_failing_trials_are_journaled_and_the_loop_goes_on(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = trial_jobs.run_trial
    calls: list[int] = []

    def failing(*args: Any, **kwargs: Any) -> Any:
        # Calls 1 and 2 are the baseline seeds; the first three search trials fail.
        calls.append(len(calls) + 1)
        failure = {
            3: TrialCrashed("policy diverged: non-finite parameters in log_std"),
            4: TrialTimeout("trial ran past its time limit"),
            5: ZeroDivisionError("a bug in a trial"),
        }.get(len(calls))
        if failure is not None:
            raise failure
        return real(*args, **kwargs)

    monkeypatch.setattr(trial_jobs, "run_trial", failing)
    sid = run(settings, budget=4, seed=4)
    s, rows = read(settings, sid)
    search = [t for t in rows if t.kind == "search"]
    assert [(t.status, t.error) for t in search[:3]] == [
        ("crash", "policy diverged: non-finite parameters in log_std"),
        ("timeout", "trial ran past its time limit"),
        ("crash", "ZeroDivisionError('a bug in a trial')"),
    ]
    assert "TrialCrashed" in search[0].traceback_tail
    assert "ZeroDivisionError" in search[2].traceback_tail
    assert all(t.counted for t in search) and len(search) == 4
    assert search[3].status in ("keep", "discard") and search[3].objective is not None
    assert s.status == "finished" and s.final.n_trials == 4


def where_is(name: str) -> Any:
    """The module ``name`` is looked up in: the evaluator where trials run, else the nodes."""
    return trial_jobs if name == "run_trial" else nodes


def interrupt(name: str, at_call: int) -> Callable[..., Any]:
    """``<module>.<name>`` raising KeyboardInterrupt (a kill, as far as the journal can tell)
    on its n-th call; every other call goes through."""
    real, calls = getattr(where_is(name), name), []

    def check() -> None:
        calls.append(name)
        if len(calls) == at_call:
            raise KeyboardInterrupt

    def trial(*args: Any, **kwargs: Any) -> Any:
        check()
        return real(*args, **kwargs)

    def node(ctx: SessionContext) -> None:
        check()
        real(ctx)

    return trial if name == "run_trial" else node


def outcome(settings: Settings, sid: str) -> dict[str, Any]:
    s, rows = read(settings, sid)
    search = [t for t in rows if t.kind == "search" and t.counted]
    tests = [t for t in rows if t.kind == "test" and t.status == "keep"]
    baselines = [t for t in rows if t.kind == "baseline" and t.status == "keep"]
    return {
        "configs": [t.config_hash for t in search],
        "statuses": [t.status for t in search],
        "objectives": [t.objective for t in search],
        "baseline_seeds": sorted(t.seed for t in baselines),
        "confirms": [
            (t.parent_id, t.seed, t.objective)
            for t in rows
            if t.kind == "confirm" and t.status == "keep"
        ],
        "noise_floor": s.noise_floor,
        "test_objectives": [t.objective for t in tests],
        "final": {
            k: getattr(s.final, k) for k in ("stop_reason", "n_trials", "baseline_test_objective")
        },
    }


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    settings = Settings(ALPHALOOP_HOME=str(tmp_path_factory.mktemp("reference")))
    # Seed 4 with 3 noise seeds: the first search trial passes the screen, is confirmed and kept.
    return outcome(settings, run(settings, budget=5, seed=4, noise_seeds=3))


@pytest.mark.parametrize(
    ("where", "at_call"),
    [
        # run_trial runs 3 baseline seeds, search trial 1 and its 2 confirmations, search trials
        # 2..5, then the test-window evaluations.
        ("run_trial", 2),  # mid baseline seed
        ("run_trial", 4),  # mid search trial
        ("run_trial", 6),  # mid confirmation (the first one is done)
        ("run_trial", 11),  # mid finalize
        ("confirm", 1),  # a search trial passed the screen, no confirmation run yet
        ("record", 1),  # a search trial confirmed, its verdict not yet journaled
        ("record", 3),  # a search trial screened out, its verdict not yet journaled
        ("propose", 2),  # between two search trials
    ],
)
def test_a_session_interrupted_anywhere_resumes_as_if_it_never_stopped(
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    uninterrupted: dict[str, Any],
    where: str,
    at_call: int,
) -> None:
    sid = create_session(spec(budget=5, seed=4, noise_seeds=3), settings)
    monkeypatch.setattr(where_is(where), where, interrupt(where, at_call))
    with pytest.raises(KeyboardInterrupt):
        run_session(sid, settings)
    s, rows = read(settings, sid)
    assert s.status == "interrupted" and s.error == "KeyboardInterrupt()"
    cut = [t for t in rows if t.status == "running"]
    monkeypatch.undo()

    run_session(sid, settings)
    s, rows = read(settings, sid)
    resumed = outcome(settings, sid)
    assert resumed["baseline_seeds"] == uninterrupted["baseline_seeds"] == [4, 5, 6]
    assert [c[1:] for c in resumed["confirms"]] == [c[1:] for c in uninterrupted["confirms"]]
    assert [c[1] for c in resumed["confirms"]] == [7, 8]
    assert resumed["configs"] == uninterrupted["configs"]
    assert resumed["statuses"] == uninterrupted["statuses"]
    np.testing.assert_allclose(resumed["objectives"], uninterrupted["objectives"], rtol=1e-12)
    assert resumed["noise_floor"] == pytest.approx(uninterrupted["noise_floor"], rel=1e-12)
    np.testing.assert_allclose(
        resumed["test_objectives"], uninterrupted["test_objectives"], rtol=1e-12
    )
    assert resumed["final"]["stop_reason"] == uninterrupted["final"]["stop_reason"]
    assert resumed["final"]["n_trials"] == 5
    assert resumed["final"]["baseline_test_objective"] == pytest.approx(
        uninterrupted["final"]["baseline_test_objective"], rel=1e-12
    )
    assert sorted(t.idx for t in rows) == list(range(len(rows)))
    with Journal(settings.journal_path) as journal:
        [event] = journal.logs.events(sid, kind="Resumed")
    if where != "run_trial":
        # Nothing was running, or the finished trial awaited only its verdict: no row is lost
        # or run twice.
        assert all(t.status != "crash" for t in rows)
        assert len(rows) == 3 + 5 + 2 + len(uninterrupted["test_objectives"])
        assert event.payload["interrupted_trials"] == []
        return
    # The cut trial (the newest running row: mid confirmation, the candidate awaiting its
    # verdict is running too, and is not lost) is kept as an uncounted crash and ran again with
    # the same config and seed.
    [row] = [t for t in rows if t.id == cut[-1].id]
    waiting = [t for t in rows if t.id in {c.id for c in cut[:-1]}]
    assert all(t.kind == "search" and t.counted and not t.interrupted for t in waiting)
    assert (row.status, row.error, row.counted) == ("crash", "interrupted", False)
    again = [t for t in rows if t.idx > row.idx and t.kind == row.kind]
    assert (again[0].config_hash, again[0].seed) == (row.config_hash, row.seed)
    assert again[0].status not in ("crash", "running")
    assert event.payload["interrupted_trials"] == [row.idx]


class Spy(ProposerBase):
    """A TPE proposer that keeps every context it is given."""

    name = "tpe"

    def __init__(self) -> None:
        self.inner = TPEProposer()
        self.seen: list[ProposalContext] = []

    def propose(self, ctx: ProposalContext) -> ConfigDelta:
        self.seen.append(ctx)
        return self.inner.propose(ctx)


def floats(value: Any) -> Iterator[float]:
    """Every number in a nested structure that is not a whole number."""
    if isinstance(value, dict):
        for v in value.values():
            yield from floats(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from floats(v)
    elif isinstance(value, float) and math.isfinite(value) and not value.is_integer():
        yield value


def _without(value: Any, key: str) -> Any:
    return {k: v for k, v in value.items() if k != key} if isinstance(value, dict) else value


def test_the_proposer_never_receives_a_test_window_figure(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = Spy()
    build: Callable[..., Any] = lambda *args: spy  # noqa: E731
    monkeypatch.setattr(session, "make_proposer", build)
    sid = run(settings, budget=4, seed=4)
    _, rows = read(settings, sid)
    tests = [t for t in rows if t.kind == "test"]
    assert tests and all(t.status == "keep" for t in tests)
    held_out = set()
    for t in tests:
        figures = [t.objective, t.val_returns, t.metrics, *t.baselines.values()]
        # A hit rate is a count over 300 days in either window (163/300 in both, here): equal
        # by arithmetic, not by a leak.
        held_out |= set(floats([_without(f, "hit_rate") for f in figures]))
    assert len(held_out) > 300  # a test window of 300 daily returns, metrics, baselines
    # What the proposer saw during the session, and what it would be given now, after finalize.
    with Journal(settings.journal_path) as journal:
        ctx = session._context(journal, sid, spec(budget=4, seed=4), settings, None)
        after = nodes.proposal_context(ctx)
    assert len(spy.seen) == 4
    for seen in [*spy.seen, after]:
        assert not held_out & set(floats(seen.model_dump()))
        assert {v.kind for v in seen.history} <= {"baseline", "search"}
        assert not {v.idx for v in seen.history} & {t.idx for t in tests}
    # Confirmation rows are not the proposer's history: the kept trial's reason states its mean.
    loop = [t.idx for t in rows if t.kind in ("baseline", "search")]
    assert [v.idx for v in after.history] == loop
    validation = set(floats([t.objective for t in rows if t.kind == "search"]))
    assert validation <= set(floats(after.model_dump()))  # the check would see figures


def test_limits_make_the_best_trial_a_discard_with_the_reason(settings: Settings) -> None:
    sid = run(settings, seed=4, objective=Objective(max_drawdown=0.115))
    s, rows = read(settings, sid)
    search = [t for t in rows if t.kind == "search"]
    for t in search:
        wealth = np.concatenate([[1.0], np.cumprod(1 + np.asarray(t.val_returns))])
        drawdown = float(np.max(1 - wealth / np.maximum.accumulate(wealth)))
        assert drawdown > 0.115
        assert t.status == "discard"
        assert t.reason == f"max drawdown {drawdown:.1%} exceeds the limit 11.5%"
    _, verdicts = replay_verdicts(rows, journaled_folds(settings, sid))
    # Without the limit one would have passed the screen and been confirmed.
    assert "screened" in verdicts.values()
    assert s.final.best_trial_id is None
    # Nothing met the limit, the baseline reported instead included: the session says so.
    base = rows[0]
    assert base.kind == "baseline" and base.metrics["max_drawdown"] > 0.115
    base_breaks = f"max drawdown {base.metrics['max_drawdown']:.1%} exceeds the limit 11.5%"
    assert base.status == "keep" and base.violation == base_breaks
    assert (s.final.admissible, s.final.n_admissible, s.final.violation) == (
        False,
        0,
        base_breaks,
    )
    assert s.final.admissible_reason == (
        "no trial reported meets the limits (max drawdown <= 11.5%): none of 4 search trials, "
        f"nor the baseline reported instead ({base_breaks}); its figures are not a result "
        "within the limits"
    )
    console = Console(width=200, record=True)
    console.print(views.final_panel(s))
    panel = " ".join(console.export_text().split())
    assert "NOT WITHIN THE LIMITS: no trial reported meets the limits" in panel
    assert "deflated Sharpe ratio of the baseline" in panel


def test_a_baseline_that_breaks_the_limits_is_no_bar_for_trials_within_them(
    settings: Settings,
) -> None:
    # Seed 4: the baseline's drawdown is about 15.2%, every search trial's about 12%.
    sid = run(settings, seed=4, objective=Objective(max_drawdown=0.15))
    s, rows = read(settings, sid)
    base = [t for t in rows if t.kind == "baseline"]
    search = [t for t in rows if t.kind == "search"]
    assert all(t.violation and t.violation.startswith("max drawdown") for t in base)
    assert all(t.violation is None for t in search)
    # Short of the baseline's bar, yet kept: it is the first trial within the limit.
    first, bar = search[0], np.mean([t.objective for t in base]) + 2 * s.noise_floor
    assert first.objective < bar and first.status == "keep"
    assert (
        first.reason
        == f"first trial within the limits; the baseline breaks them ({base[0].violation})"
    )
    with Journal(settings.journal_path) as journal:
        board = journal.trials.leaderboard(sid)
    assert [t.kind for t in board] == ["search"] * len(search) + ["baseline"] * len(base)
    # Kept, but the pick must pass the pick's test like any other: none beats the default on
    # the folds' days, so the default is reported, breaking the limit, and says so (the former
    # rule reported the best kept trial untested).
    assert s.final.pick == "default" and s.final.best_trial_id is None
    assert s.final.pick_reason is not None and s.final.pick_reason.startswith(
        "no improvement found: none of the"
    )
    assert "the closest, trial " in s.final.pick_reason
    assert f"the default breaks the limits ({base[0].violation})" in s.final.pick_reason
    assert s.final.admissible is False
    assert s.final.admissible_reason == (
        "the default, reported since no search trial beat it with confidence, breaks the "
        f"limits ({base[0].violation}): {len(search)} of {len(search)} search trials met the "
        "limits (max drawdown <= 15.0%), none of them picked by the pick's test; its figures "
        "are not a result within the limits"
    )


def test_ppo_trials_journal_their_training_curve(settings: Settings) -> None:
    # One point per PPO update, and exactly the budget trained whatever n_steps is.
    budget = TrialBudget(total_timesteps=768, n_envs=2)
    sid = run(
        settings,
        mode="ppo_only",
        budget=1,
        noise_seeds=2,
        trial_budget=budget,
        proposer="random",
    )
    _, rows = read(settings, sid)
    trained = [t for t in rows if t.kind in ("baseline", "search") and t.status != "crash"]
    assert len(trained) == 3  # two baseline seeds (one has no spread) and the trial
    for t in trained:
        # Each env copy trains 768 / 2 = 384 steps in rollouts of about n_steps each.
        per_env = budget.total_timesteps // budget.n_envs
        k = max(1, math.floor(per_env / t.config["n_steps"] + 0.5))
        lengths = sorted((per_env // k + (i < per_env % k) for i in range(k)), reverse=True)
        steps = [p[0] for p in t.curve]
        assert steps == list(itertools.accumulate(n * budget.n_envs for n in lengths))
        assert all(math.isfinite(p[1]) for p in t.curve)
        assert t.env_steps == steps[-1] == budget.total_timesteps  # the budget, exactly
    # Test-window rows evaluate the saved policy: nothing was trained, so no curve.
    assert all(t.curve is None and t.env_steps is None for t in rows if t.kind == "test")


def test_a_stop_requested_while_proposing_runs_no_further_trial(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    class SlowToAnswer(Spy):
        """Stands in for an LLM that is still thinking when the user asks the session to stop."""

        def propose(self, ctx: ProposalContext) -> ConfigDelta:
            if len(self.seen) == 2:
                session.request_stop(ctx.session_id, settings)
            return super().propose(ctx)

    proposer = SlowToAnswer()
    monkeypatch.setattr(session, "make_proposer", lambda *args: proposer)
    sid = run(settings, budget=6)
    s, rows = read(settings, sid)
    search = [t for t in rows if t.kind == "search"]
    # Two proposals ran; the third was answered after the stop and never became a trial.
    assert len(proposer.seen) == 3 and len(search) == 2
    assert s.status == "finished" and s.final.stop_reason == "stop requested"
    assert s.final.n_trials == 2 and len([t for t in rows if t.kind == "test"]) >= 1


def test_the_journal_is_the_only_database(settings: Settings) -> None:
    run(settings, budget=1)
    files = {p.name for p in settings.home.iterdir() if p.suffix == ".db"}
    assert files == {settings.journal_path.name}
    with sqlite3.connect(settings.journal_path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert not {"checkpoints", "writes"} & tables


@pytest.fixture(scope="module")
def uninterrupted_folds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    settings = Settings(ALPHALOOP_HOME=str(tmp_path_factory.mktemp("reference-folds")))
    return outcome(settings, run(settings, budget=3, seed=3, noise_seeds=2, folds=3))


@pytest.mark.parametrize(
    "at_call",
    [
        2,  # baseline seed 3: its most recent fold journaled, the next one cut
        8,  # the first search trial: its first fold journaled, racing on
    ],
)
def test_a_kill_mid_fold_loses_no_fold_and_runs_none_twice(
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    uninterrupted_folds: dict[str, Any],
    at_call: int,
) -> None:
    sid = create_session(spec(budget=3, seed=3, noise_seeds=2, folds=3), settings)
    monkeypatch.setattr(trial_jobs, "run_trial", interrupt("run_trial", at_call))
    with pytest.raises(KeyboardInterrupt):
        run_session(sid, settings)
    monkeypatch.undo()
    run_session(sid, settings)
    resumed = outcome(settings, sid)
    for key in ("configs", "statuses", "baseline_seeds"):
        assert resumed[key] == uninterrupted_folds[key], key
    assert [c[1:] for c in resumed["confirms"]] == [c[1:] for c in uninterrupted_folds["confirms"]]
    np.testing.assert_allclose(resumed["objectives"], uninterrupted_folds["objectives"], rtol=1e-12)
    # Journal rows: every (config, seed, fold) ran once; a carried-over fold names its origin.
    _, rows = read(settings, sid)
    by_id = {t.id: t for t in rows}
    with Journal(settings.journal_path) as journal:
        folds = [f for fs in journal.folds.of_session(sid).values() for f in fs]
    ran = [(by_id[f.trial_id].config_hash, by_id[f.trial_id].seed, f.fold) for f in folds]
    original = [key for key, f in zip(ran, folds, strict=True) if f.reused_from is None]
    assert len(original) == len(set(original))
    carried = [f for f in folds if f.reused_from is not None]
    assert len(carried) == 1
    source = next(f for f in folds if f.id == carried[0].reused_from)
    assert by_id[source.trial_id].error == "interrupted"
    assert (source.fold, source.returns) == (carried[0].fold, carried[0].returns)


def test_a_session_is_judged_by_its_own_gates_over_the_settings_over_the_defaults(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    # The settings turn PBO off and ask more Sharpe; the session asks its own Sharpe bar and a
    # drawdown limit: the stored spec holds the resolved gates, and finalize judges by them.
    settings = Settings(
        ALPHALOOP_HOME=str(tmp_path / "home"), ALPHALOOP_GATES="max_pbo=off,min_sharpe=2.5"
    )
    asked = SessionSpec.model_validate(
        {**spec(budget=2).model_dump(), "gates": {"min_sharpe": 0.1, "min_hit_rate": None}}
    )
    sid = create_session(
        asked.model_copy(update={"objective": Objective(max_drawdown=0.5)}), settings
    )
    run_session(sid, settings)
    s, _ = read(settings, sid)
    stored = s.spec.gates
    assert (stored.min_sharpe, stored.max_pbo, stored.min_hit_rate) == (0.1, None, None)
    assert stored.max_drawdown == 0.5 and stored.min_profit_factor == 1.1
    results = {r.gate: r for r in s.final.gates.results}
    assert "pbo" not in results and "hit_rate" not in results
    assert results["sharpe"].threshold == 0.1 and results["max_drawdown"].threshold == 0.5
    assert list(results)[:2] == ["beats_default", "beats_equal_weight"]
    assert s.final.gates_summary.startswith(("GO: beats the default", "NO-GO: beats_default"))
    # A name the settings give that no gate has is refused before anything is journaled.
    wrong = Settings(ALPHALOOP_HOME=str(tmp_path / "home"), ALPHALOOP_GATES="min_sortino=1")
    with pytest.raises(InvalidRequest, match="unknown gate 'min_sortino'; the gates are"):
        create_session(spec(), wrong)


def test_a_session_scores_on_every_fold_the_history_holds_and_asks_for_no_more() -> None:
    # The embedded S&P 500 set: 27 years before VALIDATION's end hold nine three-year folds,
    # where the former default scored three (nine years). A shorter history holds fewer, and a
    # count it cannot hold is refused naming the most that fit.
    sp500 = market_of(DataSpec(data="sp500"))
    assert session.resolve_folds(None, sp500) == 9
    assert session.resolve_folds(3, sp500) == 3
    prices = synthetic_prices(n_days=900, n_assets=4, seed=1)
    short = split(prices, source="short")  # 540 days of TRAIN, 180 of VALIDATION
    assert session.resolve_folds(None, short) == 2
    with pytest.raises(InvalidRequest, match="ask for 2 folds or fewer"):
        session.resolve_folds(3, short)
    dates = prices.index
    shorter = split(prices, str(dates[250].date()), str(dates[600].date()), source="shorter")
    assert session.resolve_folds(None, shorter) == 1  # data too short for two still runs
