"""Logging for the command line, set up in this one place from ``-v`` / ``-vv``.

Library modules only ``logging.getLogger(__name__)``. Records go to stderr, never stdout: stdout
carries the command's own output (a ``--json`` document must stay parseable).
"""

from __future__ import annotations

import logging
import sys

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record is emitted (a test runner swaps it)."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:  # type: ignore[no-untyped-def]
        pass  # always the current stderr


def _level_for(verbosity: int) -> int:
    """Warnings only by default; ``-v`` adds info, ``-vv`` debug."""
    if verbosity <= 0:
        return logging.WARNING
    return logging.INFO if verbosity == 1 else logging.DEBUG


def configure_logging(verbosity: int = 0) -> None:
    """Sends alphaloop's log records at the chosen level, and everyone's warnings, to stderr.

    Calling it again (one process running several commands) replaces its handler.
    """
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(handler)
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(handler)
    logging.getLogger("alphaloop").setLevel(_level_for(verbosity))
