"""``--ray-address``: a short session's trials as Ray tasks on a local 2-CPU Ray instance, the
journal kept on the driver."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.journal import Journal
from alphaloop.settings import Settings

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'alphaloop[ray]')")


@pytest.fixture
def local_ray(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A local Ray instance with 2 CPUs whose files stay in a temporary directory (a short
    one: Ray's socket paths must fit in 107 characters)."""
    short = Path(tempfile.mkdtemp(prefix="ray-"))
    monkeypatch.setenv("RAY_TMPDIR", str(short))
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=str(short), log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()
        import shutil

        shutil.rmtree(short, ignore_errors=True)


@pytest.mark.slow
def test_a_session_runs_its_trials_on_ray(settings: Settings, local_ray: Any) -> None:
    result = CliRunner().invoke(
        app,
        [
            "research",
            "maximise validation Sharpe",
            "--mode",
            "cufolio_only",
            "--budget",
            "3",
            "--data",
            "synthetic",
            "--noise-seeds",
            "2",
            "--proposer",
            "random",
            "--workers",
            "2",
            "--ray-address",
            "auto",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    review = json.loads(result.stdout)
    sid = review["session"]["id"]
    with Journal(settings.journal_path) as journal:
        rows = journal.trials.of_session(sid, series=False)
        session = journal.sessions.get(sid)
    assert session.settings["spec"]["ray_address"] == "auto"
    assert [t.idx for t in rows] == list(range(len(rows)))
    assert session.status == "finished" and session.final.n_trials == 3
    search = [t for t in rows if t.kind == "search"]
    assert len(search) == 3 and all(t.status in ("keep", "discard") for t in search)
    assert all(t.objective is not None and t.elapsed_s > 0 for t in search)
    # A Ray runtime the session found running is left running for its owner.
    assert local_ray.is_initialized()
