"""What the research loop pays to read its history: ``python -m benchmarks.bench_journal``.

Every search trial reads the session's finished trials twice (once to propose, once to race its
first fold; a trial that passes that screen once more for its verdict). This fills a journal
with trials shaped like a ``cufolio_only`` session's (a validation window of 754 daily returns,
metrics, baselines, 20 final weights) and times one read of the whole history as the loop does
it, without the per-day series (``Journal.trials.of_session(series=False)``), against a full
read, which parses every trial's daily returns. The loop's reading cost per trial is two lean
reads; it used to be four full ones. Beside it, the check that a proposal is not a config the
session already ran: one indexed lookup (``Journal.trials.twin``) against the third lean read
of the whole history it used to be. And the loop's reads as it makes them now: a followed
session (``Journal.trials.follow``) reads only the rows written since its last read, here one.
Medians of 5 reads. Reports numbers only; it asserts nothing.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from alphaloop.journal import Journal
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.metrics import compute_metrics
from benchmarks._report import SummaryRow, parse_quick, print_rows, timed

SIZES = (100, 300, 1000)
QUICK_SIZES = (100, 300)
N_READS = 5


def _median_read(journal: Journal, session_id: str, series: bool) -> float:
    return statistics.median(
        timed(lambda: journal.trials.of_session(session_id, series=series))[0]
        for _ in range(N_READS)
    )


def _median_followed_read(journal: Journal, session_id: str, trial_id: int) -> float:
    """A followed read (``Journal.trials.follow``) after one row was written: what each of the
    loop's reads finds, a trial having started or finished since the read before."""
    followed = journal.trials.follow(session_id)
    followed.rows()
    times = []
    for i in range(N_READS):
        journal.trials.set_curve(trial_id, [[i, 0.5]])
        times.append(timed(followed.rows)[0])
    return statistics.median(times)


def main(quick: bool = False) -> dict[str, Any]:
    """Times full and lean reads at growing history sizes, prints a table, returns the numbers."""
    sizes = QUICK_SIZES if quick else SIZES
    rng = np.random.default_rng(0)
    config = TrialConfig()
    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as home, Journal(Path(home) / "journal.db") as journal:
        sid = journal.sessions.create(
            goal="benchmark", mode="cufolio_only", objective={"metric": "sharpe"},
            proposer="random", budget=max(sizes), seed=0, data_source="synthetic",
            data_fingerprint=None, settings={}, baseline_config=config.model_dump(),
        )  # fmt: skip
        for n in range(1, max(sizes) + 1):
            returns = rng.normal(0.0004, 0.01, 754)
            metrics = compute_metrics(returns, np.full(754, 0.01)).model_dump()
            row = journal.trials.start(
                sid, kind="search", config=config.model_dump(), config_hash=config_hash(config),
                delta={"changes": {}}, parent_id=None, seed=0, rationale="", proposer="random",
            )  # fmt: skip
            journal.trials.finish(
                row.id, status="discard", objective=metrics["sharpe"], metrics=metrics,
                baselines={"equal_weight": metrics, "min_cvar": metrics},
                val_returns=returns.tolist(), final_weights=[0.05] * 20, elapsed_s=0.4,
            )  # fmt: skip
            if n in sizes:
                results[n] = {
                    "full_s": _median_read(journal, sid, True),
                    "lean_s": _median_read(journal, sid, False),
                    "followed_s": _median_followed_read(journal, sid, row.id),
                    "twin_s": statistics.median(
                        timed(lambda: journal.trials.twin(sid, "no such config"))[0]
                        for _ in range(N_READS)
                    ),
                }
    print("reading a session's history, as every search trial does; medians of 5 reads")
    rows = []
    for n, r in results.items():
        before, after = 4 * r["full_s"], 2 * r["lean_s"]
        r["ratio"] = before / after
        rows.append(
            (
                f"{n:>5} trials",
                f"full read {r['full_s'] * 1e3:6.1f} ms   lean read {r['lean_s'] * 1e3:5.1f} ms"
                f"   per trial: 4 full {before * 1e3:6.0f} ms -> 2 lean {after * 1e3:4.0f} ms"
                f"   ({r['ratio']:.0f}x)   one row written since: followed read "
                f"{r['followed_s'] * 1e3:.2f} ms ({r['lean_s'] / r['followed_s']:.0f}x)"
                f"   duplicate check: a lean read -> lookup "
                f"{r['twin_s'] * 1e3:.2f} ms ({r['lean_s'] / r['twin_s']:.0f}x)",
            )
        )
    print_rows(rows)
    largest = max(results)
    r = results[largest]
    summary: list[SummaryRow] = [
        (
            f"loop's history reads per trial at {largest} trials, before / after",
            f"{r['ratio']:.1f}x",
            f"{4 * r['full_s'] * 1e3:.0f} ms vs {2 * r['lean_s'] * 1e3:.0f} ms",
        ),
        (
            f"a read of the history at {largest} trials, one row written since: lean / followed",
            f"{r['lean_s'] / r['followed_s']:.0f}x",
            f"{r['lean_s'] * 1e3:.1f} ms vs {r['followed_s'] * 1e3:.2f} ms",
        ),
        (
            f"duplicate check per proposal at {largest} trials, history read / lookup",
            f"{r['lean_s'] / r['twin_s']:.0f}x",
            f"{r['lean_s'] * 1e3:.1f} ms vs {r['twin_s'] * 1e3:.2f} ms",
        ),
    ]
    return {"sizes": results, "summary": summary}


if __name__ == "__main__":
    main(parse_quick(__doc__.splitlines()[0]))
