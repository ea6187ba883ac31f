"""The portfolio manager: ``python -m benchmarks.bench_pm``.

For each policy kind (``mean_cvar``, ``ppo``, ``unified``; PPO trained for 256 env steps on the
synthetic data): the median latency of ``pm tick`` as the command runs it (load the policy and
prices, decide, check the kill switch, trade on the paper ledger, journal), over consecutive
days; and the deployment check, the largest absolute difference between the ``pm run`` book's
equity and the evaluator's backtest of the same strategy on the same window (a 100,000 book).
Reports numbers only; it asserts nothing.
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from alphaloop import library
from alphaloop.journal import Journal
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.market import load_market
from alphaloop.ops import pm as ops_pm
from alphaloop.rl_engine import save_policy, train_ppo
from alphaloop.settings import Settings
from benchmarks._report import SummaryRow, parse_quick, print_rows, timed

DATA = "synthetic:3"
CONFIG = TrialConfig(n_scenarios=2000, cufolio_hold_days=5, rebal_freq=1, n_steps=64,
                     batch_size=32, lookback=10, max_position_pct=0.25)  # fmt: skip
MODES = {"mean_cvar": "cufolio_only", "ppo": "ppo_only", "unified": "unified"}
START, END = "2013-07-01", "2013-09-30"


def _policy(journal: Journal, settings: Settings, kind: str) -> int:
    sid = journal.sessions.create(
        goal="benchmark", mode=MODES[kind], objective={"metric": "sharpe"}, proposer="random",
        budget=1, seed=0, data_source=DATA, data_fingerprint=None, settings={},
        baseline_config=CONFIG.model_dump(),
    )  # fmt: skip
    trial = journal.trials.start(
        sid, kind="search", config=CONFIG.model_dump(), config_hash=config_hash(CONFIG),
        delta={"changes": {}}, parent_id=None, seed=0, rationale="", proposer="random",
    )  # fmt: skip
    files: dict[str, Any] = {}
    if kind != "mean_cvar":
        data = load_market(DATA)
        model = train_ppo(data.returns[data.train], CONFIG, 256, 2, 0).model
        raw = save_policy(model, settings.home / f"{kind}.zip")
        path, sha = library.copy_into_library(raw, settings.policies_dir)
        files = {"path": str(path), "sha256": sha}
    return journal.policies.add(
        kind=kind, source="manual", session_id=sid, trial_id=trial.id, mode=MODES[kind],
        config=CONFIG.model_dump(), config_hash=config_hash(CONFIG), seed=0,
        symbols=list(load_market(DATA).symbols), data_spec={"data": DATA},
        trial_budget={"eval_cost_bps": 10.0}, objective={"metric": "sharpe"}, **files,
    ).id  # fmt: skip


def main(quick: bool = False) -> dict[str, Any]:
    n_ticks = 5 if quick else 15
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as home:
        os.environ["ALPHALOOP_HOME"] = str(Path(home))
        settings = Settings().model_copy(update={"pm_max_turnover": 2.0, "pm_max_drawdown": 0.9})
        settings.home.mkdir(parents=True, exist_ok=True)
        for kind in MODES:
            with Journal(settings.journal_path) as journal:
                pid = _policy(journal, settings, kind)
                library.activate(journal, settings, pid)
            days = pd.bdate_range(START, periods=n_ticks)
            times = [
                timed(lambda d=d, k=kind: ops_pm.pm_tick(settings, date=str(d.date()), book=k))[0]
                for d in days
            ]
            report = ops_pm.pm_run(settings, start=START, end=END, policy_id=pid)
            results[kind] = {
                "tick_median_s": statistics.median(times),
                "run_days": len(report.dates),
                "max_abs_diff": report.max_abs_diff,
            }
    rows = [
        (k, f"pm tick median {v['tick_median_s'] * 1e3:.0f} ms; pm run over {v['run_days']:.0f} "
            f"days: max |equity - evaluator| {v['max_abs_diff']:.2e}")
        for k, v in results.items()
    ]  # fmt: skip
    print("portfolio manager (synthetic data, 6 assets)")
    print_rows(rows)
    summary: list[SummaryRow] = [
        (f"pm tick, {k}", f"{v['tick_median_s'] * 1e3:.0f} ms", "median")
        for k, v in results.items()
    ]
    summary.append(
        (
            "pm run vs evaluator",
            f"{max(v['max_abs_diff'] for v in results.values()):.1e}",
            "max |equity diff|",
        )
    )
    return {"kinds": results, "summary": summary}


if __name__ == "__main__":
    main(parse_quick(__doc__ or ""))
