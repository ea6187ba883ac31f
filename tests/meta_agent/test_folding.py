"""Racing a trial's folds with several workers: a later trial's other folds start as soon as its
first fold is in (while the loop waits for an older trial), the race is still decided at its
turn, and folds started for a trial its turn races out are dropped, never journaled.

The runner is scripted (futures the test completes) and so is the race screen's answer: these
tests check the scheduling alone."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from alphaloop.journal import TrialRecord
from alphaloop.knobs import TrialConfig
from alphaloop.market import market_of
from alphaloop.meta_agent import folding
from alphaloop.meta_agent.folding import FoldedRun
from alphaloop.meta_agent.state import InFlight, SessionContext
from alphaloop.metrics import Metrics
from alphaloop.placement import OutcomeStatus, TrialJob, TrialOutcome
from alphaloop.spec import DataSpec
from alphaloop.trials import TrialResult, build_folds

from .helpers import session_context

Key = tuple[int, int]  # (trial idx, fold)


class ScriptedRunner:
    """Hands out futures the test completes; trials in ``auto`` complete on submission."""

    workers = 2

    def __init__(self, folds: list[Any]) -> None:
        self.folds = folds
        self.submitted: list[Key] = []
        self.futures: dict[Key, Future[TrialOutcome]] = {}
        self.auto: set[int] = set()

    def submit(self, job: TrialJob) -> Future[TrialOutcome]:
        key = (job.idx, self.folds.index(job.rows))
        future: Future[TrialOutcome] = Future()
        self.submitted.append(key)
        self.futures[key] = future
        if job.idx in self.auto:
            future.set_result(ok(*key))
        return future

    def close(self, *, wait: bool = True) -> None:
        pass


def ok(idx: int, fold: int) -> TrialOutcome:
    """A fold's result whose objective names it (idx + fold / 10)."""
    figures = dict.fromkeys(Metrics.model_fields, 0.0)
    y = idx + fold / 10
    metrics = Metrics(**{**figures, "n_days": 3, "sharpe": y, "max_drawdown": 0.1})
    result = TrialResult(
        mode="cufolio_only",
        window="validation",
        metric="sharpe",
        objective=y,
        metrics=metrics,
        baselines={},
        daily_returns=[0.001 * (fold + 1)] * 3,
        final_weights=[1.0],
        elapsed_s=0.1,
        seed=0,
        config_hash="x",
        data_fingerprint="fp",
        start_date=f"201{fold}-01-01",
        end_date=f"201{fold}-12-31",
    )
    return TrialOutcome(status=OutcomeStatus.ok, result=result)


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[SessionContext]:
    data = market_of(DataSpec(data="synthetic"))
    folds = build_folds(data, 3)
    context = session_context(
        tmp_path, data=data, workers=2, folds=folds, runner=ScriptedRunner(folds)
    )
    yield context
    context.journal.close()


def search_row(ctx: SessionContext, idx: int) -> TrialRecord:
    row = ctx.journal.trials.start(
        ctx.session_id,
        kind="search",
        config=TrialConfig().model_dump(),
        config_hash=f"config-{idx}",
        delta={"changes": {}},
        parent_id=None,
        seed=0,
        rationale=None,
        proposer="random",
    )
    assert row.idx == idx
    return row


def in_flight(ctx: SessionContext) -> tuple[FoldedRun, FoldedRun]:
    """Two raced search trials in flight, idx 0 (the oldest) and 1."""
    runs = []
    for idx in (0, 1):
        row = search_row(ctx, idx)
        run = FoldedRun(ctx, row, TrialConfig(), race=True)
        ctx.flight.append(InFlight(row, run, None, None))  # type: ignore[arg-type]
        runs.append(run)
    return runs[0], runs[1]


def screen(monkeypatch: pytest.MonkeyPatch, verdicts: list[str | None]) -> list[Key]:
    """Scripts the race screen: its answers in turn (the last one repeats); returns the
    (trial idx, fold) of each call."""
    calls: list[Key] = []

    def raced_out(ctx: SessionContext, folds: list[int], result: TrialResult) -> str | None:
        calls.append((int(result.objective), min(folds)))
        return verdicts[min(len(calls), len(verdicts)) - 1]

    monkeypatch.setattr(folding, "raced_out", raced_out)
    return calls


def journaled(ctx: SessionContext, run: FoldedRun) -> list[int]:
    return sorted(f.fold for f in ctx.journal.folds.of_trial(run._row.id))


