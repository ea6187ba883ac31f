"""Fixtures of the export tests (tests/ops/test_export*.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from alphaloop.journal import Journal
from alphaloop.settings import Settings
from tests.ops import optuna_export


@pytest.fixture
def journal(settings: Settings) -> Iterator[Journal]:
    settings.home.mkdir(parents=True)
    with Journal(settings.journal_path) as j:
        yield j


@pytest.fixture
def fates(journal: Journal) -> dict[str, Any]:
    """A session with one row of every fate (:func:`tests.ops.optuna_export.fates`)."""
    return optuna_export.fates(journal)


@pytest.fixture(params=["journal", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new Optuna journal file (the default), or a SQLite database's URL."""
    if request.param == "journal":
        return str(tmp_path / "study.log")
    return f"sqlite:///{tmp_path / 'study.db'}"
