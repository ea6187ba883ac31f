"""Pairs measured in the model's tokens: a tiny GPT-2 with a byte-level tokenizer (one token a
byte), so every length has an oracle. Prompts are fitted to ``max_length``; a run whose pairs
still do not fit exits 2 before training, naming the lengths and the limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.exceptions import InvalidRequest, exit_code_of
from alphaloop.flywheel.lengths import fit_pairs, model_prompt, resolve_max_length
from alphaloop.journal import Journal
from alphaloop.journal.preferences import PreferenceRecord
from alphaloop.ops.dpo import DpoOptions, list_dpo_runs, train_dpo
from alphaloop.settings import Settings

from .prompts import build_byte_model, byte_tokenizer, research_prompt

CHOSEN = '{"changes": {"cvar_alpha": 0.95}}'
REJECTED = '{"changes": {"n_scenarios": 9000}}'


def _pairs(n: int) -> list[dict]:
    return [
        {
            "source": "research",
            "origin_key": f"research:s:{i}>{i + 100}",
            "origin": {"i": i},
            "prompt": research_prompt(12 + i % 8),
            "chosen": CHOSEN,
            "rejected": REJECTED,
            "margin": 1.0,
            "labelled": True,
        }
        for i in range(n)
    ]


def _records(n: int) -> list[PreferenceRecord]:
    return [
        PreferenceRecord(id=i + 1, created_at="2026-01-01T00:00:00Z", **pair)
        for i, pair in enumerate(_pairs(n))
    ]


def test_lengths_are_the_model_prompt_and_longer_answer_in_bytes() -> None:
    tokenizer = byte_tokenizer()
    rows = _records(3)
    # No chat template: the model reads the messages' contents joined by blank lines.
    texts = [model_prompt(tokenizer, p.prompt) for p in rows]
    whole = [len(t.encode()) + len(REJECTED.encode()) + 1 for t in texts]  # + EOS
    (prompts, chosen, _), lengths = fit_pairs(tokenizer, rows, max(whole))
    assert prompts == texts and chosen == [CHOSEN] * 3
    assert lengths["sequence_max"] == max(whole) and lengths["pairs_cut"] == 0
    assert lengths["prompt_max"] == max(len(t.encode()) for t in texts)


def test_prompts_are_fitted_to_the_limit() -> None:
    tokenizer = byte_tokenizer()
    rows = _records(4)
    limit = min(len(model_prompt(tokenizer, p.prompt).encode()) for p in rows) - 300
    (prompts, _, _), lengths = fit_pairs(tokenizer, rows, limit)
    assert lengths["pairs_cut"] == 4 and lengths["entries_cut"] >= 4
    assert all(len(p.encode()) + len(REJECTED.encode()) + 1 <= limit for p in prompts)
    assert lengths["sequence_max"] <= limit
    assert all("## Knobs (current best config)" in p and "cut to fit" in p for p in prompts)


def test_too_long_pairs_are_named_with_their_lengths() -> None:
    tokenizer = byte_tokenizer()
    with pytest.raises(InvalidRequest) as err:
        fit_pairs(tokenizer, _records(7), 300)
    message = str(err.value)
    assert "7 of 7 pair(s) do not fit max_length 300 tokens" in message
    assert "and 2 more" in message  # five named, longest first
    assert exit_code_of(err.value) == 2


def test_max_length_defaults_to_the_context_length(tmp_path: Path) -> None:
    model = build_byte_model(tmp_path / "m", n_positions=512)
    assert resolve_max_length(None, model) == 512
    assert resolve_max_length(300, model) == 300
    with pytest.raises(InvalidRequest, match="longer than the model's context length 512"):
        resolve_max_length(1024, model)


def test_a_run_that_would_drop_pairs_exits_2_before_training(
    settings: Settings, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    model = build_byte_model(tmp_path / "m", n_positions=512)
    clean_env.setenv("ALPHALOOP_DPO_MIN_HELDOUT", "1")
    with Journal(settings.journal_path) as journal:
        for pair in _pairs(10):
            journal.preferences.add(**pair)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["dpo", "train", "--model", str(model), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "do not fit max_length 512 tokens" in result.stderr
    assert not out.exists()  # nothing trained, nothing written
    (run,) = list_dpo_runs(settings)
    assert run.status == "failed" and run.max_length == 512 and "InvalidRequest" in run.error

    # A limit below the context is taken from the setting; too long again, named as such.
    clean_env.setenv("ALPHALOOP_DPO_MAX_LENGTH", "400")
    result = CliRunner().invoke(
        app, ["dpo", "train", "--model", str(model), "--out", str(out), "--json"]
    )
    assert result.exit_code == 2 and "max_length 400 tokens" in result.stderr
    assert result.stdout == ""


def test_a_run_refuses_a_max_length_past_the_context(settings: Settings, tmp_path: Path) -> None:
    model = build_byte_model(tmp_path / "m", n_positions=512)
    with Journal(settings.journal_path) as journal:
        for pair in _pairs(4):
            journal.preferences.add(**pair)
    with pytest.raises(InvalidRequest, match="context length 512"):
        train_dpo(settings, model, tmp_path / "o", DpoOptions(max_length=4096))
    assert list_dpo_runs(settings) == []
    assert json.loads((model / "config.json").read_text())["n_positions"] == 512


@pytest.mark.slow
def test_fitted_pairs_train_whole(
    settings: Settings, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    model = build_byte_model(tmp_path / "m", n_positions=4096)
    clean_env.setenv("ALPHALOOP_DPO_MIN_HELDOUT", "1")
    with Journal(settings.journal_path) as journal:
        for pair in _pairs(10):
            journal.preferences.add(**pair)
    out = tmp_path / "out"
    args = ["dpo", "train", "--model", str(model), "--out", str(out), "--max-steps", "2"]
    result = CliRunner().invoke(app, [*args, "--max-length", "2400", "--json"])
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)
    assert run["status"] == "finished" and run["max_length"] == 2400
    # Every research prompt here is longer than 2,400 bytes: each was cut, none dropped.
    assert run["lengths"]["pairs_cut"] == 10 and run["n_train"] + run["n_heldout"] == 10
    assert run["lengths"]["sequence_max"] <= 2400
    assert run["lengths"]["prompt_max"] + len(REJECTED) + 1 <= 2400
