"""Read queries: ordering, leaderboard, best trial, not-found messages, model behaviour."""

from __future__ import annotations

import json
import math

import pytest
from journal_helpers import new_session, new_trial
from pydantic import ValidationError

from alphaloop.exceptions import AlphaloopError, NotFound
from alphaloop.journal import FollowedTrials, Journal, SessionRecord, TrialRecord


def finished(
    journal: Journal, sid: str, status: str, objective: float | None, kind: str = "search"
) -> TrialRecord:
    t = new_trial(journal, sid, kind=kind)
    return journal.trials.finish(t.id, status=status, objective=objective)


def test_sessions_newest_first(journal: Journal) -> None:
    ids = [new_session(journal, goal=f"goal {i}") for i in range(4)]
    assert [s.id for s in journal.sessions.list()] == ids[::-1]
    assert all(isinstance(s, SessionRecord) for s in journal.sessions.list())


def test_session_not_found_lists_recent_ids(journal: Journal) -> None:
    with pytest.raises(NotFound, match=r"no session 's-x' .* it has no sessions yet"):
        journal.sessions.get("s-x")
    ids = [new_session(journal) for _ in range(7)]
    with pytest.raises(NotFound) as err:
        journal.sessions.get("s-20200101-000000-dead")
    message = str(err.value)
    assert "no session 's-20200101-000000-dead'" in message
    assert f"recent sessions: {', '.join(ids[::-1][:5])}" in message and ids[0] not in message
    assert isinstance(err.value, AlphaloopError) and isinstance(err.value, LookupError)


def test_trials_by_index_and_kind(journal: Journal) -> None:
    sid = new_session(journal)
    base = new_trial(journal, sid, kind="baseline")
    search = [new_trial(journal, sid) for _ in range(2)]
    test = new_trial(journal, sid, kind="test")
    assert [t.id for t in journal.trials.of_session(sid)] == [
        base.id,
        *(t.id for t in search),
        test.id,
    ]
    assert [t.idx for t in journal.trials.of_session(sid, kind="search")] == [1, 2]
    assert journal.trials.of_session(sid, kind="test") == [test]
    assert journal.trials.of_session("s-nope") == []
    with pytest.raises(ValueError):
        journal.trials.of_session(sid, kind="warmup")
    with pytest.raises(NotFound, match="no trial with id 4242"):
        journal.trials.get(4242)


def test_leaderboard_best_first_ties_by_index(journal: Journal) -> None:
    sid = new_session(journal)
    b = finished(journal, sid, "keep", 0.5, kind="baseline")
    s1 = finished(journal, sid, "discard", 0.4)
    s2 = finished(journal, sid, "keep", 0.9)
    s3 = finished(journal, sid, "discard", 0.9)  # ties with s2: the earlier index wins
    finished(journal, sid, "crash", None)
    finished(journal, sid, "keep", 5.0, kind="test")  # test-window rows never rank
    new_trial(journal, sid)  # still running
    s4 = finished(journal, sid, "discard", -math.inf)
    board = journal.trials.leaderboard(sid)
    assert [t.id for t in board] == [s2.id, s3.id, b.id, s1.id, s4.id]
    assert [t.id for t in journal.trials.leaderboard(sid, k=2)] == [s2.id, s3.id]
    with pytest.raises(ValueError, match="k >= 1"):
        journal.trials.leaderboard(sid, k=0)


def test_leaderboard_ranks_a_raced_out_trial_below_the_fully_scored(journal: Journal) -> None:
    sid = new_session(journal)

    def scored(objective: float, folds: range) -> TrialRecord:
        t = finished(journal, sid, "discard", objective)
        for fold in folds:
            journal.folds.add(
                t.id, fold=fold, n_folds=3, start_date="2017-01-03", end_date="2017-12-29",
                objective=objective, metrics={}, result={}, returns=[0.0], elapsed_s=0.1,
            )  # fmt: skip
        return t

    raced = scored(1.18, range(2, 3))  # its last fold only: one fold's Sharpe
    full = scored(0.97, range(3))
    older = finished(journal, sid, "discard", 0.5)  # from before folds were journaled
    board = journal.trials.leaderboard(sid)
    assert [t.id for t in board] == [full.id, older.id, raced.id]


