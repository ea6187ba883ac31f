"""Opening the journal for one operation."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from alphaloop.exceptions import NoJournal
from alphaloop.settings import Settings

if TYPE_CHECKING:
    from alphaloop.journal import Journal


@contextmanager
def open_journal(settings: Settings) -> Iterator[Journal]:
    """The journal at ``settings.journal_path``, open for the ``with`` block.

    Raises:
        NoJournal: there is no journal file yet (it is never created by a read).
    """
    if not settings.journal_path.exists():
        raise NoJournal(settings.journal_path)
    from alphaloop.journal import Journal  # sqlite-utils: only a command that reads pays for it

    with Journal(settings.journal_path) as journal:
        yield journal
