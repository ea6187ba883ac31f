"""How fast the command line starts: ``python -m benchmarks.bench_cli_start [--quick]``.

Each command runs as a whole new process (``python -m alphaloop ...``), as a person or a script
calling ``alphaloop`` pays for it: interpreter start, imports, the command, exit. Measured per
process: wall time and peak resident memory (``os.wait4`` gives each child's own ``ru_maxrss``).
The commands: ``--help``, ``sessions --json`` and ``status --json``, on an empty home and on a
populated one (sessions with finished trials carrying their daily series), against
``python -c pass``, the floor no command can go under. Medians of 7 runs (5 with ``--quick``).
Targets: 0.5 s and 150 MB. Reports numbers only; it asserts nothing.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from alphaloop.journal import Journal
from alphaloop.knobs import TrialConfig, config_hash
from benchmarks._report import SummaryRow, parse_quick, print_rows

ROOT = Path(__file__).resolve().parent.parent
RUNS, QUICK_RUNS = 7, 5
TARGET_S, TARGET_MB = 0.5, 150.0
COMMANDS = (("--help",), ("sessions", "--json"), ("status", "--json"))
N_SESSIONS, N_TRIALS, N_DAYS = 3, 40, 754


def _populate(home: Path) -> None:
    """A home as a few sessions of research leave it: finished trials with their series."""
    rng = np.random.default_rng(0)
    config = TrialConfig()
    with Journal(home / "journal.db") as journal:
        for s in range(N_SESSIONS):
            sid = journal.sessions.create(
                goal=f"maximise validation Sharpe, session {s}", mode="cufolio_only",
                objective={"metric": "sharpe"}, proposer="tpe", budget=N_TRIALS, seed=s,
                data_source="synthetic", data_fingerprint=None, settings={},
                baseline_config=config.model_dump(),
            )  # fmt: skip
            for i in range(N_TRIALS):
                row = journal.trials.start(
                    sid, kind="search", config=config.model_dump(),
                    config_hash=config_hash(config), delta={"changes": {}}, parent_id=None,
                    seed=i, rationale="", proposer="tpe",
                )  # fmt: skip
                returns = rng.normal(0.0004, 0.01, N_DAYS)
                journal.trials.finish(
                    row.id, status="discard", objective=float(returns.mean() / returns.std()),
                    metrics={"sharpe": float(returns.mean() / returns.std())},
                    val_returns=returns.tolist(), final_weights=[0.05] * 20, elapsed_s=0.4,
                )  # fmt: skip


# The child is started by a bare interpreter (``-S``, no site) rather than by this process:
# Linux folds the parent's peak RSS into a child's at exec, and this process holds numpy and
# the journal. The launcher's own ~10 MB is below any command's peak, so it never shows.
_LAUNCHER = """
import os, sys, time
began = time.perf_counter()
quiet = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ, file_actions=quiet)
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - began, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


def _run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one child process, which must exit 0."""
    launcher = [sys.executable, "-S", "-c", _LAUNCHER, *argv]
    out = subprocess.run(launcher, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    wall, maxrss_kb, code = out.stdout.split()
    if code != "0":
        raise RuntimeError(f"{argv} exited {code}")
    return float(wall), int(maxrss_kb) / 1024  # Linux reports kilobytes


def _measure(argv: list[str], env: dict[str, str], runs: int) -> dict[str, float]:
    _run_once(argv, env)  # warm the page cache and the .pyc files
    samples = [_run_once(argv, env) for _ in range(runs)]
    return {
        "wall_s": statistics.median(w for w, _ in samples),
        "rss_mb": max(r for _, r in samples),
    }


def main(quick: bool = False) -> dict[str, Any]:
    """Times each command on an empty and a populated home, prints a table, returns the numbers."""
    runs = QUICK_RUNS if quick else RUNS
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as empty, tempfile.TemporaryDirectory() as full:
        _populate(Path(full))
        env = {**os.environ, "COLUMNS": "80"}
        results["python -c pass"] = _measure([sys.executable, "-c", "pass"], env, runs)
        for home_name, home in (("empty", empty), ("populated", full)):
            home_env = {**env, "ALPHALOOP_HOME": home}
            for command in COMMANDS:
                if command == ("--help",) and home_name == "populated":
                    continue  # --help never reads the home
                name = f"alphaloop {' '.join(command)}" + (
                    "" if command == ("--help",) else f" ({home_name} home)"
                )
                argv = [sys.executable, "-m", "alphaloop", *command]
                results[name] = _measure(argv, home_env, runs)
    floor = results["python -c pass"]["wall_s"]
    print(f"whole-process start-up; median wall of {runs} runs, peak RSS of any run")
    rows = [
        (
            name,
            f"{r['wall_s']:6.3f} s  {r['rss_mb']:6.1f} MB  {r['wall_s'] / floor:5.1f}x python",
        )
        for name, r in results.items()
    ]
    print_rows(rows)
    summary: list[SummaryRow] = [
        (
            f"CLI start: {name}",
            f"{r['wall_s']:.3f} s, {r['rss_mb']:.0f} MB",
            f"target {TARGET_S} s, {TARGET_MB:.0f} MB; {r['wall_s'] / floor:.1f}x python -c pass",
        )
        for name, r in results.items()
        if name != "python -c pass"
    ]
    return {"results": results, "summary": summary}


if __name__ == "__main__":
    main(parse_quick(__doc__.splitlines()[0]))