def test_leaderboard_ranks_trials_within_the_limits_first(journal: Journal) -> None:
    # A limit nobody but one search trial met: the baseline and the higher-scoring discards
    # break it, so the one trial that respects it tops the board despite its lower objective.
    sid = new_session(journal)
    breaks = "max drawdown 31.0% exceeds the limit 15.0%"

    def limited(status: str, objective: float, violation: str | None, **kw: str) -> TrialRecord:
        t = new_trial(journal, sid, **kw)
        return journal.trials.finish(
            t.id, status=status, objective=objective, reason=violation, violation=violation
        )

    base = limited("keep", 1.2, breaks, kind="baseline")
    high = limited("discard", 1.5, breaks)
    within = limited("keep", 0.3, None)
    worse = limited("discard", 0.1, None)
    assert journal.trials.get(high.id).violation == breaks
    assert [t.id for t in journal.trials.leaderboard(sid)] == [
        within.id,
        worse.id,
        high.id,
        base.id,
    ]
    assert journal.trials.best(sid) == within


def test_with_nothing_kept_the_best_is_the_default_s_first_baseline_run(journal: Journal) -> None:
    """The default config stands for itself on all its seeds (ranked by their mean, see
    ``alphaloop.journal.ranking``): not its luckiest seed, nor one within a limit another
    seed breaks."""
    sid = new_session(journal)
    first = new_trial(journal, sid, kind="baseline")
    journal.trials.finish(first.id, status="keep", objective=0.4, violation="too deep")
    finished(journal, sid, "keep", 0.9, kind="baseline")
    assert journal.trials.best(sid) == journal.trials.get(first.id)
    assert journal.trials.ranking(sid).best.score == pytest.approx(0.65)


def test_best_trial(journal: Journal) -> None:
    sid = new_session(journal)
    assert journal.trials.best(sid) is None
    b1 = finished(journal, sid, "keep", 0.3, kind="baseline")
    finished(journal, sid, "keep", 0.4, kind="baseline")
    finished(journal, sid, "discard", 2.0)  # discarded: never the best, whatever its objective
    assert journal.trials.best(sid) == b1
    s1 = finished(journal, sid, "keep", 0.6)
    finished(journal, sid, "keep", 0.6)
    assert journal.trials.best(sid) == s1


def test_models_are_frozen(journal: Journal) -> None:
    t = new_trial(journal, new_session(journal))
    with pytest.raises(ValidationError):
        t.status = "keep"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        TrialRecord.model_validate({**t.model_dump(), "colour": "red"})


def test_models_dump_to_strict_json(journal: Journal) -> None:
    sid = new_session(journal)
    t = new_trial(journal, sid)
    done = journal.trials.finish(
        t.id,
        status="keep",
        objective=1.0,
        metrics={"sharpe": 1.0, "profit_factor": math.inf, "sortino": math.nan},
        val_returns=[0.01, math.nan],
    )
    assert done.metrics["profit_factor"] == math.inf  # kept exactly in Python
    data = done.model_dump(mode="json")
    text = json.dumps(data, allow_nan=False)
    assert data["status"] == "keep" and data["kind"] == "search"
    assert data["metrics"] == {"sharpe": 1.0, "profit_factor": None, "sortino": None}
    assert data["val_returns"] == [0.01, None]
    assert json.loads(text)["id"] == done.id
    session = journal.sessions.get(sid).model_dump(mode="json")
    assert json.loads(json.dumps(session, allow_nan=False))["status"] == "running"
    for rows in (
        journal.logs.events(sid),
        journal.logs.llm_calls(),
        journal.logs.chart_reads(),
        journal.logs.session_clips(sid),
    ):
        json.dumps([r.model_dump(mode="json") for r in rows], allow_nan=False)


