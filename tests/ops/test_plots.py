"""A session's search as columns for the page's plots: the knobs that varied, the shown status,
each fold's objective, a sample that keeps the best trials past its size, and the objective's
distribution exact at any length."""

from __future__ import annotations

from alphaloop.journal import Journal
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.ops import plots
from alphaloop.settings import Settings

try:
    from tests.server.helpers import new_session
except ImportError:  # plain ``pytest``
    from server.helpers import new_session  # type: ignore[no-redef]


def _search(settings: Settings, n: int) -> str:
    with Journal(settings.journal_path) as j:
        sid = new_session(j, budget=n)
        for i in range(n):
            config = TrialConfig(lookback=5 + i % 40)
            row = j.trials.start(
                sid, kind="search", config=config.model_dump(), config_hash=config_hash(config),
                delta={"changes": {}}, parent_id=None, seed=i, rationale=None, proposer="tpe",
            )  # fmt: skip
            folds = 1 if i % 5 == 4 else 2  # every 5th raced out on its first fold
            for fold in range(folds):
                j.folds.add(row.id, fold=fold, n_folds=2, start_date="2020-01-01",
                            end_date="2020-06-30", objective=i / n + fold, metrics={},
                            result={}, returns=[0.0], elapsed_s=0.1)  # fmt: skip
            j.trials.finish(row.id, status="keep" if i % 5 == 0 else "discard",
                            objective=i / n, metrics={}, elapsed_s=0.1)  # fmt: skip
    return sid


def test_the_search_as_columns(settings: Settings) -> None:
    sid = _search(settings, 30)
    s = plots.study(settings, sid)
    assert not s.sampled and s.total == 30 and s.idx == list(range(30))
    assert list(s.knobs) == ["lookback"] and s.knobs["lookback"][:3] == [5.0, 6.0, 7.0]
    assert s.status[4] == "raced out" and s.objective[4] is None  # not comparable
    assert s.status[0] == "keep" and s.status[1] == "discard"
    assert s.folds[0] == [0.0, 1.0] and s.folds[4] == [4 / 30]
    # the distribution counts the comparable objectives only
    assert s.edf == sorted(i / 30 for i in range(30) if i % 5 != 4) and s.edf_total == 24


def test_a_long_search_is_sampled_with_its_best_and_exact_quantiles(settings: Settings) -> None:
    sid = _search(settings, 400)
    s = plots.study(settings, sid, points=50)
    assert s.sampled and s.total == 400 and len(s.idx) <= 50
    scored = sorted(i / 400 for i in range(400) if i % 5 != 4)
    assert max(o for o in s.objective if o is not None) == scored[-1]
    assert s.edf_total == len(scored) and s.edf == scored  # under EDF_POINTS: every one
    assert s.idx == sorted(s.idx)
