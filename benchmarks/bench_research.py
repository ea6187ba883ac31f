"""Research efficiency, TPE against random search: ``python -m benchmarks.bench_research``.

Runs whole ``cufolio_only`` sessions on the embedded S&P 500 data through the library
(``create_session`` / ``run_session``, each in a temporary alphaloop home), the same trial
budget and session seeds for both proposers. For each proposer it reports the median over
seeds of the best validation objective reached, and the trial at which the median best-so-far
curve first reaches random search's final median. Trials are pure functions of their config
and seed, so both proposers face exactly the same problem; TPE's warm-up draws are the random
sampler's draws for the same seed, so the two curves part only once TPE's model takes over
(after 8 finished trials, baselines included).

Takes several minutes (2 x 5 sessions of 30 trials); ``--quick`` runs 2 x 2 sessions of 8.
Reports numbers only; it asserts nothing.
"""

from __future__ import annotations

import statistics
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from alphaloop.journal import Journal
from alphaloop.meta_agent.session import SessionSpec, create_session, run_session
from alphaloop.settings import Settings
from benchmarks._report import SummaryRow, parse_quick, print_rows, timed

PROPOSERS = ("tpe", "random")
BUDGET, SEEDS = 30, 5
QUICK_BUDGET, QUICK_SEEDS = 8, 2
NOISE_SEEDS = 2


def run_one(home: Path, proposer: str, seed: int, budget: int) -> list[float]:
    """The validation objective of each counted search trial of one session, in order."""
    settings = Settings(ALPHALOOP_HOME=str(home))
    spec = SessionSpec(
        goal="maximise validation Sharpe",
        mode="cufolio_only",
        budget=budget,
        proposer=proposer,
        data="sp500",
        seed=seed,
        noise_seeds=NOISE_SEEDS,
    )
    sid = create_session(spec, settings)
    run_session(sid, settings)
    with Journal(settings.journal_path) as journal:
        rows = journal.trials.of_session(sid, kind="search")
    # A crashed trial reached nothing.
    return [t.objective if t.objective is not None else -np.inf for t in rows if t.counted]


def first_reaching(curve: np.ndarray, level: float) -> int | None:
    """1-based index of the first trial whose best-so-far is at least ``level``."""
    hits = np.flatnonzero(curve >= level)
    return int(hits[0]) + 1 if hits.size else None


def bench(budget: int, seeds: int) -> dict[str, Any]:
    curves: dict[str, list[np.ndarray]] = {p: [] for p in PROPOSERS}
    seconds: dict[str, list[float]] = {p: [] for p in PROPOSERS}
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(seeds):
            for proposer in PROPOSERS:
                home = Path(tmp) / f"{proposer}-{seed}"
                took, objectives = timed(
                    lambda h=home, p=proposer, s=seed: run_one(h, p, s, budget)
                )
                curves[proposer].append(np.maximum.accumulate(objectives))
                seconds[proposer].append(took)
                print(
                    f"  {proposer:<7} seed {seed}: best {curves[proposer][-1][-1]:.4f} "
                    f"after {budget} trials ({took:.0f} s)",
                    flush=True,
                )
    median_curve = {p: np.median(np.stack(curves[p]), axis=0) for p in PROPOSERS}
    target = float(median_curve["random"][-1])
    out: dict[str, Any] = {"budget": budget, "seeds": seeds, "random_final_median": target}
    for p in PROPOSERS:
        per_seed = [first_reaching(c, target) for c in curves[p]]
        out[p] = {
            "final_median": float(median_curve[p][-1]),
            "first_reaching_random_final": first_reaching(median_curve[p], target),
            "per_seed_first_reaching": per_seed,
            "median_session_s": statistics.median(seconds[p]),
        }
    return out


def _trial(index: int | None, budget: int) -> str:
    return f"trial {index}" if index is not None else f"not within {budget}"


def summary(results: dict[str, Any]) -> list[SummaryRow]:
    budget, tpe, rnd = results["budget"], results["tpe"], results["random"]
    return [
        (
            f"best validation Sharpe after {budget} trials, TPE - random (median of "
            f"{results['seeds']} seeds)",
            f"{tpe['final_median'] - rnd['final_median']:+.4f}",
            f"TPE {tpe['final_median']:.4f}, random {rnd['final_median']:.4f}",
        ),
        (
            "trials to reach random's final median, TPE / random",
            f"{_trial(tpe['first_reaching_random_final'], budget)} / "
            f"{_trial(rnd['first_reaching_random_final'], budget)}",
            f"of {budget}",
        ),
    ]


def main(quick: bool = False) -> dict[str, Any]:
    budget, seeds = (QUICK_BUDGET, QUICK_SEEDS) if quick else (BUDGET, SEEDS)
    print(
        f"cufolio_only sessions on the embedded S&P 500 data: {budget} trials, "
        f"{NOISE_SEEDS} baseline seeds, session seeds 0..{seeds - 1}"
    )
    results = bench(budget, seeds)
    rows = []
    for p in PROPOSERS:
        r = results[p]
        rows.append(
            (
                p,
                f"median best {r['final_median']:.4f}; median curve reaches random's final "
                f"median ({results['random_final_median']:.4f}) at "
                f"{_trial(r['first_reaching_random_final'], budget)}; per seed "
                f"{r['per_seed_first_reaching']}; median session {r['median_session_s']:.0f} s",
            )
        )
    print_rows(rows)
    results["summary"] = summary(results)
    return results


if __name__ == "__main__":
    main(parse_quick(__doc__.splitlines()[0]))
