"""The benchmarks the selection rule's claims rest on still run: each in its smallest form (its
quick plan, two search trials a session), through its command, on today's code (they read the
journal and the final report, so a change of shape there breaks them where no other test
looks)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _run(tmp_path: Path, *args: str) -> str:
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
@pytest.mark.heavy
def test_bench_power_runs_a_session_and_prints_its_targets(tmp_path: Path) -> None:
    out = _run(tmp_path, "benchmarks.bench_power", "--quick", "--arm", "tied", "--budget", "2")
    assert "tied: 1 sessions x 2 search trials" in out
    assert "tied: power +0 (after): pick | GO" in out


@pytest.mark.slow
@pytest.mark.heavy
def test_bench_generalisation_runs_an_arm_and_prints_its_table(tmp_path: Path) -> None:
    out = _run(
        tmp_path, "benchmarks.bench_generalisation", "--quick", "--arm", "flat", "--budget", "2"
    )
    assert "flat: 2 sessions x 2 search trials" in out
    assert "pick is not the default" in out and "GO (all gates passed)" in out
