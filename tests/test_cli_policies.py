"""``alphaloop policies`` end to end: a real ``train`` run enters the library, and list, show,
activate and verify work on it through the CLI; a tampered file is refused."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from typer.testing import CliRunner

from alphaloop import telemetry
from alphaloop.journal import EventKind, Journal
from alphaloop.settings import Settings

UNSET = {str(a): None for f in Settings.model_fields.values() for a in f.validation_alias.choices}
# Tiny PPO: one update of 64 env steps on one env.
TINY = ["--data", "synthetic", "--set", "n_steps=64", "--set", "batch_size=64", "--set",
        "n_epochs=3", "--n-envs", "1", "--total-timesteps", "64"]  # fmt: skip


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
def spans() -> Iterator[InMemorySpanExporter]:
    """Spans of the module's runs, in memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.configure(provider=provider)
    yield exporter
    telemetry.reset()


@pytest.fixture(scope="module")
def trained(
    tmp_path_factory: pytest.TempPathFactory, spans: InMemorySpanExporter
) -> Iterator[tuple[Path, Any]]:
    home = tmp_path_factory.mktemp("policies") / "home"
    yield home, ok_json(cli(home, "train", *TINY, "--json"))


def test_a_train_run_is_traced(trained: tuple[Path, Any], spans: InMemorySpanExporter) -> None:
    _, run = trained
    (span,) = [s for s in spans.get_finished_spans() if s.name == "train.manual"]
    attributes = dict(span.attributes)
    assert attributes["alphaloop.session_id"] == run["session"]["id"]
    assert attributes["alphaloop.policy_id"] == run["session"]["final"]["policy_id"]
    assert attributes["alphaloop.total_timesteps"] == 64
    assert attributes["alphaloop.objective"] == run["trial"]["objective"]


def test_a_train_run_is_a_library_entry(trained: tuple[Path, Any]) -> None:
    home, run = trained
    listed = ok_json(cli(home, "policies", "list", "--json"))
    assert listed["active_policy_id"] is None
    (entry,) = listed["policies"]
    assert run["session"]["final"]["policy_id"] == entry["id"]
    assert (entry["kind"], entry["source"], entry["mode"]) == ("ppo", "manual", "ppo_only")
    assert entry["trial_id"] == run["trial"]["id"]
    assert entry["config_hash"] == run["trial"]["config_hash"]
    assert entry["val_objective"] == run["trial"]["objective"]
    assert entry["data_spec"]["data"] == "synthetic" and len(entry["symbols"]) >= 2
    assert entry["trial_budget"]["total_timesteps"] == 64
    # The library owns a copy named by its hash, byte for byte the trial's zip.
    library_file, trial_file = Path(entry["path"]), Path(run["trial"]["policy_path"])
    digest = hashlib.sha256(library_file.read_bytes()).hexdigest()
    assert digest == entry["sha256"] and library_file.name == f"{digest[:16]}.zip"
    assert library_file != trial_file and library_file.read_bytes() == trial_file.read_bytes()


def test_show_activate_and_verify(trained: tuple[Path, Any]) -> None:
    home, _ = trained
    (entry,) = ok_json(cli(home, "policies", "list", "--json"))["policies"]
    shown = ok_json(cli(home, "policies", "show", str(entry["id"]), "--json"))
    assert shown["policy"] == entry and shown["active"] is False
    # A manual train run has no gates: no GO, so activation needs a person's override.
    refused = cli(home, "policies", "activate", str(entry["id"]))
    assert refused.exit_code == 2 and "gates were not evaluated" in refused.stderr
    assert not (home / "active_policy.json").exists()
    bare = cli(home, "policies", "activate", str(entry["id"]), "--force")
    assert bare.exit_code == 2 and "needs a reason" in bare.stderr
    activated = ok_json(
        cli(home, "policies", "activate", str(entry["id"]), "--force", "--reason", "smoke test",
            "--json")
    )  # fmt: skip
    assert activated["active_policy_id"] == entry["id"]
    listed = ok_json(cli(home, "policies", "list", "--json"))
    assert listed["overrides"] == {str(entry["id"]): "smoke test"}
    shown_text = " ".join(cli(home, "policies", "show", str(entry["id"])).stdout.split())
    assert "activated over its gates: smoke test" in shown_text
    with Journal(home / "journal.db") as journal:
        idx = journal.trials.get(entry["trial_id"]).idx  # the journal's #, not the row's id
    assert shown["trial_idx"] == idx and f"{entry['session_id']}, trial #{idx})" in shown_text
    # The validation figure is the one its session ranked it by, in the list as in `show`.
    assert f"validation objective {entry['val_objective']:.4f}: its sharpe on each fold" in (
        shown_text
    )
    listed_text = cli(home, "policies", "list").stdout
    assert f"{entry['val_objective']:.3f}" in listed_text
    pointer = json.loads((home / "active_policy.json").read_text())
    assert pointer["policy_id"] == entry["id"] and pointer["sha256"] == entry["sha256"]
    assert ok_json(cli(home, "policies", "show", str(entry["id"]), "--json"))["active"]
    with Journal(home / "journal.db") as journal:
        (event,) = journal.logs.events(None, kind=EventKind.policy_activated)
    assert event.payload["policy_id"] == entry["id"]
    assert event.payload["override"] == "smoke test" and event.payload["gates_passed"] is None
    verified = ok_json(cli(home, "policies", "verify", "--json"))
    assert verified["ok"] and [c["policy_id"] for c in verified["checks"]] == [entry["id"]]


def test_unknown_ids_are_bad_usage(trained: tuple[Path, Any]) -> None:
    home, _ = trained
    for command in ("show", "activate"):
        result = cli(home, "policies", command, "999")
        assert result.exit_code == 2
        assert "no policy 999" in result.stderr and "recent policy ids" in result.stderr


def test_a_tampered_file_is_refused(trained: tuple[Path, Any], tmp_path: Path) -> None:
    home, _ = trained
    (entry,) = ok_json(cli(home, "policies", "list", "--json"))["policies"]
    path = Path(entry["path"])
    original = path.read_bytes()
    try:
        path.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
        verify = cli(home, "policies", "verify", "--json")
        assert verify.exit_code == 1
        (check,) = json.loads(verify.stdout)["checks"]
        assert not check["ok"] and str(path) in check["detail"]
        refused = cli(home, "policies", "activate", str(entry["id"]), "--force", "--reason", "test")
        assert refused.exit_code == 1
        message = " ".join(refused.stderr.split())
        assert "not loaded" in message and "Restore the file" in message
    finally:
        path.write_bytes(original)
    assert ok_json(cli(home, "policies", "verify", "--json"))["ok"]
