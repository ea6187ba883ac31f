"""TEST looks across sessions: the other distinct picks judged on the same TEST days of the
same data, read from a real journal, and the pick's TEST test Holm-adjusted over them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from alphaloop.evidence import ExcessEvidence
from alphaloop.journal import FinalReport, Journal
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.meta_agent.test_looks import other_looks, pick_key
from alphaloop.metrics import compute_metrics
from alphaloop.validation import Gates, evaluate_gates, excess_evidence, sharpe_difference
from alphaloop.validation.corrections import holm_adjusted
from alphaloop.validation.report import looks_note
from tests.journal.journal_helpers import new_session, new_trial

WINDOW = ("2020-01-02", "2022-12-30")


def _looked(
    journal: Journal, lookback: int, p: float, *, fingerprint: str = "fp-123",
    window: tuple[str, str] | None = WINDOW,
) -> str:  # fmt: skip
    """A finished session on ``fingerprint`` whose pick (``lookback``) scored ``p`` against
    both references on TEST."""
    sid = new_session(journal, data_fingerprint=fingerprint)
    config = TrialConfig(lookback=lookback)
    trial = new_trial(journal, sid, config=config.model_dump(), config_hash=config_hash(config))
    journal.trials.finish(trial.id, status="keep", objective=1.0)
    rng = np.random.default_rng(lookback)
    test = sharpe_difference(rng.normal(0.001, 0.01, 100), rng.normal(0, 0.01, 100), method="hac")
    evidence = {
        ref: ExcessEvidence(reference=ref, test=test.model_copy(update={"p_value": p}))
        for ref in ("default", "equal_weight")
    }
    final = FinalReport(
        stop_reason="finished", n_trials=1, best_trial_id=trial.id, excess=evidence,
        test_window=window,
    )  # fmt: skip
    journal.sessions.update(sid, status="finished", final=final.journaled())
    return sid


def test_other_distinct_picks_on_the_same_test_days_are_the_looks(tmp_path: Path) -> None:
    with Journal(tmp_path / "journal.db") as journal:
        ours = _looked(journal, 30, 0.03)
        _looked(journal, 40, 0.20)
        _looked(journal, 40, 0.10)  # the same pick again: one look, at its smaller p-value
        _looked(journal, 50, 0.50, fingerprint="other data")  # other data: no look
        _looked(journal, 60, 0.01, window=("2019-01-02", "2021-12-31"))  # other TEST days
        _looked(journal, 55, 0.40, window=None)  # journaled before windows were: counted
        key = pick_key("cufolio_only", TrialConfig(lookback=30).model_dump(),
                       config_hash(TrialConfig(lookback=30)))  # fmt: skip
        fresh = ("cufolio_only", "a config no session picked")
        looks = other_looks(journal, "s-new", "fp-123", WINDOW, fresh)
        assert {k: sorted(v) for k, v in looks.items()} == {
            "default": [0.03, 0.10, 0.40], "equal_weight": [0.03, 0.10, 0.40],
        }  # fmt: skip
        # The session itself, or the same pick made again, is not another look.
        assert sorted(other_looks(journal, ours, "fp-123", WINDOW, key)["default"]) == [0.1, 0.4]
        assert sorted(other_looks(journal, "s-new", "fp-123", WINDOW, key)["default"]) == [
            0.1, 0.4,
        ]  # fmt: skip
        assert other_looks(journal, "s-new", None, WINDOW, key) == {}


def test_a_test_that_passes_alone_fails_when_other_picks_looked_at_the_same_days() -> None:
    rng = np.random.default_rng(3)
    market = rng.normal(0.0004, 0.01, 756)
    pick = market + rng.normal(0.0002, 0.003, 756)
    alone = excess_evidence("default", pick, market)
    assert 0.005 < alone.test.p_value < 0.05 and alone.looks == 1 and alone.p_adjusted is None
    others = [0.01, 0.2, 0.5]
    looked = excess_evidence("default", pick, market, others)
    assert looked.looks == 4
    assert looked.p_adjusted == pytest.approx(holm_adjusted([alone.test.p_value, *others])[0])
    assert looked.p_adjusted > 0.05 and looked.test == alone.test
    gates = Gates(min_sharpe=None, max_drawdown=None, min_hit_rate=None,
                  min_profit_factor=None, min_deflated_sharpe=None)  # fmt: skip
    # (the metric gates off: only the TEST tests judge)
    m = compute_metrics(pick, np.zeros(756))
    go = evaluate_gates(m, None, None, gates, {"default": alone, "equal_weight": alone})
    no_go = evaluate_gates(m, None, None, gates, {"default": looked, "equal_weight": alone})
    assert go.passed and not no_go.passed
    assert "Holm-adjusted over 4 looks at TEST" in no_go.failed[0].reason
    assert looks_note({"default": looked}) == (
        "TEST days of this data looked at by 4 distinct picks: p-values Holm-adjusted over them"
    )
    assert looks_note({"default": alone}) == "the first look at these TEST days of this data"


def test_holm_adjusted_p_values_by_hand() -> None:
    # Sorted 0.01, 0.03, 0.2, 0.5: times 4, 3, 2, 1 -> 0.04, 0.09, 0.4, 0.5, never decreasing.
    assert holm_adjusted([0.03, 0.5, 0.01, 0.2]) == pytest.approx([0.09, 0.5, 0.04, 0.4])
    assert holm_adjusted([0.4, 0.3]) == pytest.approx([0.6, 0.6])
