"""``GET /api/frontier``: the operation ``alphaloop frontier`` runs, and its errors as 422;
traced while the server answers; the page's frontier panel in Chromium."""

from __future__ import annotations

import threading

import httpx
import pytest

from alphaloop.settings import Settings
from tests.server.helpers import CHROMIUM, live_server, page_at


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
    assert "assets: Input should be less than or equal to 20" in too_many.json()["detail"]
    assert one_point.status_code == 422
    assert few_scenarios.status_code == 422


def test_the_route_leaves_the_server_answering_while_it_traces(settings: Settings) -> None:
    """The frontier is traced in a thread of the server's pool: its event loop answers other
    requests meanwhile (here: polls of the health check before it is done)."""
    with live_server(settings) as base, httpx.Client(base_url=base, timeout=120) as c:
        done: list[int] = []
        tracer = threading.Thread(
            target=lambda: done.append(
                c.get("/api/frontier", params={"assets": 8, "points": 6}).status_code
            )
        )
        tracer.start()
        answered = 0
        while tracer.is_alive():
            assert c.get("/api/health").status_code == 200
            answered += 1
        tracer.join()
    assert done == [200] and answered > 1


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no system chromium on PATH")
def test_the_frontier_panel_traces_and_draws(settings: Settings) -> None:
    from playwright.sync_api import expect

    with live_server(settings) as base, page_at(base, view="#/lab") as (page, errors):
        page.fill("#frontier-form input[name=assets]", "6")
        page.fill("#frontier-form input[name=points]", "4")
        page.click("#frontier-draw")
        status = page.locator("#frontier-status")
        expect(status).to_contain_text("4 points, solved in", timeout=90_000)
        expect(page.locator("#frontier-draw")).to_be_enabled()
        assert page.locator("#frontier-chart").get_attribute("data-points") == "4"
        title = page.locator("#frontier-chart .gtitle").text_content() or ""
        assert "6 assets" in title
    assert not errors, errors
