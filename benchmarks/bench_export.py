"""``alphaloop export optuna`` at size, against a former export:
``python -m benchmarks.bench_export --before-tree DIR [--sizes 20,1000,10000]``.

``DIR`` holds the former code (``git archive REV | tar -x -C DIR``) and must read the same
journal. A session of N trials is journaled as a real one is (each search trial with the 754
daily validation returns, final weights, an LLM prompt and three folds of daily returns; every
7th raced out on one fold, every 50th a crash), cloned in SQL from rows written through the
Journal. Each size is exported cold, each export in a fresh Python process, side by side in one
run, in turn (before, journal, sqlite, before...):

- *before*: ``export_optuna`` of ``DIR`` into a new SQLite study;
- *journal*: ``export_optuna`` of this tree into a new Optuna journal file (a path: the default
  form), through Optuna's ``JournalStorage``;
- *sqlite*: the same into a new SQLite study, through Optuna's ``RDBStorage`` and
  ``Study.add_trials`` (``--sqlite-up-to``: the largest size it runs at, it is slow).

Each process times the export call (opening the storage and its imports included), the same
export again into the study it wrote (nothing new), and ``optuna.load_study`` of the study with
its trials (what optuna-dashboard reads first). Every study is read back and compared with the
*before* one (numbers, states, values, params, distributions, intermediate values, user attrs,
times) before any time is printed. Times are medians of the runs; trials per second and ratios
are of those medians.

Reports numbers only; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from alphaloop.journal import Journal
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.settings import Settings
from benchmarks._report import SummaryRow, print_rows
from tests.server.helpers import REPO, new_session

N_DAYS = 754  # validation days of the embedded S&P 500 data
FOLD_DAYS = 251
N_FOLDS = 3
N_ASSETS = 20
PROMPT = "x" * 3000  # an LLM proposal's prompt
SIDES = ("before", "journal", "sqlite")


def journal_session(settings: Settings, n: int) -> str:
    """A session of ``n`` search trials in a new journal at ``settings`` (see the module doc)."""
    with Journal(settings.journal_path) as j:
        sid = new_session(j, budget=n)
        config = TrialConfig(cvar_alpha=0.9)
        row = j.trials.start(
            sid,
            kind="search",
            config=config.model_dump(),
            config_hash=config_hash(config),
            delta={"changes": {"cvar_alpha": 0.9}, "rationale": "r"},
            parent_id=None,
            seed=0,
            rationale="r",
            proposer="llm",
            prompt=PROMPT,
        )
        for fold in range(N_FOLDS):
            j.folds.add(
                row.id,
                fold=fold,
                n_folds=N_FOLDS,
                start_date="2020-01-01",
                end_date="2020-12-31",
                objective=0.5,
                metrics={"sharpe": 0.5, "max_drawdown": 0.1},
                result={"sharpe": 0.5},
                returns=[0.0004 * ((d * 7 + fold) % 11 - 5) for d in range(FOLD_DAYS)],
                elapsed_s=0.01,
            )
        j.trials.finish(
            row.id,
            status="keep",
            objective=0.5,
            metrics={"sharpe": 0.5, "max_drawdown": 0.1},
            val_returns=[0.0004 * ((d * 7) % 11 - 5) for d in range(N_DAYS)],
            final_weights=[1 / N_ASSETS] * N_ASSETS,
            elapsed_s=0.01,
            reason="beats the incumbent",
        )
    _clone(settings.journal_path, sid, row.id, n)
    return sid


_VARIED = ("id", "idx", "status", "config", "seed", "objective", "metrics", "error")


def _clone(path: Path, sid: str, template: int, n: int) -> None:
    """Trials 1..n-1 of ``sid`` cloned from trial ``template``, with their folds: their verdict,
    knobs and objective varied; every 7th raced out (its last fold only), every 50th a crash."""
    with sqlite3.connect(path) as conn:
        cols = [r[1] for r in conn.execute("PRAGMA table_info(trials)") if r[1] not in _VARIED]
        kept = ", ".join(cols)
        conn.execute(
            "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?) "
            f"INSERT INTO trials (idx, status, config, seed, objective, metrics, error, {kept}) "
            "SELECT i, CASE WHEN i % 50 = 0 THEN 'crash' WHEN i % 7 = 0 THEN 'discard' "
            "WHEN i % 3 = 0 THEN 'keep' "
            "ELSE 'discard' END, "
            "json_set(config, '$.cvar_alpha', 0.85 + (i % 140) / 1000.0, "
            "'$.n_scenarios', 1000 + (i * 13 % 9000), '$.cufolio_hold_days', 5 + i % 56), i, "
            "CASE WHEN i % 50 = 0 THEN NULL ELSE 0.5 + (i * 37 % 1000) / 1000.0 END, "
            "json_set(metrics, '$.sharpe', 0.5 + (i * 37 % 1000) / 1000.0), "
            "CASE WHEN i % 50 = 0 THEN 'SolverError(''no solution'')' END, "
            f"{kept} FROM trials, k WHERE trials.id = ?",
            (n - 1, template),
        )
        fcols = [
            r[1]
            for r in conn.execute("PRAGMA table_info(trial_folds)")
            if r[1] not in ("id", "trial_id", "objective")
        ]
        fkept = ", ".join(f"f.{c}" for c in fcols)
        conn.execute(
            f"INSERT INTO trial_folds (trial_id, objective, {', '.join(fcols)}) "
            f"SELECT t.id, t.objective + (f.fold - 1) / 10.0, {fkept} "
            "FROM trials t, trial_folds f WHERE t.session_id = ? AND t.id != ? "
            "AND f.trial_id = ? AND t.status != 'crash' "
            f"AND (t.idx % 7 != 0 OR f.fold = {N_FOLDS - 1})",
            (sid, template, template),
        )


# One export in a fresh process of the tree on its PYTHONPATH: the call, the call again (nothing
# new), and the study read back. Prints the three times as JSON.
_CHILD = """
import json, sys, time
home, sid, storage = sys.argv[1:4]
from alphaloop.settings import Settings
from alphaloop.ops.export import export_optuna
settings = Settings(ALPHALOOP_HOME=home)
began = time.perf_counter()
export_optuna(settings, sid, storage)
first = time.perf_counter() - began
began = time.perf_counter()
again = export_optuna(settings, sid, storage)
assert again.added == 0, again
second = time.perf_counter() - began
import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
began = time.perf_counter()
opened = storage if "://" in storage else JournalStorage(JournalFileBackend(storage))
n = len(optuna.load_study(study_name=sid, storage=opened).get_trials(deepcopy=False))
load = time.perf_counter() - began
import alphaloop
print(json.dumps({"first": first, "again": second, "load": load, "n": n,
                  "code": alphaloop.__file__}))
