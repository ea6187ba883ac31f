"""The session-level deflated Sharpe against the paper's formula on autocorrelated noise."""

from __future__ import annotations

import numpy as np
import pytest

from alphaloop.validation import session_dsr
from alphaloop.validation.sharpe import effective_trials, expected_max_sharpe, trial_sharpes


def test_session_dsr_hurdle_takes_the_trials_own_variance_under_autocorrelation() -> None:
    # Fifty pure-noise trials, AR(1) with coefficient 0.4: luck spreads their Sharpe ratios
    # wider than Lo's i.i.d. variance of one Sharpe, (1 + SR^2 / 2) / T. A hurdle capped there
    # is too low, and the best of the noise passes; the paper's variance is the trials' own.
    rng = np.random.default_rng(5)
    shocks = rng.normal(0.0, 0.01, (600, 50))
    x = np.zeros_like(shocks)
    for t in range(1, len(x)):
        x[t] = 0.4 * x[t - 1] + shocks[t]
    x = x[100:]
    srs = trial_sharpes(x)
    assert np.var(srs, ddof=1) > 1.5 * (1 + 0.5 * np.mean(srs**2)) / len(x)
    best = x[:, int(np.argmax(srs))]
    out = session_dsr(best, list(x.T))
    assert out.sr_variance == pytest.approx(np.var(srs, ddof=1), rel=1e-12)
    assert out.hurdle == pytest.approx(expected_max_sharpe(50, np.var(srs, ddof=1)), rel=1e-12)
    assert out.dsr < 0.95


def test_session_dsr_takes_the_variance_of_sharpes_on_the_candidates_days() -> None:
    # Racing: four trials ran every fold (2,000 days), six only the latest (500). The hurdle of
    # a 2,000-day Sharpe takes the variance of the four 2,000-day Sharpes, not of ten 500-day
    # ones (which luck spreads twice as wide); N counts all ten, N effective their common days.
    rng = np.random.default_rng(8)
    full = [rng.normal(0.0005, 0.01, 2000) for _ in range(4)]
    raced = [rng.normal(0.0, 0.01, 500) for _ in range(6)]
    out = session_dsr(full[0], [*full, *raced])
    srs = trial_sharpes(np.column_stack(full))
    assert out.n_trials == 10 and out.sr_variance == pytest.approx(np.var(srs, ddof=1))
    common = np.column_stack([*(f[-500:] for f in full), *raced])
    assert out.n_effective == pytest.approx(effective_trials(common))
    # Without two trials of the candidate's length, the days all share.
    alone = session_dsr(full[0], [full[0], *raced])
    shared = np.column_stack([full[0][-500:], *raced])
    assert alone.sr_variance == pytest.approx(np.var(trial_sharpes(shared), ddof=1))
