"""``alphaloop replay`` end to end: a Mean-CVaR trial and a PPO library policy re-run on new
windows through the CLI, checked against the journal (a replay on a trial's own window gives
its journaled daily returns) and against itself (twice, bit-identical)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from alphaloop.journal import Journal
from alphaloop.settings import Settings
from alphaloop.trials import EVALUATOR_VERSION

UNSET = {str(a): None for f in Settings.model_fields.values() for a in f.validation_alias.choices}
TINY = ["--data", "synthetic", "--set", "n_steps=64", "--set", "batch_size=64", "--set",
        "n_epochs=3", "--n-envs", "1", "--total-timesteps", "64"]  # fmt: skip
# The synthetic set's windows: train 2010-01-05..2013-06-14, validation ..2014-08-08, test after.
NEW_WINDOW = ("2015-01-02", "2015-06-30")
IN_TRAINING = ("2012-01-02", "2012-06-29")


def cli(home: Path, *args: str) -> Any:
    return CliRunner().invoke(
        __import__("alphaloop.cli", fromlist=["app"]).app,
        list(args),
        env={**UNSET, "ALPHALOOP_HOME": str(home)},
    )


def ok_json(result: Any) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A manual PPO run and a Mean-CVaR research session, made through the CLI."""
    path = tmp_path_factory.mktemp("replay") / "home"
    train = ok_json(cli(path, "train", *TINY, "--json"))
    research = ok_json(
        cli(path, "research", "max Sharpe", "--mode", "cufolio_only", "--data", "synthetic",
            "--budget", "1", "--noise-seeds", "2", "--proposer", "random", "--json")
    )  # fmt: skip
    yield {"path": path, "train": train, "research": research}


def replay(home: dict[str, Any], *args: str, window: tuple[str, str] = NEW_WINDOW) -> Any:
    return cli(home["path"], "replay", *args, "--start", window[0], "--end", window[1], "--json")


def test_a_finished_session_is_a_library_entry(home: dict[str, Any]) -> None:
    final = home["research"]["final"]
    with Journal(home["path"] / "journal.db") as journal:
        entry = journal.policies.get(final["policy_id"])
        reported = journal.trials.get(entry.trial_id)
    assert (entry.kind, entry.source, entry.path, entry.sha256) == (
        "mean_cvar", "session", None, None,
    )  # fmt: skip
    assert reported.id == home["research"]["session"]["best_trial_id"]
    assert entry.config == reported.config and entry.config_hash == reported.config_hash
    assert entry.gates_passed == final["gates_passed"]
    assert entry.test_metrics is not None and entry.val_metrics == reported.metrics
    assert final["auto_activation"]["activated"] is False  # auto_activate is off by default


def test_a_trial_replayed_on_its_own_window_gives_its_journaled_returns(
    home: dict[str, Any],
) -> None:
    session = home["research"]["session"]
    trial = next(t for t in home["research"]["trials"] if t["id"] == session["best_trial_id"])
    window = tuple(session["settings"]["data"]["validation"])
    run = ok_json(replay(home, "--trial", f"{session['id']}:{trial['idx']}", window=window))
    assert run["replay"]["parent_trial_id"] == trial["id"]
    assert run["parent"] == f"trial #{trial['idx']} of {session['id']}"  # the journal's #
    assert run["replay"]["config_hash"] == trial["config_hash"]
    with Journal(home["path"] / "journal.db") as journal:
        # The trial was scored on folds; VALIDATION is the most recent of them.
        validation = journal.folds.of_trial(trial["id"])[-1]
    assert (validation.start_date, validation.end_date) == window
    assert run["replay"]["returns"] == validation.returns
    assert run["objective"] == pytest.approx(validation.objective, abs=0, rel=1e-12)


