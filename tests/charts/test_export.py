"""HTML and PNG export: real plotly, real kaleido, the real system Chromium."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import plotly.graph_objects as go
import pytest
from plotly.offline import get_plotlyjs, get_plotlyjs_version

from alphaloop.charts import (
    capped_png,
    check_size,
    check_suffix,
    export_figure,
    find_chromium,
    plotlyjs_name,
    png_size,
    render_png,
    write_html,
)
from alphaloop.charts import export as export_module
from alphaloop.exceptions import AlphaloopError


@pytest.fixture
def figure() -> go.Figure:
    fig = go.Figure(go.Scatter(x=list(range(50)), y=[i**0.5 for i in range(50)], name="sqrt"))
    fig.update_layout(title="a small chart", template="plotly_white")
    return fig


@pytest.fixture
def no_system_chromium(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A machine with no Chromium: an empty PATH and none of the usual install paths."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.setattr(export_module, "SYSTEM_PATHS", ())


def test_png_has_the_requested_size(figure: go.Figure, tmp_path: Path) -> None:
    written = export_figure(figure, tmp_path / "out" / "chart.png", width=640, height=360)
    data = written.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    assert png_size(data) == (640, 360)
    assert len(data) > 5_000  # a drawn chart, not an empty canvas


@pytest.mark.slow
def test_png_is_capped_by_rendering_smaller(figure: go.Figure) -> None:
    full = render_png(figure, width=800, height=480)
    capped = capped_png(figure, max_bytes=len(full) - 1, width=800, height=480)
    assert len(capped) < len(full)
    assert png_size(capped) == (600, 360)


def test_html_opens_without_network(figure: go.Figure, tmp_path: Path) -> None:
    written = write_html(figure, tmp_path / "chart.html")
    text = written.read_text()
    assert "<html>" in text[:100] and '"name":"sqrt"' in text
    # The only script fetched is plotly.js, by a relative name, from a file written beside it.
    sources = re.findall(r"<script[^>]*\bsrc=\"([^\"]+)\"", text)
    assert sources == [plotlyjs_name()] and "/" not in sources[0]
    bundle = tmp_path / sources[0]
    assert bundle.read_text(encoding="utf-8") == get_plotlyjs()
    assert f"plotly.js v{get_plotlyjs_version()}" in bundle.read_text(encoding="utf-8")[:100]
    assert len(text.encode()) < 100_000  # not the ~4.8 MB of an inlined plotly.js


def test_plotlyjs_is_written_once_per_folder(figure: go.Figure, tmp_path: Path) -> None:
    write_html(figure, tmp_path / "a.html")
    bundle = tmp_path / plotlyjs_name()
    first = bundle.stat()
    write_html(figure, tmp_path / "b.html")
    assert bundle.stat().st_mtime_ns == first.st_mtime_ns and bundle.stat().st_ino == first.st_ino
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.html", "b.html", plotlyjs_name()]
    # A copy cut short (a full disk, a killed export) is replaced, not trusted.
    bundle.write_text("/* truncated */", encoding="utf-8")
    write_html(figure, tmp_path / "c.html")
    assert bundle.read_text(encoding="utf-8") == get_plotlyjs()


def test_suffix_and_size_are_checked_before_any_work() -> None:
    assert check_suffix(Path("a.HTML")) == "html" and check_suffix(Path("b.png")) == "png"
    with pytest.raises(AlphaloopError, match=r"'c\.svg': use a \.html or \.png"):
        check_suffix(Path("c.svg"))
    with pytest.raises(AlphaloopError, match="width must be between 200 and 4000"):
        check_size(50, 400)


def test_chromium_is_found_on_path(
    no_system_chromium: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    browser = bin_dir / "chromium-browser"
    browser.write_text("#!/bin/sh\n")
    browser.chmod(browser.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert find_chromium() == browser


def test_no_chromium_says_what_to_install(no_system_chromium: None, figure: go.Figure) -> None:
    with pytest.raises(AlphaloopError, match="apt-get install chromium"):
        find_chromium()
    with pytest.raises(AlphaloopError, match="HTML export works without it"):
        render_png(figure)


def test_a_configured_chromium_must_exist(tmp_path: Path) -> None:
    with pytest.raises(AlphaloopError, match=r"ALPHALOOP_CHROMIUM .* not an executable"):
        find_chromium(tmp_path / "nowhere" / "chrome")
    real = find_chromium()
    assert real.is_file() and os.access(real, os.X_OK)
    assert find_chromium(real) == real
