"""The one status vocabulary: the mapping read in Python and the same mapping as SQL agree on
every kind, journaled status and number of folds run."""

from __future__ import annotations

import itertools
from pathlib import Path

from alphaloop.journal import Journal, TrialFilter
from alphaloop.journal.status import SHOWN_STATUSES, shown_status
from alphaloop.knobs import TrialConfig

KINDS = ("baseline", "search", "confirm", "test")
FINAL = ("keep", "discard", "crash", "timeout")


def test_python_and_sql_say_the_same_word(tmp_path: Path) -> None:
    with Journal(tmp_path / "journal.db") as j:
        sid = j.sessions.create(goal="g", mode="cufolio_only", objective={"metric": "sharpe"},
                                proposer="tpe", budget=100, seed=0, data_source="synthetic",
                                data_fingerprint="fp", settings={},
                                baseline_config=TrialConfig().model_dump())  # fmt: skip
        want = {}
        for kind, status, folds in itertools.product(KINDS, FINAL, (None, 1, 3)):
            row = j.trials.start(sid, kind=kind, config=TrialConfig().model_dump(),
                                 config_hash=None, delta={"changes": {}}, parent_id=None,
                                 seed=0, rationale=None, proposer="tpe")  # fmt: skip
            for fold in range(folds or 0):
                j.folds.add(row.id, fold=fold, n_folds=3, start_date="2020-01-01",
                            end_date="2020-02-01", objective=1.0, metrics={}, result={},
                            returns=[0.0], elapsed_s=0.1)  # fmt: skip
            j.trials.finish(row.id, status=status, objective=1.0, metrics={}, elapsed_s=0.1)
            want[row.id] = shown_status(kind, status, folds, 3 if folds else None)
        assert set(want.values()) <= set(SHOWN_STATUSES)
        assert {w for w in want.values()} >= {"ran", "raced out", "keep", "discard", "crash"}
        for word in set(want.values()):
            found = j.trials.page(sid, TrialFilter(statuses=(word,)), offset=0, limit=500)
            assert sorted(t.id for t in found) == sorted(i for i, w in want.items() if w == word)
