"""The tear sheet of a real session: its TEST series are the journal's, 1/N's and the books'
turnover replayed to the journaled metrics, each figure's numbers recomputed here with pandas;
the HTML loads nothing from the network and shows the journal's text escaped; in Chromium it
draws every figure without asking the network for anything (its screenshot is kept)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from alphaloop.charts.tearsheet import FIGURES, TearSheet
from alphaloop.charts.tearsheet_html import tearsheet_html
from alphaloop.exceptions import InvalidRequest
from alphaloop.metrics import TRADING_DAYS, annual_turnover, compute_metrics
from alphaloop.ops.tearsheet import Tearsheet, build_tearsheet, write_tearsheet
from tests.charts.conftest import Lab
from tests.charts.offline import draw_offline
from tests.server.helpers import CHROMIUM


@pytest.fixture(scope="module")
def drawn(lab: Lab) -> Tearsheet:
    return build_tearsheet(lab.settings, lab.research_id)


def _xy(drawn: Tearsheet, figure: str, name: str) -> tuple[list, np.ndarray]:
    [trace] = [t for t in drawn.figures[figure].data if t.name == name]
    return list(trace.x), np.asarray(trace.y, dtype=float)


def test_the_lines_are_the_journal_s_test_rows(lab: Lab, drawn: Tearsheet) -> None:
    sheet = drawn.sheet
    with lab.journal() as j:
        session = j.sessions.get(lab.research_id)
        tests = {t.parent_id: t for t in j.trials.of_session(session.id, kind="test")}
    final = session.final
    pick, *rest = sheet.lines
    assert pick.role == "pick" and pick.returns == tests[session.best_trial_id].val_returns
    assert pick.metrics == tests[session.best_trial_id].metrics
    default = next((line for line in rest if line.role == "default"), None)
    if session.best_trial_id != final.baseline_trial_id:
        assert default is not None
        assert default.returns == tests[final.baseline_trial_id].val_returns
    equal = sheet.lines[-1]
    assert equal.role == "equal_weight" and len(equal.returns) == len(sheet.dates)
    # 1/N's replayed returns give every metric finalize journaled for it on TEST.
    replayed = compute_metrics(np.asarray(equal.returns), np.zeros(len(equal.returns)))
    for key in ("sharpe", "max_drawdown", "hit_rate", "total_return"):
        assert getattr(replayed, key) == pytest.approx(equal.metrics[key], rel=1e-9)
    # The replayed books trade what the evaluator charged them for on TEST.
    for line in sheet.lines[:-1]:
        assert annual_turnover(line.turnover) == pytest.approx(
            line.metrics["annual_turnover"], rel=1e-9
        )
    assert sheet.gates == final.gates and sheet.gates is not None
    assert sheet.search.n_trials == final.n_trials and sheet.search.pick == final.pick
    assert sheet.search.pick_reason == final.pick_reason
    assert list(drawn.figures) == list(FIGURES)


def test_each_figure_is_its_series_recomputed(drawn: Tearsheet) -> None:
    sheet = drawn.sheet
    for line in sheet.lines:
        r = pd.Series(line.returns, index=pd.to_datetime(sheet.dates))
        equity = pd.concat([pd.Series([1.0]), (1 + r).cumprod().reset_index(drop=True)])
        _, drawdown = _xy(drawn, "drawdown", line.label)
        assert drawdown == pytest.approx((equity / equity.cummax() - 1).to_numpy(), abs=1e-12)
        months, bars = _xy(drawn, "monthly_returns", line.label)
        oracle = (1 + r).groupby(r.index.to_period("M")).prod() - 1
        assert months == [str(p) for p in oracle.index]
        assert bars == pytest.approx(oracle.to_numpy(), abs=1e-12)
        days = int(
            re.search(r"Rolling (\d+)-day", drawn.figures["rolling_sharpe"].layout.title.text)[1]
        )
        x, sharpes = _xy(drawn, "rolling_sharpe", line.label)
        roll = r.rolling(days)
        expected = (roll.mean() / roll.std(ddof=1) * np.sqrt(TRADING_DAYS)).dropna()
        assert x == sheet.dates[days - 1 :]
        assert sharpes == pytest.approx(expected.to_numpy(), rel=1e-9)
        if line.turnover is not None:
            _, cumulative = _xy(drawn, "turnover", line.label)
            assert cumulative[-1] == pytest.approx(sum(line.turnover), rel=1e-12)
    equity_names = [t.name for t in drawn.figures["equity"].data]
    assert len(equity_names) == len(sheet.lines)
    # What a page draws: the same figures, as JSON.
    page = json.loads(json.dumps(drawn.as_json()))
    assert page["sheet"]["dates"] == sheet.dates
    assert page["figures"]["drawdown"]["data"][0]["name"] == sheet.lines[0].label


def test_a_manual_run_has_no_tear_sheet(lab: Lab) -> None:
    with pytest.raises(InvalidRequest, match="never evaluated on TEST"):
        build_tearsheet(lab.settings, lab.manual.session.id)
    with lab.journal() as j:
        [policy] = [p for p in j.policies.list() if p.session_id == lab.manual.session.id]
    with pytest.raises(InvalidRequest, match="never evaluated on TEST"):
        build_tearsheet(lab.settings, policy_id=policy.id)


def test_the_html_loads_nothing_from_the_network(drawn: Tearsheet) -> None:
    sheet: TearSheet = drawn.sheet.model_copy(
        update={"notes": ["<script src='https://evil.example/x.js'></script> & more"]}
    )
    html = tearsheet_html(sheet, drawn.figures)
    tags = re.findall(r"<(?:script|link|img|iframe)\b[^>]*>", html, flags=re.IGNORECASE)
    assert tags and not [t for t in tags if re.search(r"(src|href)\s*=", t, re.IGNORECASE)]
    assert "&lt;script src=&#x27;https://evil.example/x.js&#x27;&gt;" in html
    assert html.count("<script>") == 1 + len(drawn.figures)  # plotly.js once, a figure each


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no system chromium on PATH")
def test_chromium_draws_the_sheet_offline(lab: Lab, drawn: Tearsheet, tmp_path: Path) -> None:
    [path] = write_tearsheet(drawn, lab.settings, out=tmp_path / "sheet.html").paths
    seen = draw_offline(path, len(drawn.figures), tmp_path / "tearsheet.png")
    assert not seen.errors, seen.errors
    assert seen.asked == [path.as_uri()]  # the file itself, and nothing else
    assert seen.shot.stat().st_size > 50_000
