"""Journal rows for the library tests: a finished session and trial to publish from."""

from __future__ import annotations

from typing import Any

from alphaloop.journal import Journal, TrialRecord
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.spec import SessionSpec


def session_and_trial(journal: Journal, mode: str = "ppo_only", **session: Any) -> TrialRecord:
    """A journaled session of ``mode`` and one kept search trial in it."""
    values: dict[str, Any] = dict(
        goal="max Sharpe",
        mode=mode,
        objective={"metric": "sharpe"},
        proposer="random",
        budget=1,
        seed=0,
        data_source="synthetic",
        data_fingerprint="fp",
        settings={
            "spec": SessionSpec(goal="max Sharpe", mode=mode, data="synthetic").model_dump(),
            "data": {
                "source": "synthetic",
                "fingerprint": "fp",
                "symbols": ["A", "B"],
                "train": ["2010-01-05", "2012-12-31"],
                "validation": ["2013-01-02", "2013-12-31"],
                "test": ["2014-01-02", "2014-12-31"],
            },
        },
        baseline_config=TrialConfig().model_dump(),
    )
    sid = journal.sessions.create(**{**values, **session})
    config = TrialConfig()
    return journal.trials.start(
        sid,
        kind="search",
        config=config.model_dump(),
        config_hash=config_hash(config),
        delta={"changes": {}},
        parent_id=None,
        seed=0,
        rationale="test",
        proposer="random",
    )


def policy_fields(trial: TrialRecord, **overrides: Any) -> dict[str, Any]:
    """Every field :meth:`Journal.policies.add` needs, for ``trial``."""
    values: dict[str, Any] = dict(
        kind="ppo",
        source="session",
        session_id=trial.session_id,
        trial_id=trial.id,
        mode="ppo_only",
        config=trial.config,
        config_hash=trial.config_hash,
        seed=0,
        data_fingerprint="fp",
        symbols=["A", "B"],
        data_spec={"data": "synthetic"},
        trial_budget={},
        objective={"metric": "sharpe"},
        val_objective=1.0,
    )
    return {**values, **overrides}
