"""A sheet written to one HTML file, opened from disk in the system Chromium with its network
watched: what it asked for, what its scripts raised, and its screenshot (kept in the artifacts
folder when ``ALPHALOOP_TEST_ARTIFACTS`` is set)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NamedTuple

from tests.server.helpers import ARGS, CHROMIUM


class Drawn(NamedTuple):
    asked: list[str]  # every URL the page requested
    errors: list[str]  # what its scripts raised
    wide: bool  # wider than the window: something sticks out sideways
    shot: Path


def draw_offline(path: Path, n_figures: int, shot: Path) -> Drawn:
    """Opens ``path`` until its ``n_figures`` plotly figures are drawn, then screenshots it to
    ``shot``."""
    from playwright.sync_api import sync_playwright

    asked: list[str] = []
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.on("request", lambda r: asked.append(r.url))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(path.as_uri())
            page.wait_for_function(
                f"document.querySelectorAll('.js-plotly-plot').length === {n_figures}"
            )
            wide = page.evaluate("document.documentElement.scrollWidth > innerWidth")
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    if os.environ.get("ALPHALOOP_TEST_ARTIFACTS"):
        target = Path(os.environ["ALPHALOOP_TEST_ARTIFACTS"])
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, target / shot.name)
    return Drawn(asked, errors, wide, shot)
