"""The dashboard in the system Chromium over a seeded journal: pick a session from the list, page,
sort and filter its trials (by the server; the address keeps the table's state over a reload),
export them as CSV, choose columns, open one trial (config, prompt), keep notes, draw the search
plots, read the preference counts as text, override a policy of a session that does not beat
1/N with a reason in a form, and halt and resume the book."""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
from pathlib import Path

import httpx
import pytest

from alphaloop.journal import Journal

from .helpers import CHROMIUM, live_server, page_at

try:
    from tests.flywheel.helpers import add_decision
except ImportError:  # plain ``pytest``
    from flywheel.helpers import add_decision  # type: ignore[no-redef]
from .test_dashboard import N
from .test_dashboard import home as dashboard_home  # noqa: F401 (a fixture)


@pytest.fixture
def seeded(dashboard_home):  # noqa: F811
    settings, ids = dashboard_home
    with Journal(settings.journal_path) as j:
        trial = j.trials.of_session(ids["nogo"])[0]
        policy = j.policies.add(
            kind="mean_cvar", source="session", session_id=ids["nogo"], trial_id=trial.id,
            mode="cufolio_only", config=trial.config, config_hash=trial.config_hash or "h",
            seed=0, symbols=["A", "B"], data_spec={"data": "synthetic"}, trial_budget={},
            objective={"metric": "sharpe"}, val_objective=0.5, gates_passed=True,
        )  # fmt: skip
        for day, (w, equity) in enumerate([(0.2, 100.0), (0.5, 101.5), (0.7, 99.8)], start=2):
            d = add_decision(j, date=f"2024-01-0{day}", symbols=["A", "B"], pre=None,
                             target={"A": w, "B": 1 - w})  # fmt: skip
            with j._write() as conn:
                conn.execute("UPDATE decisions SET equity_before = ? WHERE id = ?", (equity, d))
    return settings, {**ids, "policy": str(policy.id)}


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no system chromium on PATH")
def test_the_dashboard_panels(seeded, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    settings, ids = seeded
    with (
        live_server(settings) as base,
        page_at(base, 2000, accept_downloads=True) as (page, errors),
    ):
        rows = page.locator("#sessions-table tbody tr")
        expect(rows).to_have_count(3)
        expect(page.locator(f"#sessions-table tr[data-id='{ids['stopped']}']")).to_contain_text(
            "stopped"
        )
        nogo = page.locator(f"#sessions-table tr[data-id='{ids['nogo']}']")
        expect(nogo).to_contain_text("-0.20 Sharpe (p 0.90)")
        # "best" is the session's pick (the default here), as in its own view's figures
        expect(nogo).to_contain_text("0.5000 (default)")
        nogo.locator("a").first.click()
        expect(page).to_have_url(f"{base}/#/session/{ids['nogo']}")
        expect(page.locator("#pulse")).to_contain_text("0.5000 (default)")
        page.click("nav.tabs a[data-tab=trials]")
        table = page.locator("#trials-table tbody tr")
        expect(table).to_have_count(50)
        expect(page.locator("#trials-range")).to_have_text(f"1\u201350 of {N + 1}")
        page.click("#trials-next")
        expect(table).to_have_count(N + 1 - 50)
        # sorted by the server: objective, highest first; the address keeps it (a reload too)
        page.click("#trials-table th[data-key=objective]")
        page.click("#trials-table th[data-key=objective]")
        expect(page.locator("#trials-range")).to_have_text(f"1\u201350 of {N + 1}")
        expect(table.first.locator("td").nth(3)).to_have_text("1.000")
        assert "sort=objective" in page.url and "order=desc" in page.url
        page.reload()
        expect(table.first.locator("td").nth(3)).to_have_text("1.000")
        expect(page.locator("#trials-table th[aria-sort=descending]")).to_contain_text("objective")
        # filtered: kept trials only
        page.select_option("#trials-filter select[name=status]", "keep")
        page.click("#trials-apply")
        kept = sum(1 for i in range(N) if i % 3 == 0)
        expect(page.locator("#trials-range")).to_have_text(f"1\u2013{kept} of {kept}")
        with page.expect_download() as download:
            page.click("#trials-csv")
        text = Path(download.value.path()).read_text()
        exported = list(csv.DictReader(io.StringIO(text)))
        assert len(exported) == kept and {r["status"] for r in exported} == {"keep"}
        # a column chooser: a knob's column added, kept in the address
        page.click("#column-chooser summary")
        page.check("#column-chooser input[name=lookback]")
        expect(page.locator("#trials-table thead")).to_contain_text("lookback")
        assert "lookback" in page.url
        # one trial in full, by its address
        table.first.click()
        expect(page).to_have_url(re.compile(r"#/session/.+/trial/\d+$"))
        expect(page.locator("#trial-prompt")).to_contain_text("the exact prompt")
        expect(page.locator("#trial-config tbody tr")).to_have_count(16)
        # a note on the trial, and on the session; an edit made meanwhile elsewhere is not
        # overwritten: the page is told (409) and reloads the note with its edit below it
        expect(page.locator("#trial-note-version")).to_have_text("no note yet")
        page.fill("#trial-note", "lookback 35 looks like a fluke")
        page.click("#trial-note-save")
        expect(page.locator("#trial-note-version")).to_have_text("saved as version 1")
        page.goto(f"{base}/#/session/{ids['nogo']}/notes")
        expect(page.locator("#session-note-version")).to_have_text("no note yet")
        page.fill("#session-note", "first thoughts")
        page.click("#session-note-save")
        expect(page.locator("#session-note-version")).to_have_text("saved as version 1")
        url = f"{base}/api/sessions/{ids['nogo']}/notes"
        elsewhere = httpx.put(url, json={"text": "edited elsewhere", "base_version": 1},
                              headers={"X-Alphaloop": "1"})  # fmt: skip
        assert elsewhere.status_code == 200
        page.fill("#session-note", "my second thoughts")
        page.click("#session-note-save")
        expect(page.locator("#session-note-version")).to_contain_text("edited meanwhile")
        assert page.locator("#session-note").input_value().startswith("edited elsewhere")
        assert "my second thoughts" in page.locator("#session-note").input_value()
        assert httpx.get(url).json()["version"] == 2
        # the search plots of the session, drawn when the tab opens
        page.goto(f"{base}/#/session/{ids['nogo']}/plots")
        # the first importance imports optuna and scikit-learn in the server: seconds
        expect(page.locator("#plots-status")).to_contain_text(
            "most important: lookback", timeout=60_000
        )
        assert int(page.locator("#parallel-chart").get_attribute("data-points") or 0) == N * 2 // 3
        # the feedback view: preference counts as words, not dictionaries
        page.goto(f"{base}/#/feedback")
        expect(page.locator("#pref-stats")).to_contain_text("preference pairs")
        assert "{" not in page.locator("#pref-stats").inner_text()
        # the policy of the NO-GO session: an override, with a reason and a confirmation
        page.goto(f"{base}/#/deploy")
        policy = page.locator("#policies-table tbody tr").first
        expect(policy).to_contain_text("NO-GO")
        expect(policy).to_contain_text("-0.20 Sharpe")
        expect(policy.locator("button.activate")).to_have_text("activate anyway\u2026")
        policy.locator("button.activate").click()
        form = page.locator(f"#activate-{ids['policy']}")
        form.locator("button.confirm-activate").click()  # no reason: refused on the page
        assert form.locator("textarea:invalid").count() == 1
        form.locator("textarea").fill("a page test: paper book only")
        form.locator("button.confirm-activate").click()  # not confirmed: refused on the page
        assert form.locator("input[name=confirm]:invalid").count() == 1
        form.locator("button.cancel").click()  # (test_page activates one through this form)
        expect(form).to_have_count(0)
        assert httpx.get(f"{base}/api/policies/active").json()["policy"] is None
        # the portfolio manager: equity and weights over time; halt and resume with a reason
        page.wait_for_function(
            "() => Number(document.querySelector('#book-weights')?.dataset.points) === 6",
            timeout=20_000,
        )
        page.click("#book-halt")  # no reason: refused on the page
        assert page.locator("#book-why:invalid").count() == 1
        page.fill("#book-why", "earnings week")
        page.click("#book-halt")
        expect(page.locator("#book-status")).to_contain_text("HALTED: earnings week")
        page.fill("#book-why", "earnings are out")
        page.click("#book-resume")
        expect(page.locator("#book-status")).not_to_contain_text("HALTED", timeout=10_000)
        expect(page.locator("#events-table tbody")).to_contain_text("earnings are out")
        shot = tmp_path / "dashboard.png"
        page.screenshot(path=str(shot), full_page=True)
    assert not errors, errors
    if os.environ.get("ALPHALOOP_TEST_ARTIFACTS"):
        target = Path(os.environ["ALPHALOOP_TEST_ARTIFACTS"])
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, target / "dashboard.png")
