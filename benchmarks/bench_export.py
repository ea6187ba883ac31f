"""``alphaloop export optuna`` at size: ``python -m benchmarks.bench_export [--sizes 1000,10000]``.

A session of N trials is journaled as a real one is (each search trial with the 754 daily
validation returns, final weights, an LLM prompt and three folds of daily returns; every 7th
raced out on one fold, every 50th a crash), cloned in SQL from rows written through the
Journal. Each size is exported cold into a new SQLite study file, side by side in one run:

- *before*: the former export, one Optuna call per trial (``Study.add_trials``: a transaction,
  a commit and its fsync per trial) after reading every fold with its daily returns;
- *after*: ``export_optuna`` as shipped: one transaction, new trials written in bulk.

Both write into Optuna's ``RDBStorage``; the study each writes is read back with
``optuna.load_study`` and checked equal (trial numbers, states, values, params, intermediate
values, user attrs) before any time is printed. Times are medians of ``--repeats`` runs taken
in turn (before, after, before...); trials per second and the ratio are of those medians. A
re-export of an unchanged session (the study already written) is timed too.

Reports numbers only; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
from pathlib import Path
from typing import Any

from alphaloop.journal import Journal
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.settings import Settings
from benchmarks._report import SummaryRow, print_rows, timed
from tests.server.helpers import new_session

N_DAYS = 754  # validation days of the embedded S&P 500 data
FOLD_DAYS = 251
N_FOLDS = 3
N_ASSETS = 20
PROMPT = "x" * 3000  # an LLM proposal's prompt


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


def _before(settings: Settings, sid: str, storage: str) -> None:
    """The former export of a new study: every fold read with its daily returns, then one
    Optuna call per trial, each its own transaction (``Study.add_trials`` on the storage as
    Optuna opens it)."""
    import optuna

    from alphaloop.journal import FoldScores
    from alphaloop.ops import export

    with Journal(settings.journal_path) as j:
        session = j.sessions.get(sid)
        rows = j.trials.of_session(sid, series=False)
        records = j.folds.of_session(sid)
    folds = {
        tid: FoldScores(n_folds=fs[0].n_folds, objectives={f.fold: f.objective for f in fs})
        for tid, fs in records.items()
    }
    wanted, _ = export._trials(session, rows, folds)
    study = optuna.create_study(storage=storage, study_name=sid, direction="maximize")
    for key, value in export._study_attrs(session).items():
        study.set_user_attr(key, value)
    study.add_trials(wanted)


def _after(settings: Settings, sid: str, storage: str) -> None:
    from alphaloop.ops.export import export_optuna

    export_optuna(settings, sid, storage)


def _read_back(storage: str, name: str) -> list[tuple[Any, ...]]:
    import optuna

    study = optuna.load_study(study_name=name, storage=storage)
    return [
        (t.number, t.state, t.value, t.params, t.intermediate_values,
         {k: v for k, v in t.user_attrs.items()})
        for t in study.get_trials(deepcopy=False)
    ]  # fmt: skip


def _size(n: int, repeats: int) -> tuple[float, float, float, int]:
    """Median seconds of the before and after exports of ``n`` trials (cold, each into a new
    file), and of the after export again into the study it wrote (nothing changed); and how
    many trials the study holds."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(ALPHALOOP_HOME=str(Path(tmp) / "home"))
        sid = journal_session(settings, n)
        times: dict[str, list[float]] = {"before": [], "after": [], "again": []}
        studies: dict[str, str] = {}
        for r in range(repeats):
            for name, run in (("before", _before), ("after", _after)):
                storage = f"sqlite:///{Path(tmp) / f'{name}-{r}.db'}"
                elapsed, _ = timed(lambda: run(settings, sid, storage))  # noqa: B023
                times[name].append(elapsed)
                studies[name] = storage
            elapsed, _ = timed(lambda: _after(settings, sid, studies["after"]))
            times["again"].append(elapsed)
        before, after = _read_back(studies["before"], sid), _read_back(studies["after"], sid)
        if before != after:
            raise SystemExit(f"the two exports of {n} trials differ: not comparable")
    return (statistics.median(times["before"]), statistics.median(times["after"]),
            statistics.median(times["again"]), len(after))  # fmt: skip


def main(argv: list[str] | None = None) -> list[SummaryRow]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 trials, once")
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated trial counts")
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs of each under 5,000 trials (1 above)"
    )
    args = parser.parse_args(argv)
    sizes = (300,) if args.quick else tuple(int(s) for s in args.sizes.split(","))
    load = os.getloadavg()
    print(f"Export to a new SQLite study (load average {load[0]:.1f} {load[1]:.1f} "
          f"{load[2]:.1f} on {os.cpu_count()} CPUs):")  # fmt: skip
    rows: list[SummaryRow] = []
    for n in sizes:
        repeats = 1 if args.quick or n >= 5000 else args.repeats
        before, after, again, count = _size(n, repeats)
        print(f"{n:,} trials ({count:,} in the study; medians of {repeats}):", flush=True)
        print_rows([
            ("before: Study.add_trials, a commit per trial",
             f"{before:.1f} s ({n / before:.0f} trials/s)"),
            ("after: one transaction, rows in bulk", f"{after:.1f} s ({n / after:.0f} trials/s)"),
            ("after / before, throughput", f"{before / after:.1f}x"),
            ("after, again into the same study (nothing new)", f"{again:.1f} s"),
        ])  # fmt: skip
        rows.append((f"export optuna, {n:,} trials, trials/s", f"{n / after:.0f}",
                     f"{before / after:.1f}x the former {n / before:.0f}"))  # fmt: skip
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return rows


if __name__ == "__main__":
    main()
