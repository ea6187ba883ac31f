"""The page in a real browser (the system Chromium) against ``alphaloop serve`` in a subprocess:
a session started from the page opens its view, whose chart gains points; it is stopped, a
policy activated through its form, a decision decided, a job run now. A screenshot is kept as
a test artifact."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import httpx
import pytest

from alphaloop.journal import Journal
from alphaloop.settings import Settings

from .helpers import CHROMIUM, add_trials, new_session, page_at, serve_subprocess

try:
    from tests.flywheel.helpers import add_decision
except ImportError:  # plain ``pytest``
    from flywheel.helpers import add_decision  # type: ignore[no-redef]


def _seed(settings: Settings) -> tuple[int, int]:
    """A finished session with a library entry and an undecided decision."""
    with Journal(settings.journal_path) as j:
        sid = new_session(j, budget=3)
        add_trials(j, sid, 3)
        j.sessions.update(sid, status="finished", owner_pid=None)
        trial = j.trials.of_session(sid)[0]
        policy = j.policies.add(
            kind="mean_cvar", source="session", session_id=sid, trial_id=trial.id,
            mode="cufolio_only", config=trial.config, config_hash=trial.config_hash or "h",
            seed=0, symbols=["A", "B"], data_spec={"data": "synthetic"}, trial_budget={},
            objective={"metric": "sharpe"}, val_objective=0.5,
        )  # fmt: skip
        decision = add_decision(j, date="2024-01-02", symbols=["A", "B"], pre=None,
                                target={"A": 0.5, "B": 0.5})  # fmt: skip
    return policy.id, decision


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no system chromium on PATH (Playwright's own "
                    "browser download cannot be used here)")  # fmt: skip
def test_the_page_drives_the_loop(settings: Settings, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    policy_id, decision_id = _seed(settings)
    with serve_subprocess(settings.home) as base, page_at(base, 2400) as (page, errors):
        # the views, linked from the header
        expect(page.locator("#sessions-table tbody tr")).to_have_count(1, timeout=30_000)
        links = page.eval_on_selector_all("#nav a", "els => els.map(e => e.getAttribute('href'))")
        assert links[:6] == ["#/sessions", "#/walks", "#/compare", "#/deploy", "#/feedback",
                             "#/schedule"]  # fmt: skip

        # a short session: the chart gains points as trials finish, then it is stopped
        page.click("#new-session summary")
        page.fill("#research-form input[name=goal]", "maximise Sharpe")
        page.fill("#research-form input[name=budget]", "2000")  # it cannot end before the stop
        page.fill("#research-form input[name=data]", "synthetic")
        # a double click: the button is disabled while the start is in flight, shows its
        # progress, and the start carries an idempotency key; one session starts, and the
        # page opens its view
        page.dblclick("#research-start")
        expect(page.locator("#research-start")).to_be_disabled()
        expect(page.locator("#research-progress")).to_contain_text("starting a worker")
        expect(page).to_have_url(re.compile(r"#/session/s-"), timeout=90_000)
        chart = page.locator("#research-chart")
        page.wait_for_function(
            "() => Number(document.querySelector('#research-chart')?.dataset.points) > 0",
            timeout=90_000,
        )
        first = int(chart.get_attribute("data-points") or 0)
        page.wait_for_function(
            f"() => Number(document.querySelector('#research-chart')?.dataset.points) > {first}",
            timeout=90_000,
        )
        page.click("#research-stop")
        expect(page.locator("#pulse")).to_contain_text(
            re.compile("stopping|stopped|finished"), timeout=60_000
        )

        # Analyze: 4-6 bullets signed by the embedded reader
        page.click("button.analyze")
        read = page.locator("#research-chart-read")
        expect(read.locator(".sig")).to_contain_text("embedded reader", timeout=30_000)
        assert 4 <= read.locator("li").count() <= 6

        # a baseline seed earns no verdict: it shows "ran", not "keep"
        page.click("nav.tabs a[data-tab=trials]")
        baseline = page.locator("#trials-table tbody tr", has_text="baseline").first
        expect(baseline.locator("td").nth(2)).to_have_text("ran")

        # the policy library: activate (a policy without a GO asks for the reason of the
        # override in a form, and it is journaled)
        page.click("#nav a[data-view=deploy]")
        page.click(f"button.activate[data-id='{policy_id}']", timeout=15_000)
        form = page.locator(f"#activate-{policy_id}")
        form.locator("textarea").fill("a page test: paper book only")
        form.locator("input[name=confirm]").check()
        form.locator("button.confirm-activate").click()
        expect(page.locator("#policies-table tr.active")).to_have_count(1, timeout=15_000)

        # a decision: approve
        page.click("#nav a[data-view=feedback]")
        page.click(f"button.verdict-approve[data-id='{decision_id}']", timeout=15_000)
        expect(page.locator("#decisions-table tbody tr", has_text="awaits")).to_have_count(
            1, timeout=15_000
        )

        # the scheduler: run now, then its last run shows up
        page.click("#nav a[data-view=schedule]")
        page.click("button.run-now[data-job=retrain]", timeout=15_000)
        expect(page.locator("#jobs-table tr[data-job=retrain]")).not_to_contain_text(
            "never", timeout=60_000
        )
        # a job that ends at once shows its outcome and why, in words, not the journaled JSON
        page.click("button.run-now[data-job=dpo_check]", timeout=15_000)
        expect(page.locator("#jobs-table tr[data-job=dpo_check]")).to_contain_text(
            "skipped: 0 new labelled pair(s)", timeout=60_000
        )
        shot = tmp_path / "page.png"
        page.screenshot(path=str(shot), full_page=True)
        if os.environ.get("ALPHALOOP_TEST_ARTIFACTS"):
            target = Path(os.environ["ALPHALOOP_TEST_ARTIFACTS"])
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy(shot, target / "page.png")
        assert not errors, errors
        assert httpx.get(base + "/api/policies/active").json()["policy"]["id"] == policy_id
        # the seeded session and the one the double click started, and the scheduler's
        # retrain of the latter when it had finished by the time the retrain ran
        items = httpx.get(base + "/api/sessions").json()["items"]
        retrains = [s for s in items if s["goal"].startswith("weekly retrain of ")]
        assert len(items) - len(retrains) == 2 and len(retrains) <= 1
    with Journal(settings.journal_path) as j:
        assert j.preferences.decision_view(decision_id).verdict == "approve"
        assert [r.trigger for r in j.schedule.runs(job="retrain")] == ["manual"]
