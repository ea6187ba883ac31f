"""A walk's tear sheet over a real walk: its series are the days the verdict was tested on, read
from the journal; each figure's numbers recomputed here with pandas; the HTML loads nothing from
the network and Chromium draws it offline; ``alphaloop report WALK_ID`` writes it and refuses
what it cannot draw."""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from alphaloop.charts.walk import WALK_FIGURES, config_names, traded_name
from alphaloop.charts.walk_html import walk_html
from alphaloop.cli import app
from alphaloop.exceptions import InvalidRequest
from alphaloop.journal import Journal, WalkRecord
from alphaloop.ops.tearsheet import write_tearsheet
from alphaloop.ops.walk_sheet import WalkTearsheet, build_walk_sheet
from alphaloop.settings import Settings
from alphaloop.validation import sharpe_difference
from tests.charts.offline import draw_offline
from tests.server.helpers import CHROMIUM
from tests.walk.helpers import tiny_walk


@pytest.fixture(scope="module")
def walked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, str]:
    return tiny_walk(tmp_path_factory.mktemp("walk-sheet") / "home")


@pytest.fixture(scope="module")
def drawn(walked: tuple[Settings, str]) -> WalkTearsheet:
    return build_walk_sheet(*walked)


def _walk(settings: Settings, walk_id: str) -> tuple[WalkRecord, list]:
    with Journal(settings.journal_path) as j:
        return j.walks.get(walk_id), j.walks.epochs(walk_id)


def test_the_sheet_is_the_record_its_verdict_was_tested_on(walked, drawn) -> None:
    settings, walk_id = walked
    walk, epochs = _walk(settings, walk_id)
    report, sheet = walk.report, drawn.sheet
    assert report is not None and sheet.report == report
    rule = report.rule
    results = [e.result for e in epochs]
    # every period's days, in order, each once: what each epoch journaled when it traded
    assert sheet.dates == [d for r in results for d in r.dates]
    assert sheet.dates == sorted(set(sheet.dates)) and len(sheet.dates) == report.n_days
    assert sheet.pick == [x for r in results for x in r.picks[rule].returns]
    assert sheet.default == [x for r in results for x in r.default]
    assert sheet.equal_weight == [x for r in results for x in r.equal_weight]
    # the equity starts at the close before the first day: the last of epoch 0's VALIDATION
    with Journal(settings.journal_path) as j:
        first = j.sessions.get(epochs[0].session_id).spec
    assert sheet.start_date == first.val_end < sheet.dates[0]
    own = report.record()
    assert sharpe_difference(sheet.pick, sheet.equal_weight).p_value == pytest.approx(
        own.excess["equal_weight"].test.p_value, rel=1e-12
    )


def _trace(fig, name: str):
    [found] = [t for t in fig.data if t.name == name]
    return found


def test_equity_and_drawdowns_are_growth_of_one_on_dates(drawn) -> None:
    sheet, fig = drawn.sheet, drawn.figures["equity"]
    assert list(drawn.figures) == list(WALK_FIGURES)
    assert {fig.layout.xaxis.type, fig.layout.xaxis2.type} == {"date"}
    for name, returns in (
        (f"the walk ({sheet.report.rule} rule)", sheet.pick),
        ("default config", sheet.default),
        ("1/N (equal weight)", sheet.equal_weight),
    ):
        growth = pd.concat([pd.Series([1.0]), (1 + pd.Series(returns)).cumprod()])
        equity, below = _trace(fig, name), _trace(fig, f"{name} drawdown")
        assert list(equity.x) == [sheet.start_date, *sheet.dates] == list(below.x)
        np.testing.assert_allclose(equity.y, growth.to_numpy(), rtol=1e-12)
        np.testing.assert_allclose(below.y, (growth / growth.cummax() - 1).to_numpy(), atol=1e-12)
        assert equity.y[0] == 1.0


