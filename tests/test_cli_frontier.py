"""``alphaloop frontier`` end to end on the embedded S&P 500 set, and its bad input refused
with exit code 2."""

from __future__ import annotations

import io
import itertools
import json
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from alphaloop import ops
from alphaloop.cli import app
from alphaloop.cli import frontier as frontier_cli
from alphaloop.market import load_market
from tests.test_cli_tables import assert_readable_at_80


def run_cli(*args: str) -> Any:
    return CliRunner().invoke(app, ["frontier", *args])


def test_json_is_one_document_of_ordered_certified_points() -> None:
    result = run_cli("--assets", "6", "--points", "5", "--scenarios", "2000", "--json")
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)
    assert run["symbols"] == list(load_market("sp500").symbols[:6])
    assert run["scenarios"] == 2000 and run["alpha"] == 0.95 and run["max_weight"] == 0.25
    points = run["points"]
    assert len(points) == 5
    for before, after in itertools.pairwise(points):
        assert after["expected_return"] >= before["expected_return"] - 1e-12
        assert after["cvar"] >= before["cvar"] - 1e-10
    for p in points:
        assert p["status"] == "optimal"
        assert abs(sum(p["weights"].values()) - 1.0) < 1e-12
        assert max(p["weights"].values()) <= 0.25
        assert p["certificate_gap"] <= 1e-6


def test_the_same_seed_gives_the_same_frontier() -> None:
    args = ("--assets", "5", "--points", "3", "--scenarios", "1000", "--json")
    first, second = run_cli(*args), run_cli(*args)
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    assert [p["cvar"] for p in a["points"]] == [p["cvar"] for p in b["points"]]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--points", "1"], "--points"),
        (["--assets", "30"], "--assets: Input should be less than or equal to 20"),
        (["--assets", "1"], "--assets"),
        (["--assets", "4"], "greater than or equal to 5"),  # equal weights only: no frontier
        (["--scenarios", "10"], "--scenarios"),
        (["--seed", "-1"], "--seed"),
    ],
)
def test_bad_input_exits_2_naming_the_flag(args: list[str], says: str) -> None:
    result = run_cli(*args, "--json")
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert result.stdout == ""  # nothing for a JSON reader to mistake for an answer


def test_table_is_readable_at_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    run = ops.frontier.trace_frontier(
        ops.frontier.FrontierRequest(assets=20, points=4, scenarios=1000)
    )

    def draw(width: int) -> str:
        console = Console(width=width, file=io.StringIO(), color_system=None)
        monkeypatch.setattr(frontier_cli, "console", console)
        frontier_cli._print_frontier(run)
        return console.file.getvalue()  # type: ignore[attr-defined]

    assert_readable_at_80(draw)
    assert "certificate" in draw(80)
