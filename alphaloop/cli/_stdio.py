"""Standard output belongs to the command, not to the native libraries it loads.

Solvers and other native code write to file descriptor 1 directly (HiGHS 1.16 prints its banner
at the first solve even with its output switched off), past any Python-level ``sys.stdout``
swap. A ``--json`` document with a banner in front of it is no longer JSON, and a banner in the
middle of a table is noise. So, for the whole life of the ``alphaloop`` process, descriptor 1
points at standard error, and Python's ``sys.stdout`` writes to a private copy of the original
standard output: what the command prints reaches stdout, whatever anything else writes reaches
stderr, where nothing is lost. Child processes (chromium for PNG export) inherit the same
arrangement.

The command prints from the main thread, through this package, click (``typer.echo``) or Rich.
A library prints through ``sys.stdout`` too: Ray's driver prints a dead worker's or node's
``(raylet)`` message from a thread of its own, Ray Client relays the cluster's lines from
another, and at ``ray.shutdown`` the driver flushes the lines it held back from the main thread.
So what another thread, or any other module, writes to ``sys.stdout`` goes to stderr as well.
No library's internals are patched for it.
"""

from __future__ import annotations

import io
import os
import sys
import threading

# The top-level modules whose writes to ``sys.stdout`` are the command's own output.
_COMMAND_WRITERS = frozenset({"alphaloop", "click", "typer", "rich", "__main__"})


class _CommandStdout(io.TextIOWrapper):
    """The real stdout for the command's own writes, from the main thread; stderr for any
    other thread's, or any other module's."""

    def write(self, text: str) -> int:
        caller = sys._getframe(1).f_globals.get("__name__", "")  # print() leaves no frame
        if (
            threading.current_thread() is not threading.main_thread()
            or caller.partition(".")[0] not in _COMMAND_WRITERS
        ):
            return sys.stderr.write(text)
        return super().write(text)


def reserve_stdout() -> None:
    """Sends descriptor 1 to standard error and keeps the real stdout for ``sys.stdout`` alone.

    Call it once, first thing in the entry point. Does nothing when stdout or stderr is not a
    real descriptor (an embedding host, a test runner's capture).
    """
    try:
        out_fd, err_fd = sys.stdout.fileno(), sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return
    if out_fd != 1:
        return
    sys.stdout.flush()
    private = os.dup(1)  # not inheritable: children see only descriptor 1, i.e. stderr
    os.dup2(err_fd, 1)
    sys.stdout = _CommandStdout(
        os.fdopen(private, "wb"),
        encoding=sys.stdout.encoding,
        errors=sys.stdout.errors,
        line_buffering=sys.stdout.line_buffering,
    )
