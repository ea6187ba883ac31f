"""The page's walk views in the system Chromium, by their address, at 1440 and 390 px: the walks
list, a finished walk (its verdict with the edge its record could detect, its equity and
drawdowns against the default and 1/N on dates, the pick of each epoch as a timeline, each
rule's record, the epochs) and an interrupted one (its resume button). Each is screenshotted
into the artifacts folder and checked as every view is (nothing cut off or overflowing, no
console error, no long number, no missing value). The figures read back from the page are the
journal's record; a walk started from the page's form runs as a job and its view draws it."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from alphaloop.journal import Journal
from alphaloop.settings import Settings
from alphaloop.walk_spec import DEFAULT_RULE
from tests.walk.helpers import tiny_walk

from .helpers import ARGS, CHROMIUM, live_server, open_page
from .test_page_views import WIDTHS, _artifacts, visit

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="no system chromium on PATH"),
]
CHARTS = ("#walk-equity", "#walk-picks", "#walk-sharpe")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, dict[str, str]]:
    """A finished tiny walk, and a walk whose process is gone (it reads as interrupted)."""
    settings, walk_id = tiny_walk(tmp_path_factory.mktemp("walk-views") / "home")
    gone = subprocess.Popen(["true"])
    gone.wait()
    with Journal(settings.journal_path) as j:
        spec = j.walks.get(walk_id).spec
        cut = j.walks.create(goal="maximise Sharpe, cut short", spec=spec)
        j.walks.update(cut, owner_pid=gone.pid)
    return settings, {"finished": walk_id, "interrupted": cut}


@pytest.fixture(scope="module")
def browser(home: tuple[Settings, dict[str, str]]) -> Iterator[tuple[str, Any]]:
    from playwright.sync_api import sync_playwright

    settings, _ = home
    with live_server(settings) as base, sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield base, b
        b.close()


def _views(ids: dict[str, str]) -> list[tuple[str, str, list[str]]]:
    return [
        ("walks", "#/walks", ["#walks-table tbody tr"]),
        ("walk", f"#/walk/{ids['finished']}",
         [f"{c} .main-svg" for c in CHARTS] + ["#walk-records tbody tr", "#walk-epochs tbody tr"]),
        ("walk-interrupted", f"#/walk/{ids['interrupted']}", ["#walk-begun", "#walk-resume"]),
    ]  # fmt: skip


@pytest.mark.parametrize("width", WIDTHS)
def test_every_walk_view_by_its_address(home, browser, width: int, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    _, ids = home
    base, b = browser
    shots = _artifacts(tmp_path)
    page, errors = open_page(b, width)
    problems = {}
    try:
        for name, address, ready in _views(ids):
            shot = shots / f"{name}-{width}.png"
            found = visit(page, base, address, ready, shot, dated=name == "walk")
            if found:
                problems[name] = found
        expect(page.locator("#walk-resume")).to_be_visible()
        expect(page.locator("#walk-status")).to_have_text("interrupted")
    finally:
        page.close()
    assert not problems, problems
    assert not errors, errors


def test_the_walk_view_draws_the_journal_s_record(home, browser) -> None:
    from playwright.sync_api import expect

    settings, ids = home
    base, b = browser
    with Journal(settings.journal_path) as j:
        report = j.walks.get(ids["finished"]).report
        results = [e.result for e in j.walks.epochs(ids["finished"])]
    own = report.record()
    page, errors = open_page(b, 1440)
    try:
        page.goto(f"{base}/#/walk/{ids['finished']}")
        for chart in CHARTS:
            expect(page.locator(f"{chart} .main-svg").first).to_be_attached(timeout=60_000)
        expect(page.locator("#walk-verdict")).to_have_text(report.verdict)
        kpis = dict(zip(page.locator("#walk-kpis dt").all_inner_texts(),
                        page.locator("#walk-kpis dd").all_inner_texts(), strict=True))  # fmt: skip
        traces = "(t) => ({name: t.name, type: t.type, x: t.x, y: t.y, base: t.base})"
        equity = page.evaluate(f"document.querySelector('#walk-equity').data.map({traces})")
        picks = page.evaluate(f"document.querySelector('#walk-picks').data.map({traces})")
        traded = page.locator("#walk-epochs tbody tr td:nth-child(3)").all_inner_texts()
    finally:
        page.close()
    assert not errors, errors
    assert kpis["VERDICT"] == ("GO" if report.go else "NO-GO")
    assert kpis["OUT OF SAMPLE"] == f"{report.n_days:,} days"
    assert float(kpis["DETECTABLE EDGE OVER 1/N"]) == pytest.approx(
        own.detectable["equal_weight"], rel=0.05
    )
    # the record, in date order, growth of 1: the epochs' returns end to end
    pick = np.concatenate([r.picks[report.rule].returns for r in results])
    [line] = [t for t in equity if t["name"] == f"the walk ({report.rule} rule)"]
    assert line["x"] == sorted(line["x"]) and line["x"][1:] == [d for r in results for d in r.dates]
    assert line["y"][0] == 1.0 and line["y"][-1] == pytest.approx(np.prod(1 + pick), rel=1e-9)
    # the timeline's rows are the names the epochs table gives what each epoch traded
    bars = [t for t in picks if t["type"] == "bar"]
    rows = {s: y for t in bars for s, y in zip(t["base"], t["y"], strict=True)}
    assert [rows[e.start] for e in report.epochs] == [t.split(" (")[0] for t in traded]
    [marks] = [t for t in picks if t["name"] == "the pick changed"]
    assert len(marks["y"]) == own.n_changes


def test_a_walk_started_from_the_page_runs_and_is_drawn(settings: Settings, browser) -> None:
    from playwright.sync_api import expect

    _, b = browser  # the module's chromium, on a server of an empty home of its own
    with live_server(settings) as base:
        page, errors = open_page(b, 1440)
        try:
            page.goto(f"{base}/#/walks")
            expect(page.locator("#walks-table")).to_contain_text("no walk yet")
            page.locator("#new-walk summary").click()
            form = page.locator("#walk-form")
            expect(form.locator("[name=rule] option").first).to_have_text(
                f"default ({DEFAULT_RULE.value})"
            )
            form.locator("[name=data]").fill("synthetic")
            form.locator("[name=budget]").fill("2")
            form.locator("[name=start]").fill("2010-06-01")  # before the folds fit
            form.locator("#walk-start").click()
            expect(page.locator("#toast")).to_contain_text(
                "the earliest yearly start is 2012-01-02", timeout=60_000
            )
            assert httpx.get(f"{base}/api/jobs").json()["items"] == []  # refused: no job
            form.locator("[name=start]").fill("2014-01-01")
            form.locator("#walk-start").click()
            page.wait_for_url("**/#/walk/w-*", timeout=90_000)
            walk_id = page.url.rsplit("/", 1)[1]
            expect(page.locator("#walk-equity .main-svg").first).to_be_attached(timeout=300_000)
            expect(page.locator("#walk-status")).to_have_text("finished")
        finally:
            page.close()
    assert not [e for e in errors if "422" not in e], errors  # the refused start's console line
    with Journal(settings.journal_path) as j:
        walk = j.walks.get(walk_id)
        [job] = j.jobs.list("walk")
    assert walk.status == "finished" and job.result["walk_id"] == walk_id
    assert walk.spec.session.data == "synthetic" and str(walk.spec.start) == "2014-01-01"
    assert walk.spec.rule == DEFAULT_RULE  # the form's "default" leaves the rule to the server
