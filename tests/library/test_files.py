"""Library files: copies named by their sha256, and the hash checked before anything loads."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from alphaloop.exceptions import PolicyTampered
from alphaloop.journal import Journal, PolicyRecord
from alphaloop.library import copy_into_library, load_ppo, verified_policy_file

from .helpers import policy_fields, session_and_trial


def _unloadable_zip(path: Path) -> Path:
    """A zip SB3 cannot load (no data, no parameters): loading it is an error of its own."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("not-a-policy.txt", "hello")
    return path


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    with Journal(tmp_path / "journal.db") as j:
        yield j


def _entry(journal: Journal, source: Path, policies_dir: Path) -> PolicyRecord:
    path, sha = copy_into_library(source, policies_dir)
    return journal.policies.add(
        **policy_fields(session_and_trial(journal), path=str(path), sha256=sha)
    )


def test_copy_is_named_by_its_hash_and_survives_the_source(
    journal: Journal, tmp_path: Path
) -> None:
    source = _unloadable_zip(tmp_path / "trial.zip")
    record = _entry(journal, source, tmp_path / "policies")
    expected = hashlib.sha256(source.read_bytes()).hexdigest()
    assert record.sha256 == expected
    assert Path(record.path).name == f"{expected[:16]}.zip"
    source.unlink()  # a trial's own file cleaned up later
    assert verified_policy_file(record) == Path(record.path)


def test_a_changed_file_is_refused_before_it_is_unpickled(journal: Journal, tmp_path: Path) -> None:
    record = _entry(journal, _unloadable_zip(tmp_path / "trial.zip"), tmp_path / "policies")
    # With its hash intact the file reaches SB3, which cannot load it: a load error...
    with pytest.raises(Exception) as loaded:
        load_ppo(record)
    assert not isinstance(loaded.value, PolicyTampered)
    # ...and once a byte changes, the same unloadable file is reported as tampered: the check
    # ran first, SB3 never saw it.
    with Path(record.path).open("ab") as f:
        f.write(b"\0")
    for call in (verified_policy_file, load_ppo):
        with pytest.raises(PolicyTampered, match=f"policy {record.id}'s file .* not loaded"):
            call(record)


def test_a_missing_file_is_refused_and_a_config_entry_has_none(
    journal: Journal, tmp_path: Path
) -> None:
    record = _entry(journal, _unloadable_zip(tmp_path / "trial.zip"), tmp_path / "policies")
    Path(record.path).unlink()
    with pytest.raises(PolicyTampered, match="is missing"):
        verified_policy_file(record)
    config_only = journal.policies.add(
        **policy_fields(session_and_trial(journal, mode="cufolio_only"), kind="mean_cvar")
    )
    with pytest.raises(ValueError, match="no policy file"):
        verified_policy_file(config_only)
