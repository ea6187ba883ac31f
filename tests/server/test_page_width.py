"""The page at phone width (390 px) in the system Chromium: the document never scrolls
sideways; wide tables scroll inside their panel. A screenshot is kept as a test artifact."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from alphaloop.settings import Settings

from .helpers import ARGS, CHROMIUM, live_server
from .test_page import _seed

PHONE = {"width": 390, "height": 844}

# The elements wider than the viewport, for the failure message.
WIDE = """() => [...document.querySelectorAll('body *')]
  .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5
                 && !e.closest('.scroll'))
  .slice(0, 8).map((e) => e.tagName + '#' + e.id + '.' + e.className + ' '
                   + Math.round(e.getBoundingClientRect().right))"""


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no system chromium on PATH")
def test_the_page_fits_a_phone(settings: Settings, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    _seed(settings)
    with live_server(settings) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport=PHONE)
        page.goto(base + "/")
        expect(page.locator("#knobs-table tbody tr")).to_have_count(16)
        expect(page.locator("#trials-table tbody tr")).to_have_count(3, timeout=15_000)
        expect(page.locator("#policies-table tbody tr")).to_have_count(1, timeout=15_000)
        page.wait_for_function("() => Number(document.querySelector('#research-chart')"
                               ".dataset.points) > 0", timeout=30_000)  # fmt: skip
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], (width, page.evaluate(WIDE))
        # the knob table is wider than the phone: it scrolls inside its panel
        box = page.evaluate(
            "(() => { const d = document.querySelector('#knobs-table').parentElement;"
            " return [d.scrollWidth, d.clientWidth, getComputedStyle(d).overflowX]; })()"
        )
        assert box[1] <= PHONE["width"] and box[2] == "auto", box
        shot = tmp_path / "page-390.png"
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
    if os.environ.get("ALPHALOOP_TEST_ARTIFACTS"):
        target = Path(os.environ["ALPHALOOP_TEST_ARTIFACTS"])
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, target / "page-390.png")
