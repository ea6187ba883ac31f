"""``alphaloop report`` end to end on a finished session: the tear sheet of the session and of
the policy it published, as one HTML file or as PNGs rendered by kaleido; bad input exits 2
before anything is written."""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from alphaloop.charts import png_size
from alphaloop.cli import app
from alphaloop.journal import Journal
from tests.server.helpers import new_session


def run_cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def session(in_finished_session: str) -> str:
    return in_finished_session


def _title(path: Path) -> str:
    found = re.search(r"<title>(.*?)</title>", path.read_text(encoding="utf-8"))
    assert found is not None
    return found[1]


def test_a_session_and_its_policy_get_a_tear_sheet(session: str, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = run_cli("report", session, "--out", str(out), "--json")
    assert result.exit_code == 0, result.output
    done = json.loads(result.stdout)
    assert done["session_id"] == session and done["paths"] == [str(out)]
    assert done["figures"][:4] == ["equity", "drawdown", "monthly_returns", "rolling_sharpe"]
    assert _title(out) == f"Tear sheet: session {session}"
    html = out.read_text(encoding="utf-8")
    assert "the test that decided it" in html
    assert done["gates_summary"].split(":")[0] in html  # the verdict heads the sheet
    policy = run_cli("report", "--policy", "1", "--out", str(tmp_path / "p.html"), "--json")
    assert policy.exit_code == 0, policy.output
    assert json.loads(policy.stdout)["policy_id"] == 1
    assert _title(tmp_path / "p.html").startswith("Tear sheet: policy #1 ")


def test_bad_input_exits_2_and_writes_nothing(session: str, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    cases = {
        "one of the two": ["report"],
        "one of the two ": ["report", session, "--policy", "1"],
        "no session 's-nope'": ["report", "s-nope", "--out", str(out)],
        "no policy 99": ["report", "--policy", "99", "--out", str(out)],
        "does not end in .html": ["report", session, "--out", str(tmp_path / "r.png")],
        "does not exist": ["report", session, "--out", str(tmp_path / "missing" / "r.html")],
        "unknown format": ["report", session, "--format", "pdf"],
    }
    for said, args in cases.items():
        result = run_cli(*args)
        assert result.exit_code == 2, (args, result.output)
        assert said.strip() in result.stderr, (args, result.stderr)
    assert list(tmp_path.iterdir()) == []


def test_a_session_still_running_has_no_sheet_yet(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    clean_env.setenv("ALPHALOOP_HOME", str(home))
    with Journal(home / "journal.db") as j:
        running = new_session(j)
    result = run_cli("report", running)
    assert result.exit_code == 2
    assert "no TEST evaluation yet; a tear sheet needs a finished session" in result.stderr


@pytest.mark.slow
def test_png_renders_each_figure_through_kaleido(session: str, tmp_path: Path) -> None:
    result = run_cli("report", session, "--format", "png", "--out", str(tmp_path / "r.png"))
    assert result.exit_code == 0, result.output
    written = sorted(tmp_path.iterdir())
    assert [p.name for p in written] == sorted(
        f"r-{name}.png"
        for name in ("equity", "drawdown", "monthly_returns", "rolling_sharpe", "turnover",
                     "weights")
    )  # fmt: skip
    assert {png_size(p.read_bytes()) for p in written} == {(1100, 620)}


def test_a_result_outside_the_limits_says_so(tmp_path: Path) -> None:
    """A session whose every trial breaks its drawdown limit: the sheet leads with the
    review's words ("NOT WITHIN THE LIMITS: ...") and the drawdown chart draws the limit."""
    research = run_cli("research", "maximise Sharpe", "--mode", "cufolio_only", "--data",
                       "synthetic", "--proposer", "random", "--seed", "2", "--budget", "2",
                       "--max-drawdown", "0.001", "--json")  # fmt: skip
    assert research.exit_code == 0, research.output
    sid = json.loads(research.stdout)["session"]["id"]
    from alphaloop.ops.tearsheet import build_tearsheet
    from alphaloop.settings import get_settings

    with Journal(get_settings().journal_path) as j:
        final = j.sessions.get(sid).final
    assert final is not None and final.admissible is False  # the case this test is for
    out = tmp_path / "r.html"
    assert run_cli("report", sid, "--out", str(out)).exit_code == 0
    html = out.read_text(encoding="utf-8")
    assert f"NOT WITHIN THE LIMITS: {escape(final.admissible_reason or '')}" in html
    sheet = build_tearsheet(get_settings(), sid)
    assert sheet.sheet.outside_limits == final.admissible_reason
    drawdown = sheet.figures["drawdown"].to_dict()["layout"]
    assert [s["y0"] for s in drawdown["shapes"]] == [-0.001]
    assert "outside the limits" in drawdown["title"]["text"]