def test_the_picks_are_a_timeline_of_what_each_epoch_traded(drawn) -> None:
    report, fig = drawn.sheet.report, drawn.figures["picks"]
    assert fig.layout.xaxis.type == "date"
    bars = [t for t in fig.data if t.type == "bar"]
    starts = [s for t in bars for s in t.base]
    assert sorted(starts) == [e.start for e in report.epochs]
    names = config_names(report.epochs)
    for bar in bars:
        for start, label in zip(bar.base, bar.y, strict=True):
            [line] = [e for e in report.epochs if e.start == start]
            assert label == traded_name(line, names)
            # a config's row holds every epoch that traded that config, and only those
            assert (label == "default config") == (line.trial_id is None)
    [marks] = [t for t in fig.data if t.name == "the pick changed"]
    assert list(marks.x) == [e.start for e in report.epochs if e.changed]
    assert report.record().n_changes == len(marks.x) > 0
    sharpe = drawn.figures["epoch_sharpe"]
    assert list(_trace(sharpe, "the walk").y) == [e.sharpe_pick for e in report.epochs]


def test_the_html_loads_nothing_from_the_network(drawn) -> None:
    goal = "<script src='https://evil.example/x.js'></script>"
    sheet = drawn.sheet.model_copy(update={"goal": goal})
    html = walk_html(sheet, drawn.figures)
    tags = re.findall(r"<(?:script|link|img|iframe)\b[^>]*>", html, flags=re.IGNORECASE)
    assert tags and not [t for t in tags if re.search(r"(src|href)\s*=", t, re.IGNORECASE)]
    assert "&lt;script src=&#x27;https://evil.example/x.js&#x27;&gt;" in html
    assert html.count("<script>") == 1 + len(drawn.figures)
    report = sheet.report
    cls = "go" if report.go else "nogo"
    assert f"<div class='verdict {cls}' id=verdict>{escape(report.verdict)}</div>" in html
    edge = report.record().detectable["equal_weight"]
    assert f"<td class=num>{edge:+.2f}</td>" in html  # the minimum detectable edge over 1/N
    assert html.count("<tr>") >= len(report.epochs) + len(report.records)


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no system chromium on PATH")
def test_chromium_draws_the_walk_sheet_offline(walked, drawn, tmp_path: Path) -> None:
    [path] = write_tearsheet(drawn, walked[0], out=tmp_path / "walk.html").paths
    seen = draw_offline(path, len(drawn.figures), tmp_path / "walk-tearsheet.png")
    assert not seen.errors, seen.errors
    assert seen.asked == [path.as_uri()]  # the file itself, and nothing else
    assert not seen.wide  # wide tables scroll in their box
    assert seen.shot.stat().st_size > 50_000


def _cli(settings: Settings, *args: str):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ALPHALOOP_HOME", str(settings.home))
        return CliRunner().invoke(app, list(args))


def test_report_writes_the_walk_s_sheet_and_refuses_what_it_cannot_draw(
    walked, tmp_path: Path
) -> None:
    settings, walk_id = walked
    out = tmp_path / "walk.html"
    done = _cli(settings, "report", walk_id, "--out", str(out), "--json")
    assert done.exit_code == 0, done.output
    answer = json.loads(done.stdout)
    walk, _ = _walk(settings, walk_id)
    assert answer == {
        "walk_id": walk_id,
        "format": "html",
        "paths": [str(out)],
        "figures": list(WALK_FIGURES),
        "go": walk.report.go,
        "verdict": walk.report.verdict,
    }
    assert f"<title>Walk {walk_id}</title>" in out.read_text(encoding="utf-8")
    with Journal(settings.journal_path) as j:  # a walk begun, owned by this living process
        running = j.walks.create(goal="g", spec=walk.spec)
    with pytest.raises(InvalidRequest, match="running: it has no report yet; wait for it"):
        build_walk_sheet(settings, running)
    cases = {
        "has no report yet": ["report", running, "--out", str(tmp_path / "r.html")],
        "no walk 'w-20000101-000000-abcd'": ["report", "w-20000101-000000-abcd"],
        "one of the two": ["report", walk_id, "--policy", "1"],
        "does not end in .html": ["report", walk_id, "--out", str(tmp_path / "r.png")],
    }
    for said, args in cases.items():
        result = _cli(settings, *args)
        assert result.exit_code == 2, (args, result.output)
        assert said in " ".join(result.stderr.split()), (args, result.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["walk.html"]