"""


def _run(tree: Path, home: Path, sid: str, storage: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree), "ALPHALOOP_HOME": str(home)}
    done = subprocess.run(  # -P: the working directory is not on the path, only the tree
        [sys.executable, "-P", "-c", _CHILD, str(home), sid, storage],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the export into {storage} failed:\n{done.stderr[-3000:]}")
    got = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(got["code"]).is_relative_to(tree):
        raise SystemExit(f"ran {got['code']}, not the code in {tree}")
    return got


_READ_BACK = ("number", "state", "values", "params", "distributions", "intermediate_values",
              "user_attrs", "datetime_start", "datetime_complete")  # fmt: skip


def _read_back(storage: str, name: str) -> list[tuple[Any, ...]]:
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    opened = storage if "://" in storage else JournalStorage(JournalFileBackend(storage))
    study = optuna.load_study(study_name=name, storage=opened)
    return [tuple(getattr(t, f) for f in _READ_BACK) for t in study.get_trials(deepcopy=False)]


def _size(
    n: int, repeats: int, trees: dict[str, Path], sides: tuple[str, ...]
) -> dict[str, dict[str, float]]:
    """Median seconds of each side's export of ``n`` trials (cold, each into a new file), of
    the same export again, and of the study's load."""
    times: dict[str, dict[str, list[float]]] = {s: {} for s in sides}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        sid = journal_session(Settings(ALPHALOOP_HOME=str(home)), n)
        written: dict[str, str] = {}
        for r in range(repeats):
            for side in sides:
                file = Path(tmp) / f"{side}-{r}.{'log' if side == 'journal' else 'db'}"
                storage = str(file) if side == "journal" else f"sqlite:///{file}"
                got = _run(trees[side], home, sid, storage)
                if got["n"] != n:
                    raise SystemExit(f"{side} wrote {got['n']} trials of {n}")
                for key in ("first", "again", "load"):
                    times[side].setdefault(key, []).append(got[key])
                written[side] = storage
        want = _read_back(written["before"], sid)
        for side in sides[1:]:
            if _read_back(written[side], sid) != want:
                raise SystemExit(f"{side} and before wrote different studies of {n} trials")
    return {s: {k: statistics.median(v) for k, v in times[s].items()} for s in sides}


_SAID = {
    "before": "before: the former export, SQLite",
    "journal": "journal file (JournalStorage)",
    "sqlite": "SQLite (RDBStorage, Study.add_trials)",
}


def _t(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def main(argv: list[str] | None = None) -> list[SummaryRow]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before-tree", type=Path, required=True,
                        help="the former code (git archive REV | tar -x -C DIR)")  # fmt: skip
    parser.add_argument("--sizes", default="20,1000,10000", help="comma-separated trial counts")
    parser.add_argument("--sqlite-up-to", type=int, default=1000,
                        help="the largest size the sqlite side runs at")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of each under 5,000 trials (1 above; 5 up to 100)")  # fmt: skip
    args = parser.parse_args(argv)
    trees = {"before": args.before_tree.resolve(), "journal": REPO, "sqlite": REPO}
    load = os.getloadavg()
    print(f"Export to a new study, each in a fresh process (load average {load[0]:.1f} "
          f"{load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} CPUs):")  # fmt: skip
    rows: list[SummaryRow] = []
    for n in (int(s) for s in args.sizes.split(",")):
        repeats = 1 if n >= 5000 else max(args.repeats, 5) if n <= 100 else args.repeats
        sides = SIDES if n <= args.sqlite_up_to else SIDES[:2]
        got = _size(n, repeats, trees, sides)
        before = got["before"]["first"]
        print(f"{n:,} trials (medians of {repeats}; each study read back and compared):")
        print_rows([
            (_SAID[s], f"{_t(t['first'])} ({n / t['first']:.0f} trials/s, "
                       f"{before / t['first']:.2f}x before); again {_t(t['again'])} "
                       f"({got['before']['again'] / t['again']:.2f}x); "
                       f"load {_t(t['load'])} ({got['before']['load'] / t['load']:.2f}x)")
            for s, t in got.items()
        ])  # fmt: skip
        print(f"  load average now {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
        after = got["journal"]["first"]
        rows.append((f"export optuna, {n:,} trials, journal file, trials/s", f"{n / after:.0f}",
                     f"{before / after:.2f}x the former {n / before:.0f}"))  # fmt: skip
    return rows


if __name__ == "__main__":
    main()
