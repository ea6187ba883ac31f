"""Held-out accuracy: its Wilson interval against hand-worked values, and the minimum
held-out count below which a run is refused before anything is journaled or loaded."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from alphaloop.exceptions import InvalidRequest, exit_code_of
from alphaloop.flywheel.heldout import check_heldout, split_pairs, wilson_interval
from alphaloop.journal import Journal
from alphaloop.ops.dpo import dpo_check, list_dpo_runs, train_dpo
from alphaloop.settings import Settings, get_settings

from .helpers import separable_pairs


def _hand_wilson(k: float, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The score interval solved from |p - p_hat| = z sqrt(p (1 - p) / n) as a quadratic."""
    p = k / n
    a = 1 + z * z / n
    b = -(2 * p + z * z / n)
    c = p * p
    root = math.sqrt(b * b - 4 * a * c)
    return (-b - root) / (2 * a), (-b + root) / (2 * a)


@pytest.mark.parametrize(("k", "n"), [(8, 10), (1, 3), (0, 3), (20, 20), (13.5, 25)])
def test_wilson_interval_solves_the_score_equation(k: float, n: int) -> None:
    low, high = wilson_interval(k / n, n)
    hand_low, hand_high = _hand_wilson(k, n)
    assert low == pytest.approx(max(hand_low, 0.0), abs=1e-12)
    assert high == pytest.approx(min(hand_high, 1.0), abs=1e-12)


def test_wilson_interval_published_values() -> None:
    # Newcombe (1998), Table I: 81 of 263 -> 0.2553-0.3662; 15 of 148 -> 0.0624-0.1605.
    assert wilson_interval(81 / 263, 263) == pytest.approx((0.2553, 0.3662), abs=1e-4)
    assert wilson_interval(15 / 148, 148) == pytest.approx((0.0624, 0.1605), abs=1e-4)
    with pytest.raises(ValueError, match="at least one"):
        wilson_interval(0.5, 0)


def test_minimum_held_out_count() -> None:
    check_heldout(20, 100, 20)
    with pytest.raises(InvalidRequest) as err:
        check_heldout(3, 15, 20)
    assert exit_code_of(err.value) == 2
    assert "3 held-out pair(s) of 15" in str(err.value)
    assert "at least 20" in str(err.value) and "about 100 labelled pairs" in str(err.value)


def _fake_model(path: Path) -> Path:
    """Files enough to pass the model-directory check; never loaded."""
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"n_positions": 64}))
    (path / "model.safetensors").write_bytes(b"")
    (path / "tokenizer.json").write_text("{}")
    return path


def test_a_run_with_too_few_held_out_pairs_is_refused(settings: Settings, tmp_path: Path) -> None:
    with Journal(settings.journal_path) as journal:
        for pair in separable_pairs(40):
            journal.preferences.add(**pair)
        held = len(split_pairs(journal.preferences.list(labelled=True))[1])
    assert held < settings.dpo_min_heldout == 20
    with pytest.raises(InvalidRequest, match=f"{held} held-out pair"):
        train_dpo(settings, _fake_model(tmp_path / "m"), tmp_path / "out")
    assert list_dpo_runs(settings) == []  # refused before a run was journaled


def test_check_skips_with_too_few_held_out_pairs(
    settings: Settings, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("ALPHALOOP_DPO_MIN_PAIRS", "10")
    with Journal(settings.journal_path) as journal:
        for pair in separable_pairs(12):
            journal.preferences.add(**pair)
    check = dpo_check(get_settings(), _fake_model(tmp_path / "m"))
    assert not check.trained and check.run.status == "skipped"
    assert "ALPHALOOP_DPO_MIN_HELDOUT" in check.run.reason
