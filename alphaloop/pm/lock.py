"""One tick of a book at a time, across processes: an exclusive ``flock`` on a file per book.

The operating system drops the lock when its holder exits, even on SIGKILL, so a crashed tick
never leaves a book locked; the next tick then finishes what the crashed one journaled.
"""

from __future__ import annotations

import fcntl
import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alphaloop.exceptions import Conflict

__all__ = ["book_lock"]

# How long a tick waits for another tick of the same book before it gives up; a deployment
# check holds its book for its whole run.
WAIT_S = 60.0
_POLL_S = 0.05


@contextmanager
def book_lock(locks_dir: Path, book: str, wait_s: float = WAIT_S) -> Iterator[None]:
    """Holds the book's lock for the block.

    Raises:
        Conflict: another process held the lock for ``wait_s`` seconds.
    """
    locks_dir.mkdir(parents=True, exist_ok=True)
    # Hashed: a book's name may hold characters a file name cannot.
    path = locks_dir / f"book-{hashlib.sha256(book.encode()).hexdigest()[:16]}.lock"
    with path.open("a") as handle:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise Conflict(
                        f"book {book!r} is being ticked by another process; try again when "
                        "it is done"
                    ) from None
                time.sleep(_POLL_S)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
