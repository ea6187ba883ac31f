"""The docs site builds offline in strict mode (a broken link fails it), its command and API
pages are written from the code, and nothing in it loads from the network."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from alphaloop.settings import Settings

REPO = Path(__file__).resolve().parents[1]
# What makes a browser fetch: scripts, stylesheets, images, frames, fonts (in CSS).
FETCHED = re.compile(
    r"<(?:script|img|iframe|source)\b[^>]*\bsrc=[\"']?https?://"
    r"|<link\b[^>]*\bhref=[\"']?https?://"
    r"|url\([\"']?https?://",
    re.IGNORECASE,
)


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_the_site_builds_strict_and_loads_nothing_from_the_network(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = _build(REPO / "mkdocs.yml", site)
    assert built.returncode == 0, built.stderr[-3000:]
    pages = list(site.rglob("*.html")) + list(site.rglob("*.css"))
    fetching = [str(p.relative_to(site)) for p in pages if FETCHED.search(p.read_text("utf-8"))]
    assert fetching == []
    commands = (site / "commands" / "index.html").read_text("utf-8")
    for command in ("alphaloop export optuna", "alphaloop report", "alphaloop research start"):
        assert command in commands
    api = (site / "api" / "index.html").read_text("utf-8")
    assert "/api/sessions/{session_id}/export/optuna" in api
    reference = (site / "reference" / "index.html").read_text("utf-8")
    assert "export_optuna" in reference and "InvalidRequest" in reference
    for module in ("ops.research", "ops.sessions", "ops.requests", "ops.validate", "ops.pm",
                   "ops.policies", "ops.jobs", "knobs", "exceptions"):  # fmt: skip
        assert f'id="alphaloop.{module}"' in reference, module


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# home\n\nsee [the missing page](missing.md)\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text(f"site_name: t\ndocs_dir: {docs}\n")
    built = _build(config, tmp_path / "site")
    assert built.returncode != 0 and "missing.md" in built.stderr


def test_the_configuration_page_names_every_setting() -> None:
    page = (REPO / "docs" / "configuration.md").read_text("utf-8")
    missing = [
        name
        for info in Settings.model_fields.values()
        for name in info.validation_alias.choices[:1]
        if f"`{name}`" not in page
    ]
    assert missing == []
