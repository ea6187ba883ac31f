"""Writing charts to files: HTML (opens offline) and PNG through kaleido.

An HTML chart references plotly.js as a file beside it (``plotly-<version>.min.js``, written
once per folder) instead of inlining its ~4.8 MB every time, so a folder of charts costs the
library once. The file name carries the plotly.js version: charts written by an older plotly
keep loading the version they were drawn with, and nothing is fetched from a CDN.

Kaleido 1.x drives a headless Chromium; it does not ship one. We never let it download a
browser: :func:`find_chromium` looks for a system one (the ``ALPHALOOP_CHROMIUM`` /
``BROWSER_PATH`` setting, then ``chromium``, ``chromium-browser``, ``google-chrome`` on PATH,
then the usual install paths) and passes its path to kaleido explicitly, so kaleido's own
search (which also looks at its download folder) never runs. Kaleido (through choreographer)
starts the browser with ``--no-sandbox``, so rendering works as root and in containers.
MathJax is switched off: it would be fetched from a CDN, and no chart uses LaTeX.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import struct
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from alphaloop.exceptions import AlphaloopError, InvalidRequest

PATH_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
SYSTEM_PATHS = (
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
    "/snap/bin/chromium",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
)
INSTALL_HINT = (
    "install Chromium (`apt-get install chromium` on Debian/Ubuntu, `dnf install chromium` on "
    "Fedora, `brew install --cask chromium` on macOS) or set ALPHALOOP_CHROMIUM to a Chromium or "
    "Chrome executable; HTML export works without it"
)
SUFFIXES = (".html", ".htm", ".png")
DEFAULT_WIDTH, DEFAULT_HEIGHT = 1100, 620
MIN_SIDE, MAX_SIDE = 200, 4000
RENDER_TIMEOUT_S = 90.0
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_chromium(configured: Path | None = None) -> Path:
    """The Chromium (or Chrome) that renders PNGs.

    Args:
        configured: ``Settings.chromium``; when set it must be an executable, nothing else is
            tried (a wrong setting should not be papered over by another browser).

    Raises:
        AlphaloopError: none found; the message says what to install.
    """
    if configured is not None:
        if _executable(Path(configured)):
            return Path(configured)
        raise AlphaloopError(
            f"ALPHALOOP_CHROMIUM (or BROWSER_PATH) is {str(configured)!r}, which is not an "
            f"executable; {INSTALL_HINT}"
        )
    for name in PATH_NAMES:
        found = shutil.which(name)
        if found and _executable(Path(found)):
            return Path(found)
    for candidate in SYSTEM_PATHS:
        if _executable(Path(candidate)):
            return Path(candidate)
    raise AlphaloopError(f"PNG export needs Chromium and none was found; {INSTALL_HINT}")


def check_suffix(path: Path) -> str:
    """The export format of ``path`` (``html`` or ``png``).

    Raises:
        InvalidRequest: another suffix.
    """
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise InvalidRequest(
            f"cannot export a chart as {path.name!r}: use a .html or .png file name"
        )
    return "png" if suffix == ".png" else "html"


def check_size(width: int, height: int) -> None:
    """Raises :class:`InvalidRequest` for a PNG size outside ``MIN_SIDE..MAX_SIDE``."""
    for name, value in (("width", width), ("height", height)):
        if not MIN_SIDE <= value <= MAX_SIDE:
            raise InvalidRequest(
                f"PNG {name} must be between {MIN_SIDE} and {MAX_SIDE} pixels, got {value}"
            )


def plotlyjs_name() -> str:
    """The file name of the plotly.js bundle HTML charts load: ``plotly-<version>.min.js``."""
    from plotly.offline import get_plotlyjs_version

    return f"plotly-{get_plotlyjs_version()}.min.js"


def write_plotlyjs(folder: str | Path) -> Path:
    """Writes plotly.js into ``folder`` unless a complete copy of this version is already there.

    Written to a temporary file and renamed, so a chart opened (or another export running)
    meanwhile never sees a half-written bundle. A file of the wrong size (a copy cut short) is
    replaced.
    """
    from plotly.offline import get_plotlyjs

    target = Path(folder) / plotlyjs_name()
    code = get_plotlyjs().encode("utf-8")
    if target.is_file() and target.stat().st_size == len(code):
        return target
    return write_atomically(target, code)


def write_atomically(path: Path, data: bytes) -> Path:
    """Writes ``data`` to a temporary file beside ``path`` and renames it there: a reader of
    ``path`` sees the old file or the whole new one, never a half."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_html(fig: go.Figure, path: str | Path) -> Path:
    """Writes ``fig`` as an HTML file that loads plotly.js from beside it (see
    :func:`write_plotlyjs`); it opens with no network. The folder is created if missing."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    bundle = write_plotlyjs(target.parent)
    fig.write_html(target, include_plotlyjs=bundle.name, full_html=True)
    return target


def render_png(
    fig: go.Figure,
    *,
    width: int = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
    chromium: Path | None = None,
    timeout_s: float = RENDER_TIMEOUT_S,
) -> bytes:
    """The PNG of ``fig``, ``width`` x ``height`` pixels (see :func:`render_pngs`)."""
    [png] = render_pngs([fig], width=width, height=height, chromium=chromium, timeout_s=timeout_s)
    return png


def render_pngs(
    figs: Sequence[go.Figure],
    *,
    width: int = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
    chromium: Path | None = None,
    timeout_s: float = RENDER_TIMEOUT_S,
) -> list[bytes]:
    """The PNGs of ``figs``, ``width`` x ``height`` pixels each, rendered by one browser: its
    start-up is most of a render's time (a tear sheet's six figures, one browser each, took
    5.7 times as long, medians of three runs side by side).

    Args:
        figs: the figures.
        width: pixels.
        height: pixels.
        chromium: the browser; default :func:`find_chromium`.
        timeout_s: longest wait for one render.

    Raises:
        AlphaloopError: no browser (the message says what to install).
        InvalidRequest: a bad size.
        AlphaloopError: the browser failed to render.
    """
    check_size(width, height)
    browser = chromium or find_chromium()
    opts = {"format": "png", "width": width, "height": height, "scale": 1}
    kopts = {"path": str(browser), "mathjax": False, "timeout": timeout_s, "n": 1}
    try:
        # In a thread of its own: its event loop never meets a caller's (a server's) loop.
        with ThreadPoolExecutor(1) as pool:
            found = pool.submit(asyncio.run, _render([f.to_dict() for f in figs], opts, kopts))
            images = found.result()
    except Exception as err:  # kaleido and choreographer raise many kinds; all mean "no image"
        detail = " ".join(str(err).split())[:300] or type(err).__name__
        raise AlphaloopError(f"Chromium at {browser} could not render the chart: {detail}") from err
    for data in images:
        if not isinstance(data, bytes | bytearray) or not bytes(data).startswith(PNG_SIGNATURE):
            raise AlphaloopError(f"Chromium at {browser} returned something that is not a PNG")
    return [bytes(data) for data in images]


async def _render(
    figs: list[dict[str, Any]], opts: dict[str, Any], kopts: dict[str, Any]
) -> list[Any]:
    import kaleido  # deferred: it starts threads and imports choreographer

    async with kaleido.Kaleido(**kopts) as k:
        return [await k.calc_fig(fig, opts=opts) for fig in figs]


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk.

    Raises:
        ValueError: not a PNG.
    """
    if len(data) < 24 or not data.startswith(PNG_SIGNATURE) or data[12:16] != b"IHDR":
        raise ValueError("not a PNG image")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def capped_png(
    fig: go.Figure,
    *,
    max_bytes: int,
    width: int = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
    chromium: Path | None = None,
) -> bytes:
    """A PNG of at most ``max_bytes``: rendered at ``width`` x ``height``, then smaller (three
    quarters of the size each time, aspect kept) until it fits.

    Raises:
        AlphaloopError: even ``MIN_SIDE`` pixels wide it does not fit.
    """
    browser = chromium or find_chromium()
    while True:
        data = render_png(fig, width=width, height=height, chromium=browser)
        if len(data) <= max_bytes:
            return data
        if min(width, height) * 3 // 4 < MIN_SIDE:
            raise AlphaloopError(
                f"the chart does not fit in {max_bytes:,} bytes even at {width}x{height} pixels"
            )
        width, height = width * 3 // 4, height * 3 // 4


def export_figure(
    fig: go.Figure,
    path: str | Path,
    *,
    width: int = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
    chromium: Path | None = None,
    png: bytes | None = None,
) -> Path:
    """Writes ``fig`` to ``path`` as HTML or PNG, by its suffix.

    Args:
        fig: the figure.
        path: ``*.html`` / ``*.htm`` or ``*.png``.
        width: PNG pixels.
        height: PNG pixels.
        chromium: the browser for PNG; default :func:`find_chromium`.
        png: an already rendered PNG of ``fig`` to write instead of rendering again.

    Raises:
        InvalidRequest: an unsupported suffix or size.
        AlphaloopError: the render failed.
        AlphaloopError: PNG asked for and no browser.
    """
    target = Path(path)
    if check_suffix(target) == "html":
        return write_html(fig, target)
    data = png or render_png(fig, width=width, height=height, chromium=chromium)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target