def when(condition: Callable[[], bool], then: Callable[[], None]) -> threading.Thread:
    def watch() -> None:
        deadline = time.monotonic() + 30
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.005)
        then()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_a_later_trials_folds_start_while_the_loop_waits_for_the_oldest(
    ctx: SessionContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = screen(monkeypatch, [None])
    runner: ScriptedRunner = ctx.runner  # type: ignore[assignment]
    oldest, later = in_flight(ctx)
    assert runner.submitted == [(0, 2), (1, 2)]  # the most recent fold of each, first

    runner.futures[(1, 2)].set_result(ok(1, 2))  # the later trial's first fold is in...
    runner.auto.add(0)
    # ...and the oldest one's comes once the loop, waiting for it, started the later one's rest.
    when(lambda: (1, 0) in runner.submitted, lambda: runner.futures[(0, 2)].set_result(ok(0, 2)))
    first = oldest.result()

    assert runner.submitted == [(0, 2), (1, 2), (1, 1), (1, 0), (0, 1), (0, 0)]
    assert journaled(ctx, later) == [2]  # journaled when it came in, before its turn
    assert first.result is not None and first.raced_out is None
    assert first.result.objective == pytest.approx(
        statistics.fmean([0.0, 0.1, 0.2]) - statistics.stdev([0.0, 0.1, 0.2]) / 3**0.5
    )

    for fold in (1, 0):
        runner.futures[(1, fold)].set_result(ok(1, fold))
    second = later.result()
    assert second.raced_out is None and journaled(ctx, later) == [0, 1, 2]
    assert len(runner.submitted) == len(set(runner.submitted))  # no fold ran twice
    # The later trial is raced when its first fold came in (before the oldest trial's first
    # fold), and again at its turn: the race of record, against the incumbent as of its index.
    assert calls == [(1, 2), (0, 2), (1, 2)]


def test_folds_started_early_for_a_trial_its_turn_races_out_are_dropped(
    ctx: SessionContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It passes against the incumbent of the moment, and is raced out at its turn (an older
    # trial was kept in between).
    screen(monkeypatch, [None, "raced out on fold 3 of 3"])
    runner: ScriptedRunner = ctx.runner  # type: ignore[assignment]
    _, later = in_flight(ctx)
    runner.futures[(1, 2)].set_result(ok(1, 2))
    later.advance()
    assert runner.submitted[-2:] == [(1, 1), (1, 0)]
    runner.futures[(1, 1)].set_result(ok(1, 1))  # one ran; the other has not started

    outcome = later.result()
    assert outcome.raced_out == "raced out on fold 3 of 3"
    assert outcome.result is not None and outcome.result.objective == pytest.approx(1.2)
    assert runner.futures[(1, 0)].cancelled()
    assert journaled(ctx, later) == [2]  # what ran anyway is never journaled


def test_a_trial_behind_the_incumbent_of_the_moment_starts_its_folds_at_its_turn(
    ctx: SessionContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    screen(monkeypatch, ["raced out on fold 3 of 3", None])
    runner: ScriptedRunner = ctx.runner  # type: ignore[assignment]
    _, later = in_flight(ctx)
    runner.futures[(1, 2)].set_result(ok(1, 2))
    later.advance()
    later.advance()  # looked at once: the fold is journaled, and the screen not asked again
    assert runner.submitted == [(0, 2), (1, 2)] and journaled(ctx, later) == [2]

    runner.auto.add(1)
    outcome = later.result()
    assert outcome.raced_out is None and journaled(ctx, later) == [0, 1, 2]
    assert runner.submitted == [(0, 2), (1, 2), (1, 1), (1, 0)]


def test_a_first_fold_that_crashed_is_the_trials_crash_at_its_turn(
    ctx: SessionContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = screen(monkeypatch, [None])
    runner: ScriptedRunner = ctx.runner  # type: ignore[assignment]
    _, later = in_flight(ctx)
    runner.futures[(1, 2)].set_exception(RuntimeError("worker died"))
    later.advance()
    assert runner.submitted == [(0, 2), (1, 2)] and journaled(ctx, later) == [] and calls == []
    outcome = later.result()
    assert outcome.status is OutcomeStatus.crash
    assert outcome.error is not None and outcome.error.startswith("fold 3 of 3 (")
    assert "worker died" in outcome.error


def test_the_folds_run_in_stages_of_one_three_and_nine() -> None:
    order = list(range(8, -1, -1))
    assert folding.stages(order, race=True) == [[8], [7, 6], [5, 4, 3, 2, 1, 0]]
    assert folding.stages([2, 1, 0], race=True) == [[2], [1, 0]]  # three: as they always did
    assert folding.stages([2, 1, 0], race=False) == [[2, 1, 0]]
    assert [len(s) for s in folding.stages(list(range(20)), race=True)] == [1, 2, 6, 11]


def test_a_trial_behind_after_its_first_three_of_nine_folds_runs_no_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nine folds: raced after the most recent one, then after three; the screen sees the
    # folds run so far, end to end, and the six older folds are never submitted.
    data = market_of(DataSpec(data="sp500"))
    folds = build_folds(data, 9)
    ctx = session_context(tmp_path, data=data, folds=folds, runner=ScriptedRunner(folds))
    runner: ScriptedRunner = ctx.runner  # type: ignore[assignment]
    runner.auto.add(0)
    seen: list[list[int]] = []

    def raced_out(_ctx: SessionContext, ran: list[int], result: TrialResult) -> str | None:
        seen.append(ran)
        assert result.daily_returns == [r for i in ran for r in ok(0, i).result.daily_returns]
        return "raced out after 3 of 9 folds" if len(ran) == 3 else None

    monkeypatch.setattr(folding, "raced_out", raced_out)
    run = FoldedRun(ctx, search_row(ctx, 0), TrialConfig(), race=True)
    outcome = run.result()
    assert seen == [[8], [6, 7, 8]]
    assert runner.submitted == [(0, 8), (0, 7), (0, 6)] and journaled(ctx, run) == [6, 7, 8]
    assert outcome.raced_out == "raced out after 3 of 9 folds"
    assert outcome.result is not None and outcome.result.start_date == "2016-01-01"
    ctx.journal.close()