def test_replays_are_bit_identical_and_journaled(home: dict[str, Any]) -> None:
    session = home["research"]["session"]
    ref = f"{session['id']}:0"
    first, second = (ok_json(replay(home, "--trial", ref)) for _ in range(2))
    assert first["replay"]["id"] != second["replay"]["id"]
    assert (
        first["metrics"] == second["metrics"]
        and first["replay"]["returns"] == second["replay"]["returns"]
    )
    assert first["warning"] is None and first["n_days"] == len(first["replay"]["returns"])
    policy_id = home["train"]["session"]["final"]["policy_id"]
    a, b = (ok_json(replay(home, "--policy", str(policy_id))) for _ in range(2))
    assert a["metrics"] == b["metrics"] and a["replay"]["returns"] == b["replay"]["returns"]
    assert a["parent"] == f"policy {policy_id}"
    assert a["replay"]["parent_policy_id"] == policy_id and a["warning"] is None
    with Journal(home["path"] / "journal.db") as journal:
        replays = journal.policies.list_replays(parent_policy_id=policy_id)
        trials = journal.trials.of_session(session["id"])
    assert len(replays) >= 2
    # Every number journaled names the evaluator version that produced it: the replays and
    # the research loop's trials alike.
    assert {r.evaluator_version for r in replays} == {EVALUATOR_VERSION}
    assert first["replay"]["evaluator_version"] == EVALUATOR_VERSION
    assert trials and {t.evaluator_version for t in trials} == {EVALUATOR_VERSION}


def test_a_policy_replayed_on_its_validation_window_gives_the_trials_returns(
    home: dict[str, Any],
) -> None:
    run = home["train"]
    window = tuple(run["session"]["settings"]["data"]["validation"])
    policy_id = str(run["session"]["final"]["policy_id"])
    replayed = ok_json(replay(home, "--policy", policy_id, window=window))
    assert replayed["replay"]["returns"] == run["trial"]["val_returns"]


def test_the_training_window_warns_and_the_warning_is_journaled(home: dict[str, Any]) -> None:
    policy_id = home["train"]["session"]["final"]["policy_id"]
    result = replay(home, "--policy", str(policy_id), window=IN_TRAINING)
    run = ok_json(result)
    assert "overlaps the training window" in run["warning"]
    assert "overlaps the training window" in " ".join(result.stderr.split())
    with Journal(home["path"] / "journal.db") as journal:
        assert journal.policies.get_replay(run["replay"]["id"]).warning == run["warning"]


@pytest.mark.parametrize(
    ("window", "message"),
    [
        (("2030-01-01", "2030-06-30"), "outside the data"),
        (("2009-01-01", "2010-06-30"), "is before the data's first day"),
        (("2015-06-30", "2015-01-02"), "is after --end"),
        (("2015-01-02", "2015-01-09"), "needs at least"),
        (("2010-01-05", "2010-12-31"), "history before it"),
        (("2015-13-45", "2015-12-31"), "not a date"),
    ],
)
def test_bad_windows_are_bad_usage(
    home: dict[str, Any], window: tuple[str, str], message: str
) -> None:
    policy_id = home["train"]["session"]["final"]["policy_id"]
    result = replay(home, "--policy", str(policy_id), window=window)
    assert result.exit_code == 2 and message in " ".join(result.stderr.split())
    assert result.stdout == ""


def test_bad_references_are_bad_usage(home: dict[str, Any]) -> None:
    assert replay(home, "--policy", "77").exit_code == 2
    assert replay(home, "--trial", "no-colon").exit_code == 2
    assert replay(home, "--trial", f"{home['research']['session']['id']}:999").exit_code == 2
    both = replay(home, "--trial", "s:1", "--policy", "1")
    assert both.exit_code == 2 and "exactly one" in both.stderr


def test_a_ppo_trial_without_its_zip_is_not_retrained_but_its_library_copy_replays(
    home: dict[str, Any],
) -> None:
    run = home["train"]
    Path(run["trial"]["policy_path"]).unlink()
    result = replay(home, "--trial", f"{run['session']['id']}:{run['trial']['idx']}")
    assert result.exit_code == 1
    assert "cannot be replayed without retraining" in " ".join(result.stderr.split())
    # The library owns its own copy: the policy entry still replays.
    ok_json(replay(home, "--policy", str(run["session"]["final"]["policy_id"])))