def test_trial_at_an_index(journal: Journal) -> None:
    sid = new_session(journal)
    with pytest.raises(NotFound, match="has no trial #0; it has no trials"):
        journal.trials.at(sid, 0)
    rows = [new_trial(journal, sid) for _ in range(3)]
    assert journal.trials.at(sid, 2) == journal.trials.get(rows[2].id)
    with pytest.raises(NotFound, match=r"no trial #5; its trials are #0\.\.#2"):
        journal.trials.at(sid, 5)
    with pytest.raises(NotFound):
        journal.trials.at("s-x", 0)


def test_a_configs_twin_is_its_first_trial_that_is_not_invalid(journal: Journal) -> None:
    sid, other = new_session(journal), new_session(journal)
    invalid = journal.trials.record_invalid(
        sid, proposer="llm", delta_raw="{}", error="garbled", config_hash="h1"
    )
    assert journal.trials.twin(sid, "h1") is None  # an invalid proposal never ran
    first = new_trial(journal, sid, config_hash="h1")  # running: in flight counts
    new_trial(journal, sid, config_hash="h1")
    new_trial(journal, sid, config_hash="h2")
    new_trial(journal, other, config_hash="h3")
    assert journal.trials.twin(sid, "h1") == first.idx and first.idx > invalid.idx
    assert journal.trials.twin(sid, "h3") is None  # another session's config
    # the answer a read of the whole history gives
    seen: dict[str, int] = {}
    for t in journal.trials.of_session(sid, series=False):
        if t.status != "invalid":
            seen.setdefault(t.config_hash, t.idx)
    assert all(journal.trials.twin(sid, h) == idx for h, idx in seen.items())


def test_a_followed_session_reads_only_the_rows_written_since(journal: Journal) -> None:
    sid, other = new_session(journal), new_session(journal)
    followed = journal.trials.follow(sid)
    assert followed.rows() == [] and journal.trials.changed(sid) == ([], 0)
    a, b = new_trial(journal, sid), new_trial(journal, sid, kind="baseline")
    new_trial(journal, other)  # another session's rows are never read
    rows, rev = journal.trials.changed(sid)
    assert [t.id for t in rows] == [a.id, b.id] and rev >= 2
    assert journal.trials.changed(sid, rev) == ([], rev)  # nothing written since
    # every kind of write raises the trial's revision: finish, a held outcome, a curve
    journal.trials.hold_outcome(a.id, "{}")
    journal.trials.set_curve(a.id, [[1, 0.5]])
    journal.trials.finish(b.id, status="keep", objective=1.0, metrics={"sharpe": 1.0})
    changed, later = journal.trials.changed(sid, rev)
    assert [t.id for t in changed] == [a.id, b.id] and later > rev
    assert followed.rows() == journal.trials.of_session(sid, series=False)
    # a write through another connection (a second process) is seen at the next read
    with Journal(journal.path) as j2:
        j2.trials.finish(a.id, status="discard", objective=0.5)
        c = new_trial(j2, sid)
    rows = followed.rows()
    assert rows == journal.trials.of_session(sid, series=False)
    assert [t.id for t in rows] == [a.id, b.id, c.id] and rows[0].status == "discard"
    # records of rows not written since are the very objects read before
    assert followed.rows()[1] is rows[1]


def test_a_followed_session_keeps_index_order_whatever_order_rows_come_in(
    journal: Journal,
) -> None:
    sid = new_session(journal)
    rows = [new_trial(journal, sid) for _ in range(4)]
    batches = [[rows[2]], [rows[0], rows[3]], [rows[1], rows[2]]]

    class Arriving:  # hands the rows over late and out of order
        def changed(self, session_id: str, after: int) -> tuple[list[TrialRecord], int]:
            return (batches.pop(0) if batches else []), after + 1

    followed = FollowedTrials(Arriving(), sid)  # type: ignore[arg-type]
    seen = [[t.id for t in followed.rows()] for _ in range(4)]
    ids = [t.id for t in rows]
    assert seen == [[ids[2]], [ids[0], ids[2], ids[3]], ids, ids]


