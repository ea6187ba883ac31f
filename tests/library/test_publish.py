"""A PPO research session publishes its best into the library at finalize, with its zip, and
``PolicyRetrained`` names the library id; the ``auto_activate`` rule's decision is kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from alphaloop.journal import EventKind, Journal
from alphaloop.library import load_ppo, verified_policy_file
from alphaloop.settings import Settings

RESEARCH = ["research", "max Sharpe", "--mode", "ppo_only", "--data", "synthetic", "--budget",
            "1", "--noise-seeds", "2", "--proposer", "random", "--total-timesteps", "64",
            "--json"]  # fmt: skip
UNSET = {str(a): None for f in Settings.model_fields.values() for a in f.validation_alias.choices}


@pytest.mark.slow
def test_a_ppo_session_publishes_its_best(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = CliRunner().invoke(
        __import__("alphaloop.cli", fromlist=["app"]).app,
        RESEARCH,
        env={**UNSET, "ALPHALOOP_HOME": str(home), "ALPHALOOP_AUTO_ACTIVATE": "1"},
    )
    assert result.exit_code == 0, result.output
    final = json.loads(result.stdout)["final"]
    with Journal(home / "journal.db") as journal:
        entry = journal.policies.get(final["policy_id"])
        session = journal.sessions.get(entry.session_id)
        retrained = journal.logs.events(session.id, kind=EventKind.policy_retrained)
    assert entry.kind == "ppo" and entry.source == "session" and entry.mode == "ppo_only"
    assert entry.trial_id == session.best_trial_id and final["policy_path"] == entry.path
    assert verified_policy_file(entry) == Path(entry.path)
    assert load_ppo(entry).policy is not None
    assert entry.gates_passed == final.get("gates_passed")
    beat = (
        "best_trial_id" in final
        and final["best_trial_id"] == entry.trial_id
        and final["best_test_objective"] > final["baseline_test_objective"]
    )
    assert bool(retrained) == beat
    if retrained:
        assert retrained[0].payload["policy_id"] == entry.id
    # Turned on, the rule activates only a gated entry (nothing was active to beat).
    decision = final["auto_activation"]
    assert decision["activated"] == (entry.gates_passed is True)
    active = home / "active_policy.json"
    assert active.exists() == decision["activated"]
