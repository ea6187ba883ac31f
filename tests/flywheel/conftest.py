"""Every flywheel test runs with the Hugging Face variables training writes isolated."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import isolate_hf


@pytest.fixture(autouse=True)
def offline_env(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_hf(clean_env, tmp_path)