def test_completed_trials_across_sessions(journal: Journal) -> None:
    metrics = {"sharpe": 1.0}
    a, b = new_session(journal), new_session(journal)
    done = []
    for sid, status, kind in (
        (a, "keep", "baseline"),
        (b, "discard", "search"),
        (a, "crash", "search"),
        (a, "keep", "test"),
        (b, "keep", "search"),
    ):
        t = new_trial(journal, sid, kind=kind)
        done.append(journal.trials.finish(t.id, status=status, objective=1.0, metrics=metrics))
    new_trial(journal, b)  # still running
    # Validation rows that finished with metrics, in the order they finished; no test rows.
    assert [t.id for t in journal.trials.completed()] == [done[0].id, done[1].id, done[4].id]
    assert [t.id for t in journal.trials.completed(kinds=("test",))] == [done[3].id]
    assert journal.trials.completed(kinds=()) == []


def test_trials_without_series_are_the_same_rows_less_the_daily_series(journal: Journal) -> None:
    sid = new_session(journal)
    t = new_trial(journal, sid)
    journal.trials.set_curve(t.id, [[64, 0.5], [128, 0.25]])
    journal.trials.finish(
        t.id, status="keep", objective=1.2, metrics={"sharpe": 1.2}, val_returns=[0.01, -0.02],
        final_weights=[0.6, 0.4], elapsed_s=2.5, baselines={"equal_weight": {"sharpe": 0.9}},
    )  # fmt: skip
    finished(journal, sid, "crash", None, kind="baseline")
    full, lean = journal.trials.of_session(sid), journal.trials.of_session(sid, series=False)
    series = {"val_returns": None, "final_weights": None, "curve": None}
    assert lean == [f.model_copy(update=series) for f in full]
    assert full[0].val_returns == [0.01, -0.02] and full[0].curve == [[64, 0.5], [128, 0.25]]
    assert journal.trials.of_session(sid, "baseline", series=False) == lean[1:]


def test_a_row_read_again_unchanged_is_not_parsed_again(
    journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = new_session(journal)
    first, second = new_trial(journal, sid), new_trial(journal, sid)
    before = journal.trials.of_session(sid, series=False)
    parsed: list[int] = []
    parse = TrialRecord.from_row.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        TrialRecord,
        "from_row",
        classmethod(lambda cls, row: parsed.append(row["id"]) or parse(cls, row)),
    )
    again = journal.trials.of_session(sid, series=False)
    assert [t.id for t in again] == [first.id, second.id]
    assert again == before and again[0] is before[0] and parsed == []
    journal.trials.finish(second.id, status="keep", objective=1.0, val_returns=[0.01, 0.02])
    parsed.clear()  # finish read its row back
    after = journal.trials.of_session(sid, series=False)
    assert parsed == [second.id]  # only the row that changed
    assert after[0] is before[0] and after[1].status == "keep" and after[1].objective == 1.0
    full = journal.trials.of_session(sid)  # a row with series: parsed each time, never held
    assert full[1].val_returns == [0.01, 0.02] and parsed == [second.id, second.id]
    assert full[0] is before[0]  # the first has none: the same row as without series
    assert journal.trials.of_session(sid, series=False)[1] is after[1]


def test_trial_seconds_adds_up_finished_trials(journal: Journal) -> None:
    sid = new_session(journal)
    assert journal.trials.seconds(sid) == 0.0
    for seconds in (1.5, 2.25):
        journal.trials.finish(new_trial(journal, sid).id, status="discard", elapsed_s=seconds)
    new_trial(journal, sid)  # still running: no time yet
    assert journal.trials.seconds(sid) == 3.75
