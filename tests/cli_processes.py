"""``alphaloop`` in another process, and polling its journal: for the tests that kill a run
(a session, a walk) and resume it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from alphaloop.exceptions import AlphaloopError
from alphaloop.journal import Journal
from alphaloop.settings import Settings

REPO = Path(__file__).resolve().parents[1]


def spawn(args: list[str], settings: Settings, out: Path) -> subprocess.Popen:
    """``alphaloop ARGS`` in a new process with this test's home and no LLM configured;
    its stdout goes to ``out`` and its stderr beside it."""
    env = dict(os.environ)  # the settings fixture already removed the machine's settings
    env["ALPHALOOP_HOME"] = str(settings.home)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    with out.open("w") as stdout, out.with_suffix(".err").open("w") as stderr:
        return subprocess.Popen(
            [sys.executable, "-c", "from alphaloop.cli import main; main()", *args],
            cwd=REPO,
            env=env,
            stdout=stdout,
            stderr=stderr,
        )


def wait_for(
    settings: Settings,
    check: Callable[[Journal], Any],
    proc: subprocess.Popen,
    timeout: float = 90.0,
) -> Any:
    """Polls the journal until ``check`` returns something truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the process ended early"
        try:
            with Journal(settings.journal_path, create=False) as journal:
                found = check(journal)
        except AlphaloopError:  # not created yet
            found = None
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError(f"nothing to see after {timeout} s")
