"""``GET /api/sessions/{id}/history`` past its point budget: a sample of the search that keeps
the cloud's envelope, the best trial, and the incumbent line exact as a step line."""

from __future__ import annotations

import bisect

import httpx

from alphaloop.journal import Journal
from alphaloop.ops import plots

from .helpers import live_server
from .test_dashboard import N
from .test_dashboard import home as dashboard_home  # noqa: F401 (a fixture)


def _step(h: dict, idx: int) -> float | None:
    """The incumbent the step line through the sampled rows draws at trial ``idx``."""
    return h["incumbent"][bisect.bisect_right(h["idx"], idx) - 1]


def test_a_long_history_is_sampled_with_its_incumbent_exact(dashboard_home) -> None:  # noqa: F811
    settings, ids = dashboard_home
    sid = ids["nogo"]
    with Journal(settings.journal_path) as j:
        every = j.trials.of_session(sid, "search")
    with live_server(settings) as base:
        full = httpx.get(f"{base}/api/sessions/{sid}/history").json()
        h = httpx.get(f"{base}/api/sessions/{sid}/history", params={"points": 20}).json()
        again = httpx.get(f"{base}/api/sessions/{sid}/history", params={"points": 20}).json()
        bad = httpx.get(f"{base}/api/sessions/{sid}/history", params={"points": 1})
    assert full["total"] == N and not full["sampled"] and len(full["idx"]) == N
    assert h["total"] == N and h["sampled"] and len(h["idx"]) < N
    assert h == again
    assert h["idx"] == sorted(h["idx"]) and h["idx"][-1] == every[-1].idx
    for t, top in zip(every, full["incumbent"], strict=True):
        assert _step(h, t.idx) == top
    best = max((t for t in every if t.status == "keep"), key=lambda t: t.objective)
    assert best.idx in h["idx"]
    scored = [t.objective for t in every if t.objective is not None]
    drawn = [o for o in h["objective"] if o is not None]
    assert (min(drawn), max(drawn)) == (min(scored), max(scored))
    assert bad.status_code == 422


def test_the_history_is_read_again_after_a_trial_starts_or_finishes(
    dashboard_home,  # noqa: F811
) -> None:
    settings, ids = dashboard_home
    sid = ids["nogo"]
    before = plots.history(settings, sid)
    with Journal(settings.journal_path) as j:
        first = j.trials.of_session(sid)[0]
        row = j.trials.start(sid, kind="search", config=first.config, config_hash=None,
                            delta={"changes": {}}, parent_id=None, seed=7, rationale="r",
                            proposer="tpe")  # fmt: skip
        started = plots.history(settings, sid)
        j.trials.finish(row.id, status="keep", objective=5.0, metrics={}, elapsed_s=0.01)
    finished = plots.history(settings, sid)
    assert (before.total, started.total, finished.total) == (N, N + 1, N + 1)
    assert started.status[-1] == "running" and started.incumbent[-1] == before.incumbent[-1]
    assert finished.status[-1] == "keep" and finished.incumbent[-1] == 5.0
