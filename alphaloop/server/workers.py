"""Long work in worker processes: research sessions, manual runs, DPO, scheduler jobs.

Each is an ``alphaloop`` command run as a detached child (its own session, stdout and stderr
to a log file under the home), never inside a request: the server survives a worker's crash,
and the journal shows what the worker did. A thread waits on every child so a finished one
never lingers as a zombie, which would still look alive to the journal's pid check.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from alphaloop import ops
from alphaloop.exceptions import AlphaloopError
from alphaloop.settings import Settings

# How long a request waits for a new worker's session to appear in the journal (it loads its
# data first).
SESSION_WAIT_S = 60.0


class WorkerFailed(AlphaloopError):
    """A worker ended before doing what it was started for; ``exit_code`` 2 is bad input."""

    def __init__(self, message: str, exit_code: int | None) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class Worker(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    pid: int
    command: list[str]
    log: str


_children: dict[int, subprocess.Popen] = {}
_kinds: dict[int, str] = {}  # pid -> the kind of work it was started for
_lock = threading.Lock()


def spawn(settings: Settings, kind: str, args: list[str]) -> Worker:
    """Starts ``python -m alphaloop <args>`` detached, with this server's settings."""
    logs = settings.home / "workers"
    logs.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S-%f")
    log = logs / f"{kind}-{stamp}.log"
    command = [sys.executable, "-m", "alphaloop", *args]
    env = {**os.environ, "ALPHALOOP_HOME": str(settings.home.absolute())}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    with _lock:
        _children[proc.pid] = proc
        _kinds[proc.pid] = kind
    threading.Thread(target=_reap, args=(proc,), daemon=True, name=f"reap-{proc.pid}").start()
    return Worker(pid=proc.pid, command=command[2:], log=str(log))


def _reap(proc: subprocess.Popen) -> None:
    proc.wait()


def exit_code(pid: int) -> int | None:
    """A child's exit code, or None while it runs (or if it is not ours)."""
    with _lock:
        proc = _children.get(pid)
    return None if proc is None else proc.poll()


def running(kind: str) -> list[int]:
    """The pids of this server's workers of ``kind`` that have not exited."""
    with _lock:
        procs = [p for pid, p in _children.items() if _kinds.get(pid) == kind]
    return [p.pid for p in procs if p.poll() is None]


def log_tail(worker: Worker, lines: int = 5) -> str:
    try:
        text = Path(worker.log).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    errors = [ln for ln in text.splitlines() if ln.startswith("error:")]
    return errors[-1] if errors else " | ".join(text.splitlines()[-lines:])


def wait_for_session(settings: Settings, worker: Worker, timeout_s: float = SESSION_WAIT_S) -> str:
    """The id of the session ``worker`` journaled (sessions record their owner's pid).

    Raises:
        WorkerFailed: the worker ended first (its error line in the message) or took too long.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for row in ops.list_sessions(settings, limit=20):
            if row.session.owner_pid == worker.pid:
                return row.session.id
        code = exit_code(worker.pid)
        if code is not None:
            # It may have journaled and finished between the two reads.
            for row in ops.list_sessions(settings, limit=20):
                if row.session.owner_pid == worker.pid:
                    return row.session.id
            raise WorkerFailed(
                f"the worker exited ({code}) before starting: {log_tail(worker)}", code
            )
        time.sleep(0.1)
    raise WorkerFailed(
        f"the worker (pid {worker.pid}) journaled no session within {timeout_s:g} s; see "
        f"its log {worker.log}",
        None,
    )
