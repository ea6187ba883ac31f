"""The active-policy pointer: atomic under kill -9, garbled files reported, activation by id
journaled, a tampered entry refused, and the ``auto_activate`` rule."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from alphaloop.exceptions import ActivePolicyError, NotFound, PolicyTampered
from alphaloop.journal import EventKind, Journal, PolicyRecord
from alphaloop.library import activate, active_policy_id, auto_activate, copy_into_library
from alphaloop.settings import Settings

from .helpers import policy_fields, session_and_trial

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def journal(settings: Settings) -> Journal:
    with Journal(settings.journal_path) as j:
        yield j


def _config_entry(journal: Journal, **fields: object) -> PolicyRecord:
    trial = session_and_trial(journal, mode="cufolio_only")
    return journal.policies.add(**policy_fields(trial, kind="mean_cvar", **fields))


def test_no_pointer_then_activation_by_id_is_journaled(
    journal: Journal, settings: Settings
) -> None:
    assert active_policy_id(settings) is None
    first, second = _config_entry(journal), _config_entry(journal)
    activate(journal, settings, first.id)
    activate(journal, settings, second.id, reason="test")
    assert active_policy_id(settings) == second.id
    events = journal.logs.events(None, kind=EventKind.policy_activated)
    assert [(e.payload["policy_id"], e.payload["previous_policy_id"]) for e in events] == [
        (first.id, None),
        (second.id, first.id),
    ]
    with pytest.raises(NotFound):
        activate(journal, settings, 99)
    assert active_policy_id(settings) == second.id


@pytest.mark.parametrize("text", ["", '{"policy_id": 3', '{"policy_id": "3"}', "[1]", "\xff"])
def test_a_garbled_pointer_is_a_clear_error(settings: Settings, text: str) -> None:
    settings.active_policy_path.parent.mkdir(parents=True, exist_ok=True)
    settings.active_policy_path.write_text(text, encoding="latin-1")
    with pytest.raises(ActivePolicyError, match="alphaloop policies activate ID"):
        active_policy_id(settings)


def test_a_tampered_entry_is_not_activated(
    journal: Journal, settings: Settings, tmp_path: Path
) -> None:
    kept = _config_entry(journal)
    activate(journal, settings, kept.id)
    source = tmp_path / "p.zip"
    source.write_bytes(b"policy bytes")
    path, sha = copy_into_library(source, settings.policies_dir)
    entry = journal.policies.add(
        **policy_fields(session_and_trial(journal), path=str(path), sha256=sha)
    )
    path.write_bytes(b"other bytes")
    with pytest.raises(PolicyTampered, match=str(path)):
        activate(journal, settings, entry.id)
    assert active_policy_id(settings) == kept.id


def test_auto_activate_rule(journal: Journal, settings: Settings) -> None:
    on = settings.model_copy(update={"auto_activate": True})
    gated = _config_entry(journal, val_objective=1.0, gates_passed=True)
    assert not auto_activate(journal, settings, gated, 0.1).activated  # the setting is off
    failed = _config_entry(journal, val_objective=5.0, gates_passed=False)
    unknown = _config_entry(journal, val_objective=5.0, gates_passed=None)
    assert "gates failed" in auto_activate(journal, on, failed, 0.1).reason
    assert "not evaluated" in auto_activate(journal, on, unknown, 0.1).reason
    assert active_policy_id(on) is None
    assert auto_activate(journal, on, gated, 0.1).activated  # nothing active to beat
    within = _config_entry(journal, val_objective=1.05, gates_passed=True)
    decision = auto_activate(journal, on, within, 0.1)  # 1.05 - 1.0 is not > 0.1
    assert not decision.activated and decision.previous_policy_id == gated.id
    other_metric = _config_entry(
        journal, val_objective=9.0, gates_passed=True, objective={"metric": "sortino"}
    )
    assert "different metrics" in auto_activate(journal, on, other_metric, 0.1).reason
    beats = _config_entry(journal, val_objective=1.2, gates_passed=True)
    assert auto_activate(journal, on, beats, 0.1).activated
    assert active_policy_id(on) == beats.id


LOOP = """
import sys
from alphaloop.journal import Journal
from alphaloop.library import activate
from alphaloop.settings import Settings
settings = Settings()
ids = [int(sys.argv[1]), int(sys.argv[2])]
with Journal(settings.journal_path) as journal:
    activate(journal, settings, ids[0])
    print("ready", flush=True)
    n = 0
    while True:
        n += 1
        activate(journal, settings, ids[n % 2])
"""


@pytest.mark.slow
def test_the_pointer_survives_kill_9_mid_activation(journal: Journal, settings: Settings) -> None:
    a, b = _config_entry(journal), _config_entry(journal)
    env = {**os.environ, "ALPHALOOP_HOME": str(settings.home), "PYTHONPATH": str(REPO)}
    rng = random.Random(7)
    seen = set()
    for _ in range(8):
        proc = subprocess.Popen(
            [sys.executable, "-c", LOOP, str(a.id), str(b.id)],
            stdout=subprocess.PIPE,
            env=env,
            cwd=REPO,
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.01, 0.2))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        seen.add(active_policy_id(settings))  # parses, whatever instant the kill hit
    assert seen <= {a.id, b.id}
    # Both ids were seen: the kills really landed between different activations.
    assert seen == {a.id, b.id}
