"""The journal's ``policies`` and ``replays`` tables: add, get, list, and their refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from alphaloop.exceptions import AlphaloopError, NotFound
from alphaloop.journal import Journal, PolicyKind, PolicySource

from .helpers import policy_fields, session_and_trial


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    with Journal(tmp_path / "journal.db") as j:
        yield j


def test_add_get_and_list_newest_first(journal: Journal) -> None:
    first = journal.policies.add(**policy_fields(session_and_trial(journal)))
    second = journal.policies.add(
        **policy_fields(session_and_trial(journal), kind="mean_cvar", val_objective=None)
    )
    assert first.kind is PolicyKind.ppo and first.source is PolicySource.session
    assert journal.policies.get(first.id) == first
    assert [p.id for p in journal.policies.list()] == [second.id, first.id]
    assert second.val_objective is None and first.symbols == ["A", "B"]


def test_missing_id_lists_recent_ids(journal: Journal) -> None:
    with pytest.raises(NotFound, match="library is empty"):
        journal.policies.get(1)
    made = journal.policies.add(**policy_fields(session_and_trial(journal)))
    with pytest.raises(NotFound, match=f"recent policy ids: {made.id}"):
        journal.policies.get(made.id + 41)


def test_one_entry_per_trial_and_clear_field_errors(journal: Journal) -> None:
    trial = session_and_trial(journal)
    journal.policies.add(**policy_fields(trial))
    with pytest.raises(AlphaloopError, match="already in the policy library"):
        journal.policies.add(**policy_fields(trial))
    with pytest.raises(ValueError, match=r"missing field.*config_hash"):
        journal.policies.add(
            **{k: v for k, v in policy_fields(trial).items() if k != "config_hash"}
        )
    with pytest.raises(ValueError, match=r"unknown field.*colour"):
        journal.policies.add(**policy_fields(trial), colour="red")
    with pytest.raises(ValueError, match=r"PolicyRecord\.kind"):
        journal.policies.add(**policy_fields(trial, kind="ensemble"))


def test_replays_need_exactly_one_parent(journal: Journal) -> None:
    trial = session_and_trial(journal)
    fields = dict(
        config_hash="h", start="2020-01-01", end="2020-06-30", data_source="synthetic",
        data_fingerprint="fp", metrics={"sharpe": 1.0}, returns=[0.01, -0.02],
    )  # fmt: skip
    with pytest.raises(ValueError, match="exactly one parent"):
        journal.policies.add_replay(**fields)
    replay = journal.policies.add_replay(parent_trial_id=trial.id, **fields)
    assert journal.policies.get_replay(replay.id).returns == [0.01, -0.02]
    assert journal.policies.list_replays(parent_trial_id=trial.id) == [replay]
    assert journal.policies.list_replays(parent_policy_id=1) == []
