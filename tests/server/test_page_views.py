"""Every view of the page in the system Chromium, by its address, at 1440 and 390 px, over one
home populated through the command line (two real short sessions, a validation, an activation
and three paper ticks) and served once. Each view is screenshotted (the artifacts folder) and
fails on an element cut off or overflowing its panel, a button out of reach, a chart's title,
legend or axis title cut or under its toolbar, a table's key column out of view (on a phone a
wide table keeps its first column in place; the sides of a comparison are all in view), a
console error, a number printed with more than 6 significant digits, a missing value printed
as "null", "undefined" or "NaN", or a time chart without dates. The portfolio manager's equity
and P&L on the page are `pm status`'s."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.ops import dashboard
from alphaloop.settings import Settings, get_settings

from .helpers import ARGS, CHROMIUM, live_server, open_page

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="no system chromium on PATH"),
]
WIDTHS = (1440, 390)
SESSION = ["research", "maximise Sharpe", "--mode", "cufolio_only", "--data", "synthetic",
           "--proposer", "tpe", "--seed", "3", "--json"]  # fmt: skip


def _cli(*args: str) -> Any:
    run = CliRunner().invoke(app, list(args))
    assert run.exit_code == 0, run.output
    return json.loads(run.stdout) if "--json" in args else run.output


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, dict[str, Any]]]:
    """Two finished sessions (the first validated), its policy active, three paper ticks."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ALPHALOOP_HOME", str(tmp_path_factory.mktemp("views") / "home"))
        settings = get_settings()
        first = _cli(*SESSION, "--budget", "8")["session"]["id"]
        second = _cli(*SESSION[:-1], "--budget", "3", "--seed", "4", "--json")["session"]["id"]
        _cli("validate", first, "--json")
        policy = next(p for p in _cli("policies", "list", "--json")["policies"]
                      if p["session_id"] == first)  # fmt: skip
        _cli("policies", "activate", str(policy["id"]), "--force", "--reason", "a page test")
        for day in dashboard.calendar(settings, first).test[-3:]:
            _cli("pm", "tick", "--date", day, "--json")
        status = _cli("pm", "status", "--json")
        yield settings, {"first": first, "second": second, "status": status}


@pytest.fixture(scope="module")
def browser(home: tuple[Settings, dict[str, Any]]) -> Iterator[tuple[str, Any]]:
    from playwright.sync_api import sync_playwright

    settings, _ = home
    with live_server(settings) as base, sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield base, b
        b.close()


# What each view shows once it has drawn: (view, address, selectors that must be there).
def _views(ids: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    s, t = ids["first"], ids["second"]
    return [
        ("sessions", "#/sessions", ["#sessions-table tbody tr"]),
        ("session", f"#/session/{s}", ["#pulse", "#research-chart .main-svg"]),
        ("trials", f"#/session/{s}/trials", ["#trials-table tbody tr", "#test-table tbody tr"]),
        (
            "plots",
            f"#/session/{s}/plots",
            [
                "#parallel-chart .main-svg",
                "#contour-chart .main-svg",
                "#edf-chart .main-svg",
                "#timeline-chart .main-svg",
                "#intermediate-chart .main-svg",
                "#slice-charts .main-svg",
                "#importance-chart .main-svg",
                "#feasibility-chart .main-svg",
            ],
        ),
        ("validation", f"#/session/{s}/validation", ["#validation-gates tbody tr"]),
        ("notes", f"#/session/{s}/notes", ["#session-note-version:not(:empty)"]),
        ("trial", f"#/session/{s}/trial/4", ["#trial-equity .main-svg", "#trial-config tbody tr"]),
        (
            "compare",
            f"#/compare/{s}/{t}",
            ["#compare-table tbody tr", "#compare-history .main-svg"],
        ),
        ("compare-trials", f"#/compare/{s}:3/{t}:3", ["#compare-equity .main-svg"]),
        (
            "report",
            f"#/report/session/{s}",
            ["#report-metrics tbody tr", "#report-equity .main-svg", "#report-gates"],
        ),
        (
            "deploy",
            "#/deploy",
            ["#book-equity .main-svg", "#policies-table tbody tr", "#positions-table tbody tr"],
        ),
        ("feedback", "#/feedback", ["#decisions-table tbody tr"]),
        ("schedule", "#/schedule", ["#jobs-table tbody tr"]),
        ("lab", "#/lab", ["#ratio-chart .main-svg", "#train-form"]),
        ("knobs", "#/knobs", ["#knobs-table tbody tr"]),
        ("docs", "docs", ["section.route table"]),
    ]


# Evaluated in each view (see the file): what sticks out, what is out of reach, long numbers.
def _script(name: str) -> str:
    lines = (Path(__file__).parent / name).read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if not line.startswith("//"))


