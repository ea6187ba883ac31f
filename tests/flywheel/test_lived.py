"""Only decisions people lived train the model: no verdict on a deployment check's decision,
one decision per (book, day), and a hold day charges no turnover."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from alphaloop.exceptions import InvalidRequest
from alphaloop.journal import Journal
from alphaloop.ops import prefs
from alphaloop.settings import Settings

from .helpers import add_decision

DATES = pd.bdate_range("2024-01-01", periods=8)
PRE = {"A": 0.5, "B": 0.5}


@pytest.fixture
def price_file(tmp_path: Path) -> Path:
    path = tmp_path / "prices.csv"
    frame = {"date": DATES.strftime("%Y-%m-%d"), "A": [100, 100, 101, 102, 99, 105, 110, 111],
             "B": [50, 50, 49, 48, 47, 46, 45, 44]}  # fmt: skip
    pd.DataFrame(frame).to_csv(path, index=False)
    return path


def test_a_verdict_on_a_deployment_check_is_refused(settings: Settings) -> None:
    with Journal(settings.journal_path) as journal:
        journal.books.create("check-1", "paper", 1000.0, purpose="check")
        did = add_decision(
            journal, date="2024-01-03", symbols=["A", "B"], pre=PRE, target={"A": 1.0},
            book="check-1",
        )  # fmt: skip
    with pytest.raises(InvalidRequest, match="deployment check 'check-1'"):
        prefs.decide(settings, did, "approve")
    with Journal(settings.journal_path) as journal:
        assert journal.preferences.decision_view(did).verdict is None


def test_one_decision_per_book_and_day_makes_a_pair(settings: Settings, price_file: Path) -> None:
    with Journal(settings.journal_path) as journal:
        first = add_decision(journal, date="2024-01-03", symbols=["A", "B"], pre=PRE,
                             target={"A": 0.8, "B": 0.1})  # fmt: skip
        again = add_decision(journal, date="2024-01-03", symbols=["A", "B"], pre=PRE,
                             target={"A": 0.1, "B": 0.8})  # fmt: skip
        with journal._write() as conn:  # a journal from before ticks were once per day
            conn.execute("UPDATE decisions SET verdict = 'reject' WHERE id IN (?, ?)",
                         (first, again))  # fmt: skip
    result = prefs.extract_preferences(settings, data=str(price_file))
    assert result.added["pm"] == 1
    with Journal(settings.journal_path) as journal:
        (pair,) = journal.preferences.list(source="pm")
    assert pair.origin["decision_id"] == first


def test_a_hold_day_charges_no_turnover(settings: Settings, price_file: Path) -> None:
    # Weights that drifted from what the pipeline last set, and no orders: a hold day.
    drifted = {"A": 0.6, "B": 0.4}
    with Journal(settings.journal_path) as journal:
        did = add_decision(journal, date="2024-01-03", symbols=["A", "B"], pre=PRE, target=drifted)
        with journal._write() as conn:
            conn.execute("UPDATE decisions SET orders = '[]' WHERE id = ?", (did,))
    prefs.decide(settings, did, "reject")
    prefs.extract_preferences(settings, data=str(price_file))
    with Journal(settings.journal_path) as journal:
        (pair,) = journal.preferences.list(source="pm")
    # Growth 2 Jan -> 9 Jan: A 1.10, B 0.90; no cost although the weights differ by 0.2.
    assert pair.origin["proposed_return"] == pytest.approx(0.6 * 0.10 + 0.4 * -0.10)
