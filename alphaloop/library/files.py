"""Policy files of the library: copied in under a name of their own, checked before they load.

An SB3 zip carries pickled objects, and unpickling runs code. So a library file is trusted only
while its bytes still hash to the sha256 journaled when it was published: every load checks the
hash first and refuses a file that differs (or is gone) before a byte of it is unpickled.

Published files are copies named by their sha256 prefix under ``<policies dir>/library``, owned
by the library: a trial's own zip may be cleaned up later without breaking any entry.
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from alphaloop.exceptions import PolicyTampered
from alphaloop.journal import PolicyKind, PolicyRecord

if TYPE_CHECKING:
    from stable_baselines3 import PPO

LIBRARY_DIRNAME = "library"
# Hex digits of the sha256 in a library file's name: 64 bits, no collision in any real library.
NAME_DIGITS = 16
_CHUNK = 1 << 20


def _sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path) -> str:
    """The sha256 of a file's bytes, as hex."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def library_dir(policies_dir: Path) -> Path:
    return policies_dir / LIBRARY_DIRNAME


def copy_into_library(source: str | Path, policies_dir: Path) -> tuple[Path, str]:
    """Copies a policy zip into the library under its sha256 prefix; returns (path, sha256).

    The copy is written to a temporary file in the same directory, flushed to disk and renamed,
    so a crash leaves either no library file or a whole one. A file already there with the same
    hash is reused (two entries may share one zip).

    Raises:
        FileNotFoundError: no file at ``source``.
    """
    data = Path(source).read_bytes()
    sha = _sha256_bytes(data)
    folder = library_dir(policies_dir).absolute()
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{sha[:NAME_DIGITS]}.zip"
    if target.is_file() and sha256_file(target) == sha:
        return target, sha
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".publish-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target, sha


def _file_of(record: PolicyRecord) -> Path:
    if record.kind == PolicyKind.mean_cvar or not record.path or not record.sha256:
        raise ValueError(
            f"policy {record.id} is a {record.kind} entry: its strategy is its config "
            f"(hash {record.config_hash[:12]}), it has no policy file"
        )
    return Path(record.path)


def _tampered(record: PolicyRecord, path: Path, found: str | None) -> PolicyTampered:
    what = (
        "is missing"
        if found is None
        else f"has sha256 {found[:16]}..., not the {record.sha256[:16]}... the library journaled"
    )
    return PolicyTampered(
        f"policy {record.id}'s file {path} {what}; it was not loaded. Restore the file "
        f"published with the entry, or publish the policy again (a new research session or "
        f"`alphaloop train`) and activate the new id"
    )


def _checked_bytes(record: PolicyRecord) -> tuple[Path, bytes]:
    path = _file_of(record)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise _tampered(record, path, None) from None
    found = _sha256_bytes(data)
    if found != record.sha256:
        raise _tampered(record, path, found)
    return path, data


def verified_policy_file(record: PolicyRecord) -> Path:
    """The entry's policy zip, after checking its sha256 against the journal (nothing is
    unpickled here).

    Raises:
        ValueError: a ``mean_cvar`` entry (it has no file).
        PolicyTampered: the file is gone or its bytes changed; the message names the file and
            what to do.
    """
    return _checked_bytes(record)[0]


def load_ppo(record: PolicyRecord) -> PPO:
    """The entry's PPO model, on the CPU, from bytes whose sha256 was checked.

    The bytes hashed are the bytes loaded (read once, unpickled from memory), so the file cannot
    be swapped between the check and the load.

    Raises:
        ValueError: a ``mean_cvar`` entry (it has no file).
        PolicyTampered: the file is gone or its bytes changed (checked before unpickling).
    """
    _, data = _checked_bytes(record)
    from stable_baselines3 import PPO

    return PPO.load(io.BytesIO(data), device="cpu")