CHECKS = _script("page_checks.js")
# what a user came for in reach: charts' titles, legends and axes; tables' key columns
REACH = _script("page_reach.js")


# Charts over time whose x axis is not a date axis.
TIME_CHARTS = (
    "#trial-equity, #compare-equity, #book-equity, #book-weights, #timeline-chart, "
    "#walk-equity, #walk-picks"
)
UNDATED = f"""() => [...document.querySelectorAll('{TIME_CHARTS}')]
  .filter((d) => d.layout && d.layout.xaxis.type !== 'date').map((d) => d.id)"""


def _artifacts(tmp: Path) -> Path:
    target = Path(os.environ.get("ALPHALOOP_TEST_ARTIFACTS") or tmp) / "views"
    target.mkdir(parents=True, exist_ok=True)
    return target


def visit(
    page: Any, base: str, address: str, ready: list[str], shot: Path, dated: bool
) -> dict[str, list[str]]:
    """Opens the view at ``address``, waits for each of ``ready``, screenshots it to ``shot``
    and returns what the checks found there (with ``dated``, time charts without dates too),
    six of each at most."""
    from playwright.sync_api import expect

    page.goto(f"{base}/{address}")
    for selector in ready:
        expect(page.locator(selector).first).to_be_attached(timeout=60_000)
    page.wait_for_timeout(300)  # a poll's redraw settles
    page.screenshot(path=str(shot), full_page=True)
    found = page.evaluate(CHECKS) | page.evaluate(REACH)
    if dated:
        found["undated"] = page.evaluate(UNDATED)
    return {k: v[:6] for k, v in found.items() if v}


@pytest.mark.parametrize("width", WIDTHS)
def test_every_view_by_its_address(home, browser, width: int, tmp_path: Path) -> None:
    _, ids = home
    base, b = browser
    shots = _artifacts(tmp_path)
    page, errors = open_page(b, width)
    problems = {}
    dated = ("trial", "compare-trials", "deploy", "plots")  # their time axes are dates
    try:
        for name, address, ready in _views(ids):
            shot = shots / f"{name}-{width}.png"
            found = visit(page, base, address, ready, shot, dated=name in dated)
            if found:
                problems[name] = found
    finally:
        page.close()
    assert not problems, problems
    assert not errors, errors


def test_the_book_shows_pm_status(home, browser) -> None:
    """The equity and P&L on the page are `alphaloop pm status`'s, and the equity chart ends
    on that equity at the close it is marked at."""
    from playwright.sync_api import expect

    _, ids = home
    base, b = browser
    st = ids["status"]
    page = b.new_page(viewport={"width": 1440, "height": 900})
    try:
        page.goto(f"{base}/#/deploy")
        equity = page.locator("#book-status .kpi.equity dd")
        expect(equity).to_have_text(f"{st['equity']:,.0f}", timeout=30_000)
        pct = 100 * st["pnl"] / st["book"]["initial_cash"]
        expect(page.locator("#book-status .kpi.pnl dd")).to_have_text(
            f"{st['pnl']:+,.0f} ({pct:+.2f}%)"
        )
        expect(page.locator("#book-status")).to_contain_text(st["marked_at"])
        page.wait_for_function("() => document.querySelector('#book-equity')?.dataset.last")
        assert float(page.locator("#book-equity").get_attribute("data-last")) == st["equity"]
    finally:
        page.close()
