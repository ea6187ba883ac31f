"""The portfolio manager's books, decisions and fills.

Part of :class:`~alphaloop.journal.Journal`.
"""

from __future__ import annotations

from alphaloop.journal.connection import JournalFile


class BookStore(JournalFile):
    """Reads and writes of the ``pm_books``, ``decisions`` and ``pm_fills`` tables."""
