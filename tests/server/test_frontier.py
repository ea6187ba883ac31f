"""``GET /api/frontier``: the operation ``alphaloop frontier`` runs, and its errors as 422."""

from __future__ import annotations

import httpx

from alphaloop.settings import Settings
from tests.server.helpers import live_server


def test_frontier_route_answers_the_points_and_refuses_bad_input(settings: Settings) -> None:
    with live_server(settings) as base:
        ok = httpx.get(f"{base}/api/frontier", params={"assets": 5, "points": 3}, timeout=60)
        too_many = httpx.get(f"{base}/api/frontier", params={"assets": 30}, timeout=60)
        one_point = httpx.get(f"{base}/api/frontier", params={"points": 1}, timeout=60)
        few_scenarios = httpx.get(f"{base}/api/frontier", params={"scenarios": 10}, timeout=60)
    assert ok.status_code == 200, ok.text
    run = ok.json()
    assert len(run["symbols"]) == 5 and len(run["points"]) == 3
    assert [p["status"] for p in run["points"]] == ["optimal"] * 3
    cvars = [p["cvar"] for p in run["points"]]
    assert cvars == sorted(cvars)
    assert too_many.status_code == 422
    assert "more than the 20 assets" in too_many.json()["detail"]
    assert one_point.status_code == 422
    assert few_scenarios.status_code == 422
