"""``--data`` files through the CLI: unusable data is refused with exit 2 and the loader's
message, ``--date-format`` reaches the loader from ``trial``, ``train`` and ``research``, and the
windows a run used are printed."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.exceptions import InvalidRequest
from alphaloop.journal import Journal
from alphaloop.market import load_market, market_of, synthetic_prices
from alphaloop.settings import get_settings

DAY_FIRST = "%d/%m/%Y"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> Path:
    clean_env.setenv("ALPHALOOP_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def ambiguous_csv(tmp_path: Path) -> Path:
    """Six years of prices, day first, keeping only days 1-12: every date also reads month
    first, so the file is usable only with ``--date-format``."""
    prices = synthetic_prices(n_days=1500, n_assets=3, seed=5)
    prices = prices[prices.index.day <= 12]
    path = tmp_path / "prices.csv"
    prices.to_csv(path, date_format=DAY_FIRST)
    return path


def run_cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def one_line(text: str) -> str:
    """Rich wraps long error lines at the terminal width; the message is what matters."""
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("command", [["trial"], ["train"], ["research", "max Sharpe"]])
def test_ambiguous_dates_are_exit_2_with_the_fix(command: list[str], ambiguous_csv: Path) -> None:
    result = run_cli(*command, "--data", str(ambiguous_csv))
    assert result.exit_code == 2, result.output
    message = one_line(result.output)
    assert "ambiguous dates such as '04/01/2010' (row 2)" in message
    assert "--date-format '%d/%m/%Y' (day first) or '%m/%d/%Y' (month first)" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("date,A00,A01\n", "no data rows (columns: date, A00, A01)"),
        ("", "is empty; a price CSV needs a header row"),
        ("date\n2020-01-02\n", "no price columns, only dates"),
    ],
)
def test_unusable_files_are_exit_2(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    result = run_cli("trial", "--data", str(path))
    assert result.exit_code == 2, result.output
    assert expected in one_line(result.output)


def test_trial_with_date_format_prints_its_windows(ambiguous_csv: Path) -> None:
    args = ["trial", "--data", str(ambiguous_csv), "--date-format", DAY_FIRST]
    args += ["--set", "n_scenarios=1000"]
    expected = load_market(ambiguous_csv, date_format=DAY_FIRST).describe()
    result = run_cli(*args, "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["data"] == json.loads(json.dumps(expected))
    assert [out["start_date"], out["end_date"]] == list(expected["validation"])
    human = run_cli(*args)
    assert human.exit_code == 0, human.output
    train, val, test = (expected[k] for k in ("train", "validation", "test"))
    line = f"train {train[0]}..{train[1]}, validation {val[0]}..{val[1]}, test {test[0]}..{test[1]}"
    assert line in one_line(human.output)


def test_train_passes_the_date_format(ambiguous_csv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from alphaloop.meta_agent import manual

    seen: list[Any] = []

    def fake_train(spec: Any, *args: Any, **kwargs: Any) -> None:
        seen.append(spec)
        raise InvalidRequest("stopped before training")

    monkeypatch.setattr(manual, "train_manual", fake_train)
    result = run_cli("train", "--data", str(ambiguous_csv), "--date-format", DAY_FIRST)
    assert result.exit_code == 2 and "stopped before training" in result.output
    assert seen[0].date_format == DAY_FIRST
    assert (
        market_of(seen[0]).describe()
        == load_market(ambiguous_csv, date_format=DAY_FIRST).describe()
    )


def test_research_stores_the_date_format_and_reviews_the_windows(
    ambiguous_csv: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from alphaloop.meta_agent import session as session_module

    # The session itself is not run: what matters is what it stores and what review prints.
    monkeypatch.setattr(session_module, "run_session", lambda *args, **kwargs: None)
    args = ["research", "max Sharpe", "--data", str(ambiguous_csv), "--date-format", DAY_FIRST]
    result = run_cli(*args, "--proposer", "tpe")
    assert result.exit_code == 0, result.output
    expected = load_market(ambiguous_csv, date_format=DAY_FIRST).describe()
    with Journal(get_settings().journal_path) as journal:
        (session,) = journal.sessions.list()
    # What resume loads: the stored spec, date format included.
    spec, windows = session.spec, session.settings.data
    assert spec is not None and spec.date_format == DAY_FIRST
    assert market_of(spec).fingerprint == session.data_fingerprint
    assert windows is not None
    assert (windows.train, windows.validation, windows.test) == (
        expected["train"],
        expected["validation"],
        expected["test"],
    )
    val = expected["validation"]
    assert f"validation {val[0]}..{val[1]}" in one_line(result.output)
