"""A long session in the system Chromium: the session list shows each session's best (checked
against every trial of the journal), and opening the long session's address asks for its
history at once (with its pulse, not after it), draws the preview at once, then plotly's chart,
whose incumbent step line is the exact one at every trial."""

from __future__ import annotations

import bisect
import sqlite3

import pytest

from alphaloop.journal import Journal, TrialRecord
from alphaloop.settings import Settings

from .helpers import CHROMIUM, add_trials, live_server, new_session, page_at

LONG = 2600  # past the page's BIG (2,000): the history is sampled by the server


def _long_session(settings: Settings) -> str:
    """A session of ``LONG`` search trials: one written through the journal, the rest cloned
    in SQL with their index, verdict and objective varied (a few incumbent changes, a cloud)."""
    with Journal(settings.journal_path) as j:
        sid = new_session(j, goal="a long one", budget=LONG)
        add_trials(j, sid, 1)
    with sqlite3.connect(settings.journal_path) as conn:
        varied = ("idx", "status", "objective")
        cols = [r[1] for r in conn.execute("PRAGMA table_info(trials)") if r[1] not in varied]
        cols.remove("id")
        kept = ", ".join(cols)
        conn.execute(
            f"WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?) "
            f"INSERT INTO trials (idx, status, objective, {kept}) "
            f"SELECT i, CASE WHEN i % 7 = 0 THEN 'keep' ELSE 'discard' END, "
            f"(i * 37 % 1000) / 1000.0 + i / 2000.0, {kept} "
            f"FROM trials, k WHERE trials.session_id = ? AND trials.idx = 0",
            (LONG - 1, sid),
        )
    return sid


def _incumbent(trials: list[TrialRecord]) -> list[float | None]:
    best: float | None = None
    out = []
    for t in trials:
        if t.status == "keep" and t.objective is not None and (best is None or t.objective > best):
            best = t.objective
        out.append(best)
    return out


# Records, from the click, whether a painted frame showed the preview (a canvas with points)
# and then plotly's chart of the followed session.
_SWITCH = """(sid) => new Promise((resolve) => {
  const seen = {};
  const tick = () => requestAnimationFrame(() => {
    const chart = document.querySelector('#research-chart');
    if (!chart || chart.dataset.session !== sid) return tick();
    const drawn = Number(chart.dataset.points) > 0;
    if (drawn && chart.querySelector('canvas.preview')) seen.preview = true;
    if (drawn && chart.querySelector('.main-svg')) return resolve(seen);
    tick();
  });
  location.hash = `#/session/${sid}`;
  tick();
})"""


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no system chromium on PATH")
def test_a_switch_to_a_long_session_draws_its_exact_history(settings: Settings) -> None:
    from playwright.sync_api import expect

    with Journal(settings.journal_path) as j:
        short = new_session(j, goal="a short one", budget=20)
        add_trials(j, short, 12)
    long = _long_session(settings)
    with Journal(settings.journal_path) as j:
        trials = {s: j.trials.of_session(s, series=False) for s in (short, long)}
    best = {s: max(t.objective for t in ts if t.status == "keep") for s, ts in trials.items()}
    with live_server(settings) as base, page_at(base) as (page, errors):
        for sid in (short, long):
            cell = f"#sessions-table tr[data-id='{sid}'] td[data-label='best (validation)']"
            expect(page.locator(cell)).to_contain_text(f"{best[sid]:#.4g} (#", timeout=30_000)
        page.goto(f"{base}/#/session/{short}")
        page.wait_for_function(
            "() => !!document.querySelector('#research-chart .main-svg') && "
            "Number(document.querySelector('#research-chart').dataset.points) > 0"
        )
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url.split("?")[0].removeprefix(base)))
        seen = page.evaluate(_SWITCH, long)
        expect(page.locator("#pulse")).to_contain_text(f"{LONG}/{LONG}")
        assert seen == {"preview": True}
        mine = [p for p in asked if long in p or p == "/api/pulse"]
        # The history is asked for at once, before the pulse's answer (one round trip, not two).
        assert mine[:2] == [f"/api/sessions/{long}/history", "/api/pulse"]
        drawn = page.evaluate(
            "() => document.querySelector('#research-chart').data.map((t) => "
            "({name: t.name, x: Array.from(t.x), y: Array.from(t.y)}))"
        )
    assert not errors, errors
    line = next(t for t in drawn if t["name"] == "best so far")
    assert len(line["x"]) < LONG  # sampled
    for t, top in zip(trials[long], _incumbent(trials[long]), strict=True):
        assert line["y"][bisect.bisect_right(line["x"], t.idx) - 1] == top
    # one series a status, named as the trials table names it
    marks = {t["name"] for t in drawn} - {"best so far", "default"}
    assert marks == {str(t.status) for t in trials[long] if t.objective is not None}
    dots = sum(len(t["x"]) for t in drawn if t["name"] in marks)
    assert 0 < dots <= len(line["x"])
