"""Fixtures for the journal tests: a fresh journal in a temporary directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from alphaloop.journal import Journal


@pytest.fixture
def journal_path(tmp_path: Path) -> Path:
    return tmp_path / "home" / "journal.db"


@pytest.fixture
def journal(journal_path: Path) -> Iterator[Journal]:
    with Journal(journal_path) as j:
        yield j
