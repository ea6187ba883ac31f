"""Opening the journal for one operation."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from alphaloop.exceptions import EXIT_USAGE, AlphaloopError
from alphaloop.settings import Settings

if TYPE_CHECKING:
    from alphaloop.journal import Journal


class NoJournal(AlphaloopError):
    """No journal exists yet in the alphaloop home: no session or run has been started there.

    Front ends word it for their users (``path`` says where it was looked for).
    """

    exit_code = EXIT_USAGE
    http_status = 404

    def __init__(self, path: Path) -> None:
        super().__init__(f"no journal yet at {path}: no research session has been run in this home")
        self.path = path


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
