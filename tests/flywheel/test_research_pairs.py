"""Research preference pairs labelled on evidence that generalises: a constructed journal whose
trials' fold returns differ with confidence, or only by noise."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from alphaloop.flywheel.research import RULE_VERSION, folds_test, session_pairs
from alphaloop.journal import Journal
from alphaloop.knobs import TrialConfig
from tests.journal.journal_helpers import new_session

RNG = np.random.default_rng(11)
MARKET = RNG.normal(3e-4, 0.01, (3, 500))  # three folds of 500 days


def _trial(journal: Journal, sid: str, parent: int | None, idx_shift: float, status: str) -> int:
    row = journal.trials.start(
        sid,
        kind="search",
        config=TrialConfig().model_dump(),
        config_hash=f"h{idx_shift}",
        delta={"changes": {"n_scenarios": 1000 + idx_shift}, "rationale": "r"},
        parent_id=parent,
        seed=0,
        rationale="r",
        proposer="llm",
        prompt="the prompt",
    )
    if status == "crash":
        journal.trials.finish(row.id, status="crash", error="boom")
        return row.id
    folds = MARKET + idx_shift + RNG.normal(0, 1e-4, MARKET.shape)
    for i, days in enumerate(folds):
        journal.folds.add(
            row.id,
            fold=i,
            n_folds=3,
            start_date=f"200{i}-01-01",
            end_date=f"200{i}-12-31",
            objective=float(days.mean() / days.std() * 15.87),
            metrics={},
            result={},
            returns=days.tolist(),
            elapsed_s=0.1,
        )
    # The objective says B beats C by far more than the noise floor; their days do not.
    objective = {0.0: 1.0, 1e-3: 3.0, 1e-6: 2.0}[idx_shift]
    journal.trials.finish(
        row.id, status=status, objective=objective, val_returns=folds[-1].tolist()
    )
    return row.id


def test_pairs_need_a_paired_difference_on_the_folds_not_a_gap_in_objectives(
    tmp_path: Path,
) -> None:
    with Journal(tmp_path / "journal.db") as journal:
        sid = new_session(
            journal,
            goal="g",
            objective={},
            proposer="llm",
            seed=0,
            data_fingerprint=None,
            settings={},
        )
        journal.sessions.update(sid, noise_floor=0.05)
        b = _trial(journal, sid, None, 0.0, "keep")  # the market's days
        a = _trial(journal, sid, None, 1e-3, "keep")  # +10 bp a day: a real edge
        c = _trial(journal, sid, None, 1e-6, "discard")  # B's days give or take noise
        d = _trial(journal, sid, None, 0.0, "crash")
        pairs = session_pairs(journal, journal.sessions.get(sid))
    got = {(p.origin["chosen_trial_id"], p.origin["rejected_trial_id"]) for p in pairs}
    assert got == {(a, b), (a, c), (a, d), (b, d), (c, d)}
    assert all(p.origin["rule"] == RULE_VERSION for p in pairs)
    assert next(p for p in pairs if p.origin["rejected_trial_id"] == b).margin > 10  # a z


def test_where_no_config_differs_luck_labels_no_pair(tmp_path: Path) -> None:
    # Twelve proposals of one state with no edge between them: 66 candidate pairs, of which a
    # rule of 5% a pair labels a few by luck (counted here); the false discovery rate over the
    # session's pairs labels none.
    rng = np.random.default_rng(3)
    market = rng.normal(3e-4, 0.01, (3, 500))
    with Journal(tmp_path / "journal.db") as journal:
        sid = new_session(journal, goal="g", objective={}, proposer="llm", seed=0)
        journal.sessions.update(sid, noise_floor=0.05)
        for k in range(12):
            row = journal.trials.start(
                sid, kind="search", config=TrialConfig().model_dump(), config_hash=f"n{k}",
                delta={"changes": {}}, parent_id=None, seed=0, rationale="r", proposer="llm",
                prompt="p",
            )  # fmt: skip
            folds = market + rng.normal(0, 2e-3, market.shape)
            for i, days in enumerate(folds):
                journal.folds.add(
                    row.id, fold=i, n_folds=3, start_date=f"200{i}-01-01",
                    end_date=f"200{i}-12-31", objective=0.0, metrics={}, result={},
                    returns=days.tolist(), elapsed_s=0.1,
                )  # fmt: skip
            journal.trials.finish(row.id, status="discard", objective=float(k), val_returns=[])
        session = journal.sessions.get(sid)
        days = journal.folds.returns_by_fold(sid)
        ids = list(days)
        by_luck = sum(
            (t := folds_test(days, a, b)) is not None and min(t.p_value, 1 - t.p_value) < 0.025
            for i, a in enumerate(ids)
            for b in ids[i + 1 :]
        )
        assert by_luck >= 1
        assert session_pairs(journal, session) == []
