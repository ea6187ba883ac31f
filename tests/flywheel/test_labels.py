"""T+5 labels of portfolio decisions against hand-computed returns, verdict checks, idempotent
extraction and the TRL export read back with ``datasets``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from alphaloop.exceptions import Conflict, InvalidRequest, NotFound
from alphaloop.flywheel import check_verdict, parse_weights
from alphaloop.flywheel.outcome import t5_window
from alphaloop.journal import Journal
from alphaloop.ops import prefs
from alphaloop.settings import Settings

from .helpers import add_decision

DATES = pd.bdate_range("2024-01-01", periods=8)  # Mon 1 Jan .. Wed 10 Jan
# Row 1 (2 Jan) is the close before a decision dated 3 Jan; row 6 (9 Jan) is its T+5 close.
PRICES_A = [100, 100, 101, 102, 99, 105, 110, 111]
PRICES_B = [50, 50, 49, 48, 47, 46, 45, 44]


@pytest.fixture
def price_file(tmp_path: Path) -> Path:
    path = tmp_path / "prices.csv"
    pd.DataFrame({"date": DATES.strftime("%Y-%m-%d"), "A": PRICES_A, "B": PRICES_B}).to_csv(
        path, index=False
    )
    return path


@pytest.fixture
def journal(settings: Settings) -> Journal:
    with Journal(settings.journal_path) as j:
        yield j


def _decide(
    journal: Journal,
    settings: Settings,
    verdict: str,
    target,
    weights=None,
    date="2024-01-03",
    book="main",
):
    pre = {"A": 0.5, "B": 0.5}
    did = add_decision(journal, date=date, symbols=["A", "B"], pre=pre, target=target, book=book)
    prefs.decide(settings, did, verdict, weights)
    return did


def test_window_is_the_five_days_from_the_decision() -> None:
    assert t5_window(DATES, "2024-01-03") == (1, 6)
    assert t5_window(DATES, "2024-01-06") is None  # a Saturday: day 1 is Monday 8 Jan
    assert t5_window(DATES, "2024-01-01") is None  # no close before it
    assert t5_window(DATES, "2024-01-05") is None  # needs 11 Jan


def test_t5_labels_match_hand_computed_returns(
    journal: Journal, settings: Settings, price_file: Path
) -> None:
    # Growth 2 Jan -> 9 Jan: A 110/100 = 1.10, B 45/50 = 0.90; cost 10 bps of one-way turnover.
    reject = _decide(journal, settings, "reject", {"A": 0.8, "B": 0.1})
    # One decision per (book, day): the same day's other verdicts are on other books.
    override = _decide(journal, settings, "override", {"B": 0.9}, {"A": 0.9}, book="second")
    approve_same = _decide(journal, settings, "approve", {"A": 0.5, "B": 0.5}, book="third")
    recent = _decide(journal, settings, "approve", {"A": 1.0}, date="2024-01-05")
    result = prefs.extract_preferences(settings, data=str(price_file))
    assert result.added == {"pm": 3, "research": 0}
    assert result.labelled == {"pm": 2, "research": 0}
    assert result.pending == [recent]
    rows = {p.origin["decision_id"]: p for p in journal.preferences.list(source="pm")}
    assert recent not in rows  # too recent: no pair, no label
    # reject: proposed 0.8*0.10 + 0.1*(-0.10) - 0.001*0.7 = 0.0693; alternative (pre) = 0.
    r = rows[reject]
    assert r.origin["proposed_return"] == pytest.approx(0.0693)
    assert r.origin["alternative_return"] == pytest.approx(0.0)
    assert r.margin == pytest.approx(0.0693) and r.labelled
    assert json.loads(r.chosen) == {"A": 0.8, "B": 0.1} and json.loads(r.rejected) == {
        "A": 0.5,
        "B": 0.5,
    }
    # override: proposed 0.9*(-0.10) - 0.001*0.9 = -0.0909; override 0.9*0.10 - 0.001*0.9 = 0.0891.
    o = rows[override]
    assert o.origin["chosen_side"] == "alternative"
    assert json.loads(o.chosen) == {"A": 0.9} and json.loads(o.rejected) == {"B": 0.9}
    assert o.margin == pytest.approx(0.18)
    # approve of the weights already held: no gap, kept unlabelled.
    a = rows[approve_same]
    assert a.margin == pytest.approx(0.0) and not a.labelled
    assert "Weights held before the decision" in r.prompt and "'main'" in r.prompt


def test_extraction_is_idempotent(journal: Journal, settings: Settings, price_file: Path) -> None:
    _decide(journal, settings, "reject", {"A": 0.8, "B": 0.1})
    first = prefs.extract_preferences(settings, data=str(price_file))
    second = prefs.extract_preferences(settings, data=str(price_file))
    assert first.added["pm"] == 1 and second.added == {"pm": 0, "research": 0}
    assert prefs.preference_stats(settings).total == 1


def test_gap_below_threshold_stays_unlabelled(
    journal: Journal, clean_env: pytest.MonkeyPatch, tmp_path: Path, price_file: Path
) -> None:
    clean_env.setenv("ALPHALOOP_PREF_MIN_GAP", "0.1")
    strict = Settings()
    assert strict.journal_path == journal.path
    _decide(journal, strict, "reject", {"A": 0.8, "B": 0.1})  # gap 0.0693 < 0.1
    prefs.extract_preferences(strict, data=str(price_file))
    (pair,) = journal.preferences.list()
    assert not pair.labelled and pair.margin == pytest.approx(0.0693)


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ({"A": 0.5, "C": 0.1}, "unknown symbol"),
        ({"A": -0.1}, "negative"),
        ({"A": 0.7, "B": 0.4}, "sum to 1.1"),
        ({"A": float("nan")}, "finite"),
    ],
)
def test_override_weights_are_checked(weights: dict[str, float], message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        check_verdict("override", weights, ["A", "B"])


def test_verdict_rules(journal: Journal, settings: Settings) -> None:
    assert check_verdict("override", {"A": 0.6, "B": 0.4}, ["A", "B"])[1] == {"A": 0.6, "B": 0.4}
    with pytest.raises(InvalidRequest, match="unknown verdict"):
        check_verdict("maybe", None, ["A"])
    with pytest.raises(InvalidRequest, match="needs the weights"):
        check_verdict("override", None, ["A"])
    with pytest.raises(InvalidRequest, match="go with 'override'"):
        check_verdict("approve", {"A": 1.0}, ["A"])
    with pytest.raises(InvalidRequest, match="not a number"):
        parse_weights("A=abc")
    assert parse_weights("AAPL=0.3, MSFT=0.2") == {"AAPL": 0.3, "MSFT": 0.2}
    did = add_decision(journal, date="2024-01-03", symbols=["A", "B"], pre=None, target={"A": 1})
    assert [d.id for d in prefs.review_decisions(settings)] == [did]
    prefs.decide(settings, did, "approve", note="fine")
    assert prefs.review_decisions(settings) == []
    with pytest.raises(Conflict, match="already has the verdict") as second:
        prefs.decide(settings, did, "reject")
    assert (second.value.http_status, second.value.exit_code) == (409, 2)  # a state conflict
    with pytest.raises(NotFound):
        prefs.decide(settings, 999, "approve")


def test_export_loads_with_datasets(
    journal: Journal,
    settings: Settings,
    price_file: Path,
    tmp_path: Path,
    clean_env: pytest.MonkeyPatch,
) -> None:
    _decide(journal, settings, "reject", {"A": 0.8, "B": 0.1})
    _decide(journal, settings, "approve", {"A": 0.5, "B": 0.5})  # unlabelled: not exported
    prefs.extract_preferences(settings, data=str(price_file))
    out = tmp_path / "prefs.jsonl"
    result = prefs.export_preferences(settings, out, source="pm")
    assert result.rows == 1
    assert prefs.export_preferences(settings, tmp_path / "r.jsonl", source="research").rows == 0
    clean_env.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    clean_env.setenv("HF_DATASETS_OFFLINE", "1")
    from datasets import load_dataset

    ds = load_dataset("json", data_files=str(out), split="train", cache_dir=str(tmp_path / "hf"))
    assert ds.column_names == ["prompt", "chosen", "rejected"]
    assert json.loads(ds[0]["chosen"]) == {"A": 0.8, "B": 0.1}


def test_a_decision_whose_policy_is_gone_is_skipped_not_labelled_at_another_cost(
    journal: Journal, settings: Settings, price_file: Path
) -> None:
    did = _decide(journal, settings, "reject", {"A": 0.8, "B": 0.1})
    # The library refuses a dangling policy id (a foreign key): only a damaged journal has one,
    # made here with a plain connection, which does not enforce foreign keys.
    with sqlite3.connect(settings.journal_path) as raw:
        raw.execute("UPDATE decisions SET policy_id = 42 WHERE id = ?", (did,))
    result = prefs.extract_preferences(settings, data=str(price_file))
    assert result.added["pm"] == 0 and result.pending == []
    assert "harness cost of policy 42 is unknown" in result.skipped[did]
