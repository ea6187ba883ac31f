"""Parallel trials, 1 against 2 workers: ``python -m benchmarks.bench_parallel``.

Runs a TPE ``cufolio_only`` session (embedded S&P 500 data) and a TPE ``ppo_only`` session
(synthetic data, a small PPO budget) through the library, each with 1 and then 2 workers, the
same session seed and budget, each in a temporary alphaloop home. For each it reports trials
per hour (every trial row run, baselines and confirmations included, over the session's wall
time, workers' start-up and finalize included), the best validation objective reached, and how
many search trials proposed the same config as the one-worker session.

What is identical across worker counts: a trial is a pure function of its config and seed,
and verdicts are given in index order, so the same proposals give the same rows and verdicts.
TPE's warm-up draws (until 8 trials have finished, baselines included) are seeded by the
proposal's position and match; after warm-up TPE with 2 workers proposes without knowing the
result of the trial still running (constant liar), so its sequence departs from one worker's.
Random search (``--proposer random``) matches for the whole session.

Takes several minutes; ``--quick`` runs smaller budgets. Reports numbers only; it asserts
nothing (timings depend on the machine and its load).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from alphaloop.journal import Journal
from alphaloop.meta_agent.session import SessionSpec, create_session, run_session
from alphaloop.settings import Settings
from alphaloop.trials import TrialBudget
from benchmarks._report import SummaryRow, parse_quick, print_rows

CASES = (  # mode, data, budget, quick budget, PPO env steps
    ("cufolio_only", "sp500", 16, 6, None),
    ("ppo_only", "synthetic", 8, 3, 2048),
)
WORKERS = (1, 2)
SEED = 7


def run_one(mode: str, data: str, budget: int, steps: int | None, workers: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as home:
        settings = Settings(ALPHALOOP_HOME=str(Path(home)))
        spec = SessionSpec(
            goal="maximise validation Sharpe",
            mode=mode,
            budget=budget,
            proposer="tpe",
            data=data,
            seed=SEED,
            noise_seeds=3,
            workers=workers,
            trial_budget=TrialBudget(total_timesteps=steps) if steps else TrialBudget(),
        )
        sid = create_session(spec, settings)
        began = time.perf_counter()
        final = run_session(sid, settings)
        wall = time.perf_counter() - began
        with Journal(settings.journal_path) as journal:
            rows = journal.trials.of_session(sid, series=False)
    ran = [t for t in rows if t.kind != "test" and t.status != "invalid"]
    return {
        "wall_s": wall,
        "trials": len(ran),
        "per_hour": len(ran) / wall * 3600,
        "best": final.best_validation_objective if final else None,
        "configs": [t.config_hash for t in rows if t.kind == "search" and t.counted],
    }


def main(quick: bool = False) -> dict[str, Any]:
    summary: list[SummaryRow] = []
    results: dict[str, Any] = {}
    print(f"  {os.cpu_count()} CPUs; TPE, session seed {SEED}")
    for mode, data, budget, quick_budget, steps in CASES:
        n = quick_budget if quick else budget
        runs = {w: run_one(mode, data, n, steps, w) for w in WORKERS}
        one = runs[1]
        for w, r in runs.items():
            same = sum(a == b for a, b in zip(r["configs"], one["configs"], strict=False))
            best = "-" if r["best"] is None else f"{r['best']:.4f}"
            print_rows(
                [
                    (f"{mode}, {w} worker(s)", f"{n} search trials on {data}"),
                    ("  trials run / wall", f"{r['trials']} in {r['wall_s']:.1f} s"),
                    ("  trials per hour", f"{r['per_hour']:.0f}"),
                    ("  best validation objective", best),
                    ("  configs as with 1 worker", f"{same} of {len(r['configs'])}"),
                ]
            )
            summary.append((f"{mode} trials/hour, {w} worker(s)", f"{r['per_hour']:.0f}", best))
        speedup = runs[2]["per_hour"] / one["per_hour"]
        summary.append((f"{mode} speed-up, 2 workers", f"{speedup:.2f}x", "2 cores"))
        results[mode] = runs
    return {"summary": summary, "results": results}


if __name__ == "__main__":
    main(parse_quick(__doc__.splitlines()[0]))
