"""The validation report in the system Chromium: a real short session, validated by the command
line, then read on the page (gates with their reasons, PBO, the configs against the default at 10%
FDR and under Holm in the command line's words, walk-forward, stress) next to the pick against
1/N and the default, as the journal holds them."""

from __future__ import annotations

import json

import httpx
import pytest
from typer.testing import CliRunner

from alphaloop import ops
from alphaloop.cli import app
from alphaloop.cli.views import multiplicity_lines
from alphaloop.settings import Settings

from .helpers import ARGS, CHROMIUM, live_server

SESSION = ["research", "maximise Sharpe", "--mode", "cufolio_only", "--data", "synthetic",
           "--noise-seeds", "2", "--proposer", "random", "--seed", "3", "--budget", "6",
           "--json"]  # fmt: skip


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no system chromium on PATH")
def test_the_validation_report_on_the_page(settings: Settings) -> None:
    from playwright.sync_api import expect, sync_playwright

    run = CliRunner().invoke(app, SESSION)
    assert run.exit_code == 0, run.output
    sid = json.loads(run.stdout)["session"]["id"]
    checked = CliRunner().invoke(app, ["validate", sid, "--json"])
    assert checked.exit_code == 0, checked.output
    found = ops.validate.latest_validation(settings, sid)
    assert found is not None
    report = found.journaled()
    with live_server(settings) as base, sync_playwright() as pw:
        answer = httpx.get(f"{base}/api/sessions/{sid}/validation").json()
        assert answer["report"]["gates"] == report["gates"]
        results = {g["gate"]: g["passed"] for g in report["gates"]["results"]}
        # The one-line verdict names the gates that decided it and ends with the tally.
        headline = answer["headline"]
        assert headline.startswith("GO: " if report["gates"]["passed"] else "NO-GO: ")
        assert headline.endswith(f"; {sum(results.values())} of {len(results)} gates passed")
        assert all(f"{g} failed" in headline for g, passed in results.items() if not passed)
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 2000})
        page.goto(f"{base}/#/session/{sid}/validation")
        summary = page.locator("#validation-summary")
        expect(summary).to_contain_text("PBO", timeout=15_000)
        assert report["pbo"]["interval"] is not None  # its digits: JS and Python round apart
        expect(summary).to_contain_text("(95% ")
        # PBO as a percentage, like every fraction on the page
        expect(summary).to_contain_text(f"PBO {100 * report['pbo']['pbo']:.0f}%")
        expect(summary).to_contain_text(f"\u00d7 {report['pbo']['n_days']} days")
        expect(summary).to_contain_text(answer["headline"])
        gates = page.locator("#validation-gates tbody tr")
        expect(gates).to_have_count(len(report["gates"]["results"]))
        first = report["gates"]["results"][0]
        expect(gates.first).to_contain_text(first["gate"])
        expect(gates.first).to_contain_text(first["reason"][:40])
        expect(summary).to_contain_text(
            f"unseen data (no search scored it): {report['unseen_start']} on, "
            f"{report['unseen_days']} days"
        )
        stress = page.locator("#validation-stress tbody tr")
        expect(stress).to_have_count(len(report["stress"]["cases"]))
        for i, case in enumerate(report["stress"]["cases"]):
            where = "unseen" if case["start"] >= report["unseen_start"] else "in sample"
            expect(stress.nth(i).locator("td").nth(2)).to_have_text(where)
        # the multiple-testing results as `alphaloop validate` prints them (BH, Holm, RAS)
        said = page.locator("#validation-multiplicity")
        for line in multiplicity_lines(found):
            expect(said).to_contain_text(line.strip())
        m = report["multiplicity"]
        assert m is not None and m["configs"]  # the case this session was built for
        rows = page.locator("#validation-configs tbody tr")
        expect(rows).to_have_count(len(m["configs"]))
        for i, c in enumerate(m["configs"]):
            cells = rows.nth(i).locator("td")
            expect(cells.nth(0)).to_have_text(f"#{c['trial']}")
            expect(cells.nth(4)).to_have_text("beats" if c["fdr"] else "no")
            expect(cells.nth(5)).to_have_text("beats" if c["holm"] else "no")
        wf = (report.get("walk_forward") or {}).get("summaries", [])
        expect(page.locator("#validation-wf tbody tr")).to_have_count(len(wf))
        expect(page.locator("#validation-compare")).to_contain_text("1/N (equal weight)")
        browser.close()
