"""``alphaloop dpo`` end to end: check skips and journals why, train on a tiny model prints
one JSON document and journals the run, a directory that is not a model exits 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.journal import Journal
from alphaloop.settings import Settings
from tests.flywheel.helpers import build_tiny_model, isolate_hf, separable_pairs


@pytest.fixture(autouse=True)
def offline_env(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_hf(clean_env, tmp_path)


def _pairs(settings: Settings, n: int) -> None:
    with Journal(settings.journal_path) as journal:
        for pair in separable_pairs(n):
            journal.preferences.add(**pair)


@pytest.mark.slow
def test_check_then_train(
    settings: Settings, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    model = build_tiny_model(tmp_path / "tiny")
    _pairs(settings, 6)
    clean_env.setenv("ALPHALOOP_DPO_MIN_PAIRS", "8")
    clean_env.setenv("ALPHALOOP_DPO_MIN_HELDOUT", "1")
    skipped = CliRunner().invoke(app, ["dpo", "check", "--model", str(model), "--json"])
    assert skipped.exit_code == 0, skipped.output
    doc = json.loads(skipped.stdout)
    assert doc["trained"] is False and doc["run"]["status"] == "skipped"
    assert "6 new labelled pair(s)" in doc["run"]["reason"]

    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["dpo", "train", "--model", str(model), "--out", str(out), "--max-steps", "3", "--json"],
    )
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)
    assert run["status"] == "finished" and run["n_train"] + run["n_heldout"] == 6
    assert run["last_preference_id"] == 6 and len(run["loss_curve"]) == 3
    assert run["max_length"] == 256 and run["accuracy_after_low"] <= run["accuracy_after"]
    assert (out / "model.safetensors").is_file()
    runs = json.loads(CliRunner().invoke(app, ["dpo", "runs", "--json"]).stdout)
    assert [r["status"] for r in runs] == ["finished", "skipped"]
    # Human output: the steps and the latest loss as the bar left them, then the run.
    shown = CliRunner().invoke(
        app, ["dpo", "train", "--model", str(model), "--out", str(tmp_path / "out2"),
              "--max-steps", "2"],
    )  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert re.search(r"DPO .*2/2 steps loss \d\.\d{4}", shown.stdout), shown.stdout
    assert "DPO run 3 finished" in shown.stdout
    # Nothing new since the run: the next check skips.
    again = json.loads(CliRunner().invoke(app, ["dpo", "check", "--json"]).stdout)
    assert again["new_pairs"] == 0 and again["trained"] is False


def test_not_a_model_exits_2(settings: Settings, tmp_path: Path) -> None:
    _pairs(settings, 3)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    result = CliRunner().invoke(
        app, ["dpo", "train", "--model", str(tmp_path / "m"), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2 and "has no weights" in result.stderr
