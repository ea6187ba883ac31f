"""The chart reader reads the page's pick, counts and statuses: finalize's pick (the default's
first baseline run, not the luckiest baseline seed), and a raced-out trial counted as raced out
(its partial score neither discarded nor an outlier above the best)."""

from __future__ import annotations

from alphaloop.charts import build_chart, read_figure
from alphaloop.charts.figures import DISCARDED_TRACE, RACED_TRACE
from alphaloop.journal import FinalReport, Journal
from alphaloop.knobs import TrialConfig
from alphaloop.ops import sessions as ops_sessions
from alphaloop.settings import Settings

try:
    from tests.server.helpers import new_session
except ImportError:  # plain ``pytest``
    from server.helpers import new_session  # type: ignore[no-redef]


def _trial(j: Journal, sid: str, kind: str, objective: float, folds: int) -> int:
    """A finished trial of ``kind`` scored on ``folds`` of 3 folds (1: raced out)."""
    row = j.trials.start(sid, kind=kind, config=TrialConfig().model_dump(), config_hash=None,
                         delta={"changes": {}}, parent_id=None, seed=0, rationale=None,
                         proposer="tpe")  # fmt: skip
    for fold in range(folds):
        j.folds.add(row.id, fold=fold, n_folds=3, start_date="2020-01-01",
                    end_date="2020-06-30", objective=objective, metrics={}, result={},
                    returns=[0.01], elapsed_s=0.1)  # fmt: skip
    status = "keep" if kind == "baseline" else "discard"
    j.trials.finish(row.id, status=status, objective=objective,
                    metrics={"sharpe": objective}, elapsed_s=0.1)  # fmt: skip
    return row.id


def test_the_reader_names_finalizes_pick_and_the_raced_out_apart(settings: Settings) -> None:
    with Journal(settings.journal_path) as j:
        sid = new_session(j, budget=3)
        pick = _trial(j, sid, "baseline", 0.7237, 3)
        _trial(j, sid, "baseline", 0.757, 3)  # a luckier seed of the same default config
        _trial(j, sid, "search", 0.5, 3)
        _trial(j, sid, "search", 1.4, 1)  # raced out: one fold's score
        _trial(j, sid, "search", 0.6, 3)
        j.sessions.update(sid, status="finished", owner_pid=None, best_trial_id=pick,
                          final=FinalReport(stop_reason="budget", n_trials=3, pick="default",
                                            baseline_trial_id=pick))  # fmt: skip
        built = build_chart("research_progress", j, session_id=sid)
    drawn = ops_sessions.metrics_chart(settings, "research_progress", sid)
    for figure in (built.figure, drawn.figure):
        traces = {t.name: list(t.x) for t in figure.data}
        assert traces[RACED_TRACE] == [3] and traces[DISCARDED_TRACE] == [2, 4]
        facts, bullets = read_figure(figure)
        assert facts["best"]["trial"] == 0 and facts["best"]["objective"] == 0.7237
        assert (facts["discarded"], facts["raced_out"]) == (2, 1)
        assert any("1 raced out (partial scores, not ranked)" in b for b in bullets)
        assert any("Finalize picked the default: baseline run #0 with sharpe 0.724" in b
                   for b in bullets)  # fmt: skip
        assert not any(b.startswith("Outlier") for b in bullets)
