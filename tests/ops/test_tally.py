"""A session's tally (budgeted trials and best) kept per session state, checked after every
step of a random session against a brute-force oracle over all its journaled trials: trials
start and finish out of order, some are confirmed on more seeds, some break a limit, some crash
or stay running; and a journal replaced at the same path (or written over in place) is read
anew."""

from __future__ import annotations

import shutil

import numpy as np

from alphaloop.journal import Journal, TrialRecord
from alphaloop.ops import dashboard
from alphaloop.ops.tally import tally
from alphaloop.settings import Settings
from tests.server.helpers import new_session

STATUSES = ("keep", "discard", "crash", "timeout", "invalid")


def _oracle(trials: list[TrialRecord]) -> tuple[int, float | None]:
    """Budgeted trials and the best's objective, ranked as ``journal.trials.best`` says: the
    kept search trial within the limits first, by the mean over its seeds when confirmed, ties
    to the earlier index; else the scored baseline ranked the same way by its objective."""
    counted = sum(t.counted for t in trials)
    kept = [
        t for t in trials if t.kind == "search" and t.status == "keep" and t.objective is not None
    ]
    if kept:
        best = max(kept, key=lambda t: (t.violation is None, t.score, -t.idx))
        return counted, best.objective
    scored = [
        t
        for t in trials
        if t.kind == "baseline" and t.status in ("keep", "discard") and t.objective is not None
    ]
    if scored:
        return counted, max(
            scored, key=lambda t: (t.violation is None, t.objective, -t.idx)
        ).objective
    return counted, None


def _start(j: Journal, sid: str, kind: str, seed: int) -> int:
    return j.trials.start(sid, kind=kind, config={"lookback": 30}, config_hash=None,
                          delta={"changes": {}}, parent_id=None, seed=seed, rationale="r",
                          proposer="tpe").id  # fmt: skip


def _finish(j: Journal, trial_id: int, rng: np.random.Generator) -> None:
    status = str(rng.choice(STATUSES, p=[0.35, 0.35, 0.1, 0.1, 0.1]))
    scored = status in ("keep", "discard")
    # Few distinct objectives, so that ties (broken by the index) happen.
    objective = float(rng.integers(0, 40)) / 8 if scored and rng.random() > 0.05 else None
    confirmed = status == "keep" and rng.random() < 0.3
    j.trials.finish(
        trial_id, status=status, objective=objective, metrics={} if scored else None,
        elapsed_s=0.01, violation="max_drawdown" if rng.random() < 0.3 else None,
        n_seeds=3 if confirmed else None,
        seed_mean=float(rng.integers(0, 40)) / 8 if confirmed else None,
        error="interrupted" if status == "crash" and rng.random() < 0.5 else None,
    )  # fmt: skip


def _check(j: Journal, sid: str) -> None:
    t, trials = tally(j, sid), j.trials.of_session(sid, series=False)
    assert (t.counted, t.best_objective) == _oracle(trials)
    # What a first read sums up in SQL: the trials before the first running one.
    settled = j.trials.settled(sid)
    running = [t.idx for t in trials if t.status == "running"]
    before = [t for t in trials if not running or t.idx < running[0]]
    assert (settled.upto, settled.upto_id) == (
        (before[-1].idx, before[-1].id) if before else (-1, None)
    )
    assert settled.counted == _oracle(before)[0]
    best = [r.objective for r in (settled.search, settled.baseline) if r]
    assert (best[0] if best else None) == _oracle(before)[1]
    best = j.trials.best(sid)
    assert (t.counted, t.best_objective) == (
        j.trials.counted(sid),
        best.objective if best else None,
    )


def test_the_tally_follows_a_session_as_its_trials_start_and_finish(settings: Settings) -> None:
    rng = np.random.default_rng(7)
    with Journal(settings.journal_path) as j:
        sid = new_session(j)
        _check(j, sid)  # no trial yet
        running: list[int] = []
        for step in range(400):
            if running and (rng.random() < 0.5 or len(running) > 6):
                _finish(j, running.pop(int(rng.integers(len(running)))), rng)
            else:
                kind = "baseline" if step % 97 == 0 else str(rng.choice(["search", "confirm"]))
                running.append(_start(j, sid, kind, step))
            if step % 7 == 0:
                _check(j, sid)
        for trial_id in running:
            _finish(j, trial_id, rng)
        _check(j, sid)
        _check(j, sid)  # read again from the kept state alone


def test_a_session_of_baselines_alone_ranks_its_baselines(settings: Settings) -> None:
    rng = np.random.default_rng(3)
    with Journal(settings.journal_path) as j:
        sid = new_session(j)
        for i in range(12):
            _finish(j, _start(j, sid, "baseline", i), rng)
            _check(j, sid)


def test_the_session_list_shows_the_tally_and_a_replaced_journal_is_read_anew(
    settings: Settings,
) -> None:
    rng = np.random.default_rng(11)
    with Journal(settings.journal_path) as j:
        sid = new_session(j)
        for i in range(30):
            _finish(j, _start(j, sid, "search", i), rng)
    copy = settings.journal_path.with_name("copy.db")
    shutil.copy(settings.journal_path, copy)
    with Journal(settings.journal_path) as j:
        expected = _oracle(j.trials.of_session(sid))
        for i in range(30, 60):
            _finish(j, _start(j, sid, "search", i), rng)
        longer = _oracle(j.trials.of_session(sid))
    row = next(r for r in dashboard.session_rows(settings) if r.id == sid)
    assert (row.trials, row.best_validation) == longer
    # The journal as it was at 30 trials, written over the file in place, then put in its place.
    shutil.copyfile(copy, settings.journal_path)
    row = next(r for r in dashboard.session_rows(settings) if r.id == sid)
    assert (row.trials, row.best_validation) == expected
    with Journal(settings.journal_path) as j:
        for i in range(60, 75):
            _finish(j, _start(j, sid, "search", i), rng)
        again = _oracle(j.trials.of_session(sid))
    row = next(r for r in dashboard.session_rows(settings) if r.id == sid)
    assert (row.trials, row.best_validation) == again
    copy.replace(settings.journal_path)
    row = next(r for r in dashboard.session_rows(settings) if r.id == sid)
    assert (row.trials, row.best_validation) == expected
