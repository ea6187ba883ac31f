"""A session's best, ranked once (``alphaloop.journal.ranking``), and its tally (budgeted trials
and ranking) kept per session inside the journal, checked after every step of a random session
against a brute-force oracle over all its journaled trials: trials start and finish out of
order, some are confirmed on more seeds, some break a limit, some crash or stay running; the
loop's incumbent, ``journal.trials.best``, the tally and the session list name the same trial
with the same score; and a journal replaced at the same path (or written over in place) is
read anew."""

from __future__ import annotations

import shutil
from typing import Any

import numpy as np
import pytest

from alphaloop.journal import Journal, Ranked, TrialRecord, best_trial
from alphaloop.ops import dashboard
from alphaloop.settings import Settings
from tests.server.helpers import new_session

STATUSES = ("keep", "discard", "crash", "timeout", "invalid")


def _oracle(trials: list[TrialRecord]) -> tuple[int, int | None, float | None]:
    """Budgeted trials, and the best's id and score, worked out from every trial: the kept
    search trial with the highest score (the mean over its seeds when confirmed), ties to the
    earlier index; else the default config, as its first scored baseline run, scored by the
    mean of every scored baseline run; else none."""
    counted = sum(t.counted for t in trials)
    kept = [t for t in trials if t.kind == "search" and t.status == "keep"]
    kept = [
        t for t in kept if (t.seed_mean if t.seed_mean is not None else t.objective) is not None
    ]
    if kept:
        score = {t.id: t.seed_mean if t.seed_mean is not None else t.objective for t in kept}
        top = max(score.values())
        best = min((t for t in kept if score[t.id] == top), key=lambda t: t.idx)
        return counted, best.id, top
    base = sorted(
        (t for t in trials if t.kind == "baseline" and t.objective is not None), key=lambda t: t.idx
    )
    if base:
        return counted, base[0].id, float(np.mean([t.objective for t in base]))
    return counted, None, None


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


def _ranked(best: Ranked[Any] | None) -> tuple[int | None, float | None]:
    return (best.trial.id, best.score) if best is not None else (None, None)


def _check(j: Journal, sid: str) -> None:
    trials = j.trials.of_session(sid, series=False)
    counted, best_id, score = _oracle(trials)
    t = j.trials.tally(sid)
    assert t.counted == counted
    assert _ranked(t.best)[0] == best_id and _ranked(t.best)[1] == pytest.approx(score)
    # The loop's incumbent, over the same rows.
    finished = [r for r in trials if r.status != "running"]
    assert _ranked(best_trial(finished))[0] == best_id
    # What a first read sums up in SQL: the trials before the first running one.
    settled = j.trials.settled(sid)
    running = [r.idx for r in trials if r.status == "running"]
    before = [r for r in trials if not running or r.idx < running[0]]
    assert (settled.upto, settled.upto_id) == (
        (before[-1].idx, before[-1].id) if before else (-1, None)
    )
    assert settled.counted == _oracle(before)[0]
    assert _ranked(settled.ranking.best)[0] == _oracle(before)[1]
    best = j.trials.best(sid)
    assert (best.id if best else None) == best_id


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


def _shown(oracle: tuple[int, int | None, float | None]) -> tuple[int, float | None]:
    """What the session list shows: the counted trials and the best's score."""
    return oracle[0], oracle[2]


def test_with_nothing_kept_the_best_is_the_default_scored_by_its_seeds_mean(
    settings: Settings,
) -> None:
    """The loop's bar, the journal's best and the list's: the first baseline run, scored by
    the mean of the baseline seeds (not the luckiest seed)."""
    with Journal(settings.journal_path) as j:
        sid = new_session(j)
        ids = [_start(j, sid, "baseline", i) for i in range(3)]
        for trial_id, objective in zip(ids, (0.5, 1.5, 1.0), strict=True):
            j.trials.finish(trial_id, status="keep", objective=objective, metrics={})
        discarded = _start(j, sid, "search", 3)
        j.trials.finish(discarded, status="discard", objective=2.0, metrics={})
        assert j.trials.best(sid).id == ids[0]
        assert _ranked(best_trial(j.trials.of_session(sid))) == (ids[0], 1.0)
    (row,) = dashboard.session_rows(settings)
    assert row.best is not None and (row.best.trial_id, row.best_validation) == (ids[0], 1.0)


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
    assert (row.trials, row.best_validation) == _shown(longer)
    # The journal as it was at 30 trials, written over the file in place, then put in its place.
    shutil.copyfile(copy, settings.journal_path)
    row = next(r for r in dashboard.session_rows(settings) if r.id == sid)
    assert (row.trials, row.best_validation) == _shown(expected)
    with Journal(settings.journal_path) as j:
        for i in range(60, 75):
            _finish(j, _start(j, sid, "search", i), rng)
        again = _oracle(j.trials.of_session(sid))
    row = next(r for r in dashboard.session_rows(settings) if r.id == sid)
    assert (row.trials, row.best_validation) == _shown(again)
    copy.replace(settings.journal_path)
    row = next(r for r in dashboard.session_rows(settings) if r.id == sid)
    assert (row.trials, row.best_validation) == _shown(expected)
