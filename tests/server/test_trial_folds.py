"""A trial's walk-forward folds in its detail: through the API (window, objective, metrics,
the number of days, never the daily returns) and in the page's trial panel in Chromium."""

from __future__ import annotations

import httpx
import pytest

from alphaloop.journal import Journal

from .helpers import CHROMIUM, live_server, page_at
from .test_dashboard import home as dashboard_home  # noqa: F401 (a fixture)

WINDOWS = (("2019-01-02", "2019-12-31"), ("2020-01-02", "2020-12-31"), ("2021-01-04", "2021-12-31"))


@pytest.fixture
def folded(dashboard_home):  # noqa: F811
    settings, ids = dashboard_home
    with Journal(settings.journal_path) as j:
        for i, (start, end) in enumerate(WINDOWS):
            j.folds.add(
                int(ids["trial"]), fold=i, n_folds=len(WINDOWS), start_date=start, end_date=end,
                objective=0.5 + i, metrics={"sharpe": 0.5 + i, "max_drawdown": 0.1 * (i + 1)},
                result={}, returns=[0.001] * (250 + i), elapsed_s=0.2,
            )  # fmt: skip
    return settings, ids


def test_the_trial_detail_lists_its_folds(folded) -> None:
    settings, ids = folded
    sid, trial = ids["nogo"], ids["trial"]
    with Journal(settings.journal_path) as j:
        other = next(t for t in j.trials.of_session(sid) if str(t.id) != trial)
    with live_server(settings) as base:
        full = httpx.get(f"{base}/api/sessions/{sid}/trials/{trial}").json()
        unfolded = httpx.get(f"{base}/api/sessions/{sid}/trials/{other.id}").json()
    folds = full["folds"]
    assert [(f["start_date"], f["end_date"]) for f in folds] == list(WINDOWS)
    assert [f["fold"] for f in folds] == [0, 1, 2] and {f["n_folds"] for f in folds} == {3}
    assert [f["objective"] for f in folds] == [0.5, 1.5, 2.5]
    assert [f["metrics"]["sharpe"] for f in folds] == [0.5, 1.5, 2.5]
    assert [f["n_days"] for f in folds] == [250, 251, 252]
    assert all("returns" not in f for f in folds)
    assert unfolded["folds"] == []


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no system chromium on PATH")
def test_the_trial_panel_shows_its_folds(folded) -> None:
    from playwright.sync_api import expect

    settings, ids = folded
    sid = ids["nogo"]
    with Journal(settings.journal_path) as j:
        trials = j.trials.of_session(sid)
    idx = next(t.idx for t in trials if str(t.id) == ids["trial"])
    bare = next(t.idx for t in trials if str(t.id) != ids["trial"])
    view = f"#/session/{sid}/trial/{idx}"
    with live_server(settings) as base, page_at(base, view=view) as (page, errors):
        rows = page.locator("#trial-folds tbody tr")
        expect(rows).to_have_count(3)
        expect(page.locator("#trial-folds-note")).to_have_text("scored on 3 walk-forward folds")
        expect(rows.nth(1)).to_contain_text("2020-01-02 \u2192 2020-12-31")
        expect(rows.nth(2).locator("td").nth(4)).to_have_text("2.500")
        page.goto(f"{base}/#/session/{sid}/trial/{bare}")  # a trial without folds
        note = page.locator("#trial-folds-note")
        expect(note).to_have_text("no folds: scored on VALIDATION alone")
        expect(page.locator("#trial-folds")).to_be_hidden()
    assert not errors, errors
