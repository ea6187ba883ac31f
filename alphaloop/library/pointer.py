"""The active-policy pointer: one small JSON file in the alphaloop home naming a library id.

It is written atomically (a temporary file in the same directory, flushed to disk, renamed over
the old pointer, then the directory flushed), so a process killed at any instant leaves the old
pointer or the new one, never a torn file. Readers therefore treat anything else as an error to
report, not to guess around.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from alphaloop.exceptions import ActivePolicyError

POINTER_VERSION = 1


def read_pointer(path: Path) -> dict[str, Any] | None:
    """The pointer's content, or None when no policy was ever activated.

    Raises:
        ActivePolicyError: the file is not a pointer this code wrote.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise _garbled(path, str(err)) from None
    try:
        content = json.loads(text)
    except json.JSONDecodeError as err:
        raise _garbled(path, f"not JSON ({err})") from None
    policy_id = content.get("policy_id") if isinstance(content, dict) else None
    if not isinstance(policy_id, int) or isinstance(policy_id, bool) or policy_id < 1:
        raise _garbled(path, "no positive integer policy_id in it")
    return content


def _garbled(path: Path, why: str) -> ActivePolicyError:
    return ActivePolicyError(
        f"the active-policy pointer {path} cannot be read: {why}; choose the policy again "
        "with `alphaloop policies activate ID` (`alphaloop policies list` shows the ids)"
    )


def pointer_policy_id(path: Path) -> int | None:
    """The library id the pointer names, or None when there is no pointer."""
    content = read_pointer(path)
    return None if content is None else int(content["policy_id"])


def write_pointer(path: Path, content: dict[str, Any]) -> None:
    """Replaces the pointer atomically: temporary file in the same directory, fsync, rename,
    fsync of the directory (so the rename itself survives a power cut)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"version": POINTER_VERSION, **content}, sort_keys=True) + "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # a platform that cannot open directories (Windows): the rename stands
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
