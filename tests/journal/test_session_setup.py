"""A session's spec is stored typed and read back as the model: rows an older alphaloop wrote
read as what they meant, a spec this alphaloop refuses reads as none (with the reason) without
breaking the list, and nothing is written that would not read back."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import alphaloop
from alphaloop.journal import Journal
from alphaloop.journal.setup import DataWindows
from alphaloop.spec import ManualRunSpec, Objective, SessionSpec, TrialBudget
from tests.journal.journal_helpers import new_session, store_settings

WINDOWS = {
    "source": "synthetic",
    "fingerprint": "0123456789abcdef",
    "symbols": ["A", "B", "C"],
    "train": ["2010-01-05", "2013-07-01"],
    "validation": ["2013-07-02", "2014-08-08"],
    "test": ["2014-08-11", "2015-09-18"],
}
# A research session's spec as written before folds, gates, workers, Ray, walks and the PPO
# training options existed: the fields it had then, and no others.
OLD_SPEC = {
    "data": "synthetic",
    "fill": "none",
    "symbols": None,
    "train_end": None,
    "val_end": None,
    "date_format": None,
    "goal": "maximise Sharpe",
    "mode": "cufolio_only",
    "budget": 5,
    "proposer": "tpe",
    "objective": {"metric": "sortino", "max_drawdown": 0.2, "max_turnover": None},
    "time_budget_s": None,
    "max_tokens_total": None,
    "seed": 3,
    "noise_seeds": 3,
    "confirm_seeds": 2,
    "trial_budget": {
        "total_timesteps": 4096,
        "n_envs": 4,
        "eval_cost_bps": 10.0,
        "scenario_window": 504,
        "time_limit_s": None,
    },
}


def test_an_old_row_reads_as_the_spec_it_meant(tmp_path: Path) -> None:
    with Journal(tmp_path / "journal.db") as journal:
        sid = new_session(journal, objective={"metric": "sortino", "max_drawdown": 0.2})
        store_settings(journal, sid, {"spec": OLD_SPEC, "data": WINDOWS})
        s = journal.sessions.get(sid)
    assert isinstance(s.spec, SessionSpec)
    assert s.spec.folds == 1  # before folds, a session scored VALIDATION alone
    assert s.spec.trial_budget == TrialBudget(total_timesteps=4096)
    assert s.spec.objective == s.objective == Objective(metric="sortino", max_drawdown=0.2)
    # Gates were not stored then: the defaults, judged under the session's drawdown limit.
    assert "gates" not in s.spec.model_fields_set
    assert s.spec.gates.within(s.objective.max_drawdown).max_drawdown == 0.2
    assert s.settings.data == DataWindows(**WINDOWS)


def test_a_manual_run_reads_as_a_manual_run_s_spec(tmp_path: Path) -> None:
    spec = ManualRunSpec(data="synthetic", changes={"lookback": 30.0}, seed=4)
    with Journal(tmp_path / "journal.db") as journal:
        sid = new_session(journal, proposer="manual", mode="ppo_only", budget=1)
        store_settings(journal, sid, {"spec": spec.model_dump(mode="json"), "data": WINDOWS})
        s = journal.sessions.get(sid)
    assert s.manual and s.spec == spec
    assert s.spec.objective == Objective(metric="sharpe")


def test_a_spec_this_alphaloop_refuses_reads_as_none_and_says_why(tmp_path: Path) -> None:
    with Journal(tmp_path / "journal.db") as journal:
        sid = new_session(journal)
        store_settings(journal, sid, {"spec": {**OLD_SPEC, "seed": -1}, "data": WINDOWS})
        (listed,) = journal.sessions.list()  # the list still reads
    assert listed.id == sid and listed.spec is None
    assert listed.settings.unread == "seed: Input should be greater than or equal to 0, got -1"
    assert listed.settings.data == DataWindows(**WINDOWS)
    assert "unread" not in listed.model_dump(mode="json")["settings"]


def test_nothing_is_written_that_would_not_read_back(tmp_path: Path) -> None:
    spec = SessionSpec(goal="g", data="synthetic")
    too_long = spec.model_copy(update={"goal": "g" * 501})  # model_copy does not validate
    with Journal(tmp_path / "journal.db") as journal:
        with pytest.raises(ValueError, match=r"SessionRecord\.settings"):
            new_session(journal, settings={"spec": too_long.model_dump(mode="json")})
        assert journal.sessions.list() == []


# What reading stored JSON by key looks like: a session's settings or objective, a walk's spec,
# a library entry's objective, data spec or trial budget taken apart by name.
BY_KEY = re.compile(
    r"""\.settings\[|\.settings\.get\(|\bobjective\.get\(|\[["']spec["']\]|data_spec\.get\("""
    r"""|trial_budget\.get\(|\bspec\[|\bspec\.get\("""
)


def test_no_module_reads_a_stored_spec_by_key() -> None:
    root = Path(alphaloop.__file__).parent
    found = [
        f"{path.relative_to(root)}:{n}"
        for path in sorted(root.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if BY_KEY.search(line)
    ]
    assert found == []


def test_the_by_key_pattern_finds_what_it_looks_for() -> None:
    for line in (
        's.settings["spec"]',
        'x = s.settings.get("data")',
        'r.objective.get("metric")',
        'session = walk.spec["session"]',
        'w.spec.get("cadence", "yearly")',
    ):
        assert BY_KEY.search(line), line
    assert not BY_KEY.search("settings.journal_path")
