"""The page's numbers read as a quant reads them, in the system Chromium: the book's equity in
date order on a date axis (days, never hours) ending on the status's equity, the target weights
drawn after one tick, an override's reason beside its policy, and a session id that does not
exist named as such."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from alphaloop.journal import FinalReport, Journal
from alphaloop.knobs import BoundsClip, TrialConfig, config_hash
from alphaloop.ops import pm as ops_pm
from alphaloop.ops.policies import activate_policy
from alphaloop.settings import Settings, get_settings
from alphaloop.spec import SessionSpec

from .helpers import CHROMIUM, add_trials, live_server, new_session, page_at

try:
    from tests.pm.helpers import add_policy
except ImportError:  # plain ``pytest``
    from pm.helpers import add_policy  # type: ignore[no-redef]

SESSION = ["research", "maximise Sharpe", "--mode", "cufolio_only", "--data", "synthetic",
           "--noise-seeds", "2", "--proposer", "random", "--seed", "5", "--budget", "4",
           "--json"]  # fmt: skip
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="no system chromium on PATH"),
]


@pytest.fixture
def ticked(settings: Settings) -> Settings:
    """An override-activated policy (reason "audit") and one tick for the weekday after the
    data's last close: the book's mark (that close, after the tick's costs) is dated before the
    tick whose pre-tick equity it follows."""
    with Journal(settings.journal_path) as j:
        policy = add_policy(j, settings, "mean_cvar")
    activate_policy(settings, policy.id, force=True, reason="audit")
    ops_pm.pm_tick(settings)
    return settings


def _ticks(page, chart: str) -> list[str]:
    return page.eval_on_selector_all(f"{chart} .xtick text", "ns => ns.map(n => n.textContent)")


def test_the_books_equity_in_date_order_and_its_weights(ticked: Settings) -> None:
    from playwright.sync_api import expect

    with live_server(ticked) as base, page_at(base, 1400, "#/deploy") as (page, errors):
        status = httpx.get(f"{base}/api/pm/status").json()
        history = httpx.get(f"{base}/api/pm/history").json()
        assert status["marked_at"] < history["dates"][-1]  # the case the chart drew backwards
        page.wait_for_function(
            "() => Number(document.querySelector('#book-weights')?.dataset.points) > 0",
            timeout=30_000,
        )
        chart = page.locator("#book-equity")
        assert float(chart.get_attribute("data-last") or "nan") == pytest.approx(status["equity"])
        traces = page.evaluate(
            "() => document.querySelector('#book-equity').data.map(t => [t.name, t.x, t.y])"
        )
        for _, xs, _ in traces:  # every drawn line runs forward in time
            assert list(xs) == sorted(xs)
        # the line never joins a later day to an earlier close; the mark stands on its own
        line = traces[0]
        assert line[1] == history["dates"] and status["marked_at"] not in line[1]
        mark = next(t for t in traces if status["marked_at"] in t[1])
        assert mark[2] == [pytest.approx(status["equity"])]
        assert "after the tick of" in mark[0]
        for box in ("#book-equity", "#book-weights"):
            labels = _ticks(page, box)
            assert labels and all(":" not in t for t in labels), labels  # days, not hours
        weights = page.evaluate("() => document.querySelector('#book-weights').data")
        assert {t["name"] for t in weights} == set(history["weights"])
        assert all("markers" in t["mode"] for t in weights)  # one tick is drawn, as points
        row = page.locator("#policies-table tbody tr.active")
        expect(row).to_contain_text("activated without a GO: audit")
    assert not errors, errors


def test_a_sessions_history_its_trial_and_a_missing_session(in_finished_session: str) -> None:
    """Whole trial numbers on the history's axis; the best-so-far line drawn from the default
    (the incumbent until a trial is kept) to the last trial; a growth of 1 read as a growth
    (1.05, not 1.050); and a session id that does not exist named in the server's words."""
    from playwright.sync_api import expect

    sid, settings = in_finished_session, get_settings()
    with live_server(settings) as base, page_at(base, 1400, f"#/session/{sid}") as (page, errors):
        h = httpx.get(f"{base}/api/sessions/{sid}/history").json()
        page.wait_for_function(
            "() => !!document.querySelector('#research-chart .main-svg')", timeout=30_000
        )
        labels = _ticks(page, "#research-chart")
        assert labels and all(re.fullmatch(r"\d+", t) for t in labels), labels
        line = page.evaluate(
            "() => document.querySelector('#research-chart').data"
            ".filter(t => t.name === 'best so far').map(t => [Array.from(t.x), Array.from(t.y)])"
        )
        [(xs, ys)] = line
        want = [b if b is not None else h["baseline"] for b in h["incumbent"]]
        assert xs == h["idx"] and ys == pytest.approx(want) and None not in ys
        page.goto(f"{base}/#/session/{sid}/trial/{h['idx'][0]}")
        page.wait_for_function(
            "() => !!document.querySelector('#trial-equity .main-svg')", timeout=30_000
        )
        growth = page.eval_on_selector_all(
            "#trial-equity .ytick text", "ns => ns.map(n => n.textContent)"
        )
        assert growth and not [t for t in growth if re.search(r"\.\d*0$", t)], growth
        page.goto(f"{base}/#/session/s-20000101-000000-dead")
        said = httpx.get(f"{base}/api/pulse?session_id=s-20000101-000000-dead").json()["detail"]
        expect(page.locator("#session-missing")).to_have_text(said)
        expect(page.locator("#session-goal")).to_have_text("no such session")
    assert not errors, errors


# The session's spec: PPO, scored on 3 folds, under a 15% drawdown limit.
SPEC = SessionSpec(goal="maximise Sharpe, max drawdown under 15%", mode="ppo_only",
                   data="synthetic", folds=3)  # fmt: skip


@pytest.fixture
def limited(settings: Settings) -> tuple[Settings, str]:
    """A finished PPO session of 3 folds under a 15% drawdown limit whose result broke it (as
    finalize journals one), a trial whose learning rate was clipped to its bound, and trials
    whose n_steps spread over a log scale."""
    with Journal(settings.journal_path) as j:
        sid = new_session(j, goal="maximise Sharpe, max drawdown under 15%", mode="ppo_only",
                          objective={"metric": "sharpe", "max_drawdown": 0.15},
                          settings={"spec": SPEC.model_dump(mode="json")})  # fmt: skip
        for i, (lr, steps) in enumerate([(0.01, 64), (1e-4, 512), (3e-4, 4096)]):
            config = TrialConfig(learning_rate=lr, n_steps=steps)
            row = j.trials.start(sid, kind="search", config=config.model_dump(),
                                 config_hash=config_hash(config),
                                 delta={"changes": {"learning_rate": 0.2 if i == 0 else lr}},
                                 parent_id=None, seed=i, rationale="r", proposer="tpe")  # fmt: skip
            if i == 0:
                clip = BoundsClip(
                    knob="learning_rate",
                    proposed=0.2,
                    applied=0.01,
                    low=1e-5,
                    high=0.01,
                    reason="above its bound",
                )
                j.logs.add_clips(row.id, [clip])
            j.trials.finish(row.id, status="keep" if i == 0 else "discard",
                            objective=0.5 + i / 10, elapsed_s=0.01,
                            metrics={"sharpe": 0.9 + i / 10, "max_drawdown": 0.3},
                            violation="max drawdown 30.0% exceeds the limit 15.0%")  # fmt: skip
        first = j.trials.of_session(sid)[0]
        why = "no trial reported meets the limits (max drawdown <= 15.0%)"
        j.sessions.update(sid, status="finished", owner_pid=None, best_trial_id=first.id,
                          final=FinalReport(stop_reason="budget", n_trials=3, pick="search",
                                            best_trial_id=first.id, admissible=False,
                                            admissible_reason=why))  # fmt: skip
    return settings, sid


def test_the_objective_its_limits_and_the_knobs_as_they_ran(limited) -> None:
    """The objective named as what it is with Sharpe beside it, a result outside the limits
    said so on the session and its list row, a clipped knob shown as it ran with its clip, and
    the knobs' log scales read from the server."""
    from playwright.sync_api import expect

    settings, sid = limited
    with live_server(settings) as base, page_at(base, 1400) as (page, errors):
        row = page.locator(f"#sessions-table tr[data-id='{sid}']")
        expect(row).to_contain_text("Sharpe, fold mean \u2212 1 SE")
        expect(row.locator(".outside")).to_contain_text("max drawdown \u2264 15%")
        page.goto(f"{base}/#/session/{sid}/trials")
        expect(page.locator("#pulse")).to_contain_text("Sharpe, fold mean \u2212 1 SE")
        expect(page.locator("#pulse")).to_contain_text("NOT WITHIN THE LIMITS: no trial reported")
        expect(page.locator("#pulse [title*='Sharpe 0.9000']")).to_have_count(1)
        expect(page.locator("#trials-table thead")).to_contain_text(
            "objective: Sharpe, fold mean \u2212 1 SE"
        )
        clipped = page.locator("#trials-table tbody tr").first.locator(
            "td", has_text="learning_rate"
        )
        expect(clipped).to_have_text(
            "learning_rate=0.0100 (proposed 0.2000, clipped: above its bound)"
        )
        page.goto(f"{base}/#/session/{sid}/plots")
        page.wait_for_function(
            "() => document.querySelector('#slice-n_steps')?.layout?.xaxis?.type", timeout=60_000
        )
        axes = page.evaluate(
            "() => ['n_steps', 'learning_rate'].map(k => "
            "document.querySelector('#slice-' + k).layout.xaxis.type)"
        )
        assert axes == ["log", "log"]
        bars = page.evaluate("() => document.querySelector('#edf-chart').layout.xaxis.title.text")
        assert bars == "Sharpe, fold mean \u2212 1 SE"
    assert not errors, errors


def test_the_validation_tab_shows_finalize_and_runs_the_full_validation(
    settings: Settings,
) -> None:
    """Before any `validate`, the tab shows the PBO and deflated Sharpe finalize computed, the
    pick's Sharpe to the header's 4 digits, and runs the full validation from its button."""
    from playwright.sync_api import expect
    from typer.testing import CliRunner

    from alphaloop.cli import app

    run = CliRunner().invoke(app, SESSION)
    assert run.exit_code == 0, run.output
    sid = json.loads(run.stdout)["session"]["id"]
    with Journal(settings.journal_path) as j:
        final = j.sessions.get(sid).final
    assert final is not None and final.deflated_sharpe is not None
    with (
        live_server(settings) as base,
        page_at(base, 1400, f"#/session/{sid}/validation") as (
            page,
            errors,
        ),
    ):
        said = page.locator("#validation-finalize")
        expect(said).to_contain_text(f"deflated Sharpe {_num(final.deflated_sharpe, 3)}")
        if final.pbo is not None:
            expect(said).to_contain_text(f"PBO {100 * final.pbo:.0f}%")
        else:
            expect(said).to_contain_text(f"PBO: {final.pbo_note}")
        ew = (final.excess or {}).get("equal_weight")
        sharpe = getattr(getattr(ew, "test", None), "sharpe_a", None)
        if sharpe is not None:
            row = page.locator("#validation-compare tbody tr").first
            expect(row.locator("td").nth(1)).to_have_text(_num(sharpe))
        expect(page.locator("#validation-gates")).to_have_count(0)
        page.click("#validate-run")
        expect(page.locator("#validation-gates tbody tr").first).to_be_visible(timeout=240_000)
    assert not errors, errors


def _num(x: float, sig: int = 4) -> str:
    """``x`` as the page's num() writes it: ``sig`` significant digits, at most 4 decimals."""
    import math

    digits = 0 if x == 0 else min(4, max(0, sig - 1 - math.floor(math.log10(abs(x)))))
    return f"{x:.{digits}f}"


def test_compare_names_each_sessions_metric_on_its_own_axis(limited) -> None:
    """A Sharpe session and a Sortino one side by side: each row names its objective, and
    their histories are drawn on two axes, each titled with its metric."""
    from playwright.sync_api import expect

    settings, sharpe = limited
    with Journal(settings.journal_path) as j:
        sortino = new_session(j, goal="maximise Sortino",
                              objective={"metric": "sortino", "max_drawdown": None})  # fmt: skip
        add_trials(j, sortino, 3)
    with (
        live_server(settings) as base,
        page_at(base, 1400, f"#/compare/{sharpe}/{sortino}") as (
            page,
            errors,
        ),
    ):
        table = page.locator("#compare-table")
        expect(table).to_contain_text("Sharpe, fold mean \u2212 1 SE")
        expect(table).to_contain_text("Sortino (validation)")
        page.wait_for_function(
            "() => !!document.querySelector('#compare-history')?.dataset.axes", timeout=30_000
        )
        titles = page.evaluate(
            "() => { const l = document.querySelector('#compare-history').layout; "
            "return [l.yaxis.title.text, l.yaxis2 && l.yaxis2.title.text]; }"
        )
        assert titles == ["A: Sharpe, fold mean \u2212 1 SE", "B: Sortino (validation)"]
    assert not errors, errors


def test_a_result_outside_the_limits_on_its_tear_sheet_and_trials(settings: Settings) -> None:
    """A real session whose every trial breaks its drawdown limit: the tear sheet says so in
    the review's words, its drawdown chart draws the limit, and each trial that broke it is
    marked in the trials table."""
    from playwright.sync_api import expect
    from typer.testing import CliRunner

    from alphaloop.cli import app

    run = CliRunner().invoke(app, [*SESSION[:-2], "2", "--max-drawdown", "0.001", "--json"])
    assert run.exit_code == 0, run.output
    sid = json.loads(run.stdout)["session"]["id"]
    with Journal(settings.journal_path) as j:
        final = j.sessions.get(sid).final
        trials = j.trials.of_session(sid, series=False)
        # the rows the trials table lists (TEST rows are apart), those that broke the limit
        listed = [t for t in trials if t.kind in ("search", "baseline", "confirm")]
        broke = [t.idx for t in listed if t.violation]
    assert final is not None and final.admissible is False and broke
    with (
        live_server(settings) as base,
        page_at(base, 1400, f"#/report/session/{sid}") as (
            page,
            errors,
        ),
    ):
        said = page.locator("#report-outside")
        expect(said).to_have_text(f"NOT WITHIN THE LIMITS: {final.admissible_reason}")
        page.wait_for_function(
            "() => document.querySelector('#report-drawdown')?.layout?.shapes?.length",
            timeout=60_000,
        )
        shapes = page.evaluate("() => document.querySelector('#report-drawdown').layout.shapes")
        assert [s["y0"] for s in shapes] == [-0.001]
        page.goto(f"{base}/#/session/{sid}/trials")
        rows = page.locator("#trials-table tbody tr")
        expect(rows.first).to_be_attached(timeout=30_000)
        marked = page.locator("#trials-table tbody tr.outside-row")
        expect(marked).to_have_count(len(broke))
        expect(marked.first.locator(".limit-mark")).to_contain_text("outside the limits")
        # the feasibility plot: objective against drawdown, the limit drawn, the breakers marked
        page.goto(f"{base}/#/session/{sid}/plots")
        page.wait_for_function(
            "() => document.querySelector('#feasibility-chart')?.layout?.shapes?.length",
            timeout=60_000,
        )
        drawn = page.evaluate(
            "() => { const d = document.querySelector('#feasibility-chart');"
            " return { x: d.layout.shapes[0].x0, traces: d.data.map(t => [t.name, t.x.length]) }; }"
        )
        searched = [t for t in trials if t.kind == "search" and t.objective is not None]
        out = len([t for t in searched if t.violation])
        assert drawn["x"] == 0.001
        assert drawn["traces"] == [
            ["within the limits", len(searched) - out],
            ["outside the limits", out],
        ]
    assert not errors, errors
