"""CSCV and PBO against hand-built cases, a brute-force loop and known noise/edge behaviour."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy.stats import rankdata

from alphaloop.metrics import sharpe
from alphaloop.validation import CSCVResult, cscv_pbo, n_combinations, session_pbo
from alphaloop.validation.pbo import pbo_interval
from alphaloop.validation.summary import fold_block

GOOD = [0.02, 0.01, 0.02, 0.01]
BAD = [-0.01, 0.0, -0.01, 0.0]


def test_strategies_that_swap_places_overfit_every_time() -> None:
    # Block 0: A good, B bad; block 1 the other way. Picking on either half selects the
    # strategy that is worst on the other: OOS rank 1 of 2, w = 1/3, logit log(1/2).
    a = np.array(GOOD + BAD)
    b = np.array(BAD + GOOD)
    out = cscv_pbo(np.column_stack([a, b]), n_blocks=2, labels=["A", "B"])
    assert out.pbo == 1.0 and out.n_combinations == 2
    assert out.is_blocks == ((0,), (1,))
    assert out.selected == (0, 1) and out.labels == ("A", "B")
    np.testing.assert_allclose(out.oos_rank, [1 / 3, 1 / 3])
    np.testing.assert_allclose(out.logits, [math.log(0.5)] * 2)
    assert out.prob_oos_loss == 1.0


def test_a_strategy_better_everywhere_never_overfits() -> None:
    a = np.array(GOOD + GOOD)
    b = np.array(BAD + BAD[::-1])
    out = cscv_pbo(np.column_stack([b, a]), n_blocks=2)
    assert out.pbo == 0.0
    assert out.selected == (1, 1)
    np.testing.assert_allclose(out.logits, [math.log(2.0)] * 2)  # rank 2 of 2: w = 2/3
    assert out.prob_oos_loss == 0.0


def _brute_force(x: np.ndarray, n_blocks: int) -> list[tuple[int, float, float, float]]:
    """The paper's procedure written as a plain loop over combinations, with metrics.sharpe."""
    x = x[x.shape[0] % n_blocks :]
    blocks = np.split(x, n_blocks)
    out = []
    for combo in itertools.combinations(range(n_blocks), n_blocks // 2):
        rest = [i for i in range(n_blocks) if i not in combo]
        train = np.vstack([blocks[i] for i in combo])
        test = np.vstack([blocks[i] for i in rest])
        is_sr = [sharpe(col, periods=1) for col in train.T]
        oos_sr = [sharpe(col, periods=1) for col in test.T]
        best = int(np.argmax(is_sr))
        w = rankdata(oos_sr)[best] / (len(oos_sr) + 1)
        out.append((best, is_sr[best], oos_sr[best], math.log(w / (1 - w))))
    return out


@pytest.mark.parametrize(("n_days", "n_trials", "n_blocks"), [(60, 5, 6), (83, 7, 4), (64, 3, 8)])
def test_vectorised_cscv_matches_a_brute_force_loop(
    n_days: int, n_trials: int, n_blocks: int
) -> None:
    rng = np.random.default_rng(n_days)
    x = rng.normal(0.0005, 0.01, (n_days, n_trials))
    out = cscv_pbo(x, n_blocks=n_blocks)
    expected = _brute_force(x, n_blocks)
    assert out.n_days_dropped == n_days % n_blocks
    assert out.n_days == n_days - n_days % n_blocks
    assert out.n_combinations == n_combinations(n_blocks) == len(expected)
    assert list(out.selected) == [e[0] for e in expected]
    np.testing.assert_allclose(out.is_sharpe, [e[1] for e in expected], rtol=1e-9)
    np.testing.assert_allclose(out.oos_sharpe, [e[2] for e in expected], rtol=1e-9)
    np.testing.assert_allclose(out.logits, [e[3] for e in expected], rtol=1e-12)
    half_at_median = [
        1.0 if e[3] < -1e-12 else 0.5 if abs(e[3]) <= 1e-12 else 0.0 for e in expected
    ]
    assert out.pbo == pytest.approx(np.mean(half_at_median))


def test_identical_trials_tie_at_the_median() -> None:
    # Three clones: every OOS Sharpe ties, the average rank is 2 of 3, w = 1/2, logit 0: the
    # pick did neither better nor worse than the median, so each combination counts half.
    col = np.random.default_rng(1).normal(0.001, 0.01, 40)
    out = cscv_pbo(np.column_stack([col, col, col]), n_blocks=4)
    np.testing.assert_allclose(out.logits, 0.0, atol=1e-12)
    assert out.pbo == 0.5


def test_a_pick_at_the_median_counts_half_with_an_odd_number_of_trials() -> None:
    # Three trials, two blocks: A is best in block 0 and middling in block 1, C the other way
    # round, B always middling-to-worst. Each half's IS winner ranks second of three OOS:
    # w = 2/4, logit exactly 0. Counted whole (logit <= 0), PBO would be 1; it is 1/2.
    high, middle, low = [0.02, 0.01] * 2, [0.001, 0.0] * 2, [-0.001, -0.002] * 2
    a, b, c = [*high, *middle], [*[0.0, -0.01] * 2, *low], [*middle, *high]
    out = cscv_pbo(np.column_stack([a, b, c]), n_blocks=2, labels=["A", "B", "C"])
    assert out.selected == (0, 2)
    assert out.logits == (0.0, 0.0) and out.oos_rank == (0.5, 0.5)
    assert out.pbo == 0.5


def test_pure_noise_gives_pbo_near_one_half() -> None:
    pbos = [
        cscv_pbo(np.random.default_rng(seed).normal(0.0, 0.01, (800, 20))).pbo for seed in range(6)
    ]
    assert 0.35 < float(np.mean(pbos)) < 0.65
    assert all(0.1 < p < 0.9 for p in pbos)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_genuinely_better_strategy_gives_pbo_near_zero(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 0.01, (800, 20))
    x[:, 7] += 0.002  # a daily Sharpe of 0.2 (about 3.2 a year) on top of the same noise
    out = cscv_pbo(x)
    assert out.pbo < 0.05
    assert np.mean(np.array(out.selected) == 7) > 0.95
    assert out.prob_oos_loss < 0.05


def test_s16_has_12870_combinations_and_journals_as_json() -> None:
    x = np.random.default_rng(3).normal(0.0003, 0.01, (750, 10))
    out = cscv_pbo(x, labels=[f"t{i}" for i in range(10)])
    assert out.n_blocks == 16 and out.n_combinations == 12_870 == math.comb(16, 8)
    assert out.n_days_dropped == 750 % 16
    assert all(len(c) == 8 for c in out.is_blocks)
    text = json.dumps(out.model_dump(), allow_nan=False)
    assert CSCVResult.model_validate_json(text) == out
    with pytest.raises(ValueError):
        out.pbo = 0.0  # frozen


def test_cscv_rejects_bad_input() -> None:
    x = np.random.default_rng(0).normal(0, 0.01, (64, 4))
    with pytest.raises(ValueError, match="even integer"):
        cscv_pbo(x, n_blocks=5)
    with pytest.raises(ValueError, match="2 days per block"):
        cscv_pbo(x[:20], n_blocks=16)
    with pytest.raises(ValueError, match="at least 2 trials"):
        cscv_pbo(x[:, :1])
    with pytest.raises(ValueError, match="matrix"):
        cscv_pbo(x[:, 0])
    with pytest.raises(ValueError, match="3 labels for 4 trials"):
        cscv_pbo(x, n_blocks=4, labels=["a", "b", "c"])
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or inf"):
        cscv_pbo(bad, n_blocks=4)


def test_the_bootstrap_interval_covers_noise_and_excludes_an_edge() -> None:
    rng = np.random.default_rng(11)
    noise = rng.normal(0.0, 0.01, (768, 8))
    lo, hi = pbo_interval(noise)
    assert 0.0 <= lo < 0.5 < hi <= 1.0  # noise: PBO could be anything around a half
    assert pbo_interval(noise) == (lo, hi)  # seeded: the same matrix, the same interval
    edge = noise.copy()
    edge[:, 2] += 0.003
    lo, hi = pbo_interval(edge)
    assert hi < 0.25 and lo <= cscv_pbo(edge).pbo <= hi
    with pytest.raises(ValueError, match="level"):
        pbo_interval(noise, level=1.0)


def test_pbo_runs_over_the_largest_complete_block_of_a_ragged_fold_matrix() -> None:
    full, one = [0.0] * 300, [0.0] * 100
    # Two trials ran all three folds, three were raced out after the last: 2 x 300 > 5 x 100.
    assert fold_block([full, one, full, one, one]) == [0, 2]
    assert fold_block([full, one, full, one, one, one]) == list(range(6))  # a tie: every trial
    # Six raced out beside two full ones: 8 trials x 100 days > 2 x 300, so every trial.
    assert fold_block([full, one, one, one, one, one, one, full]) == list(range(8))
    assert fold_block([one, one, full]) == [0, 1, 2]  # one full trial is no block
    rng = np.random.default_rng(2)
    series = [rng.normal(0, 0.01, n).tolist() for n in (320, 96, 320, 320, 96)]
    summary = session_pbo(series, labels=list("abcde"))
    assert (summary.n_trials, summary.n_days, summary.n_trials_left_out) == (3, 320, 2)
    assert summary.interval is not None and summary.interval[0] <= summary.interval[1]
