"""PPO throughput by advantage estimator: ``python -m benchmarks.bench_advantages [--quick]``.

Trains PPO at the default knobs and session budget on the embedded S&P 500 training window
(what a ``ppo_only`` trial trains on) once with each estimator (SB3's GAE, GRPO, REINFORCE++)
and once with GAE under drawdown truncation, same seed, and reports env steps per second side
by side. The critic-free estimators skip nothing PPO computes for the value head (it is zeroed,
not removed), so the differences are the advantage computation and the episodes' lengths.
Each configuration runs ``N_RUNS`` times and the median is kept. Reports numbers only; it
asserts nothing, since timings depend on the machine and its load.
"""

from __future__ import annotations

import statistics
import warnings
from typing import Any

from alphaloop.knobs import TrialConfig
from alphaloop.market import load_market
from alphaloop.rl_engine import ADVANTAGE_ESTIMATORS, DEFAULT_TOTAL_TIMESTEPS, train_ppo
from benchmarks._report import SummaryRow, parse_quick, print_rows

N_RUNS = 3
# A limit the untrained policy breaches in some episodes on the S&P 500 training window.
TRUNCATE_AT = 0.05


def _runs() -> list[tuple[str, dict[str, Any]]]:
    runs = [(name, {"advantage": name}) for name in ADVANTAGE_ESTIMATORS]
    runs.append(
        (
            f"gae, truncated at {TRUNCATE_AT:.0%}",
            {"truncate_drawdown": TRUNCATE_AT, "stop_properly": 0.5},
        )
    )
    return runs


def bench(total_timesteps: int, n_runs: int) -> dict[str, dict[str, float]]:
    data = load_market("sp500")
    train = data.returns[data.train]
    out: dict[str, dict[str, float]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train_ppo(train, TrialConfig(), 2048, seed=0)  # torch warms up outside the timings
        for name, options in _runs():
            rates, rewards = [], []
            for _ in range(n_runs):
                result = train_ppo(train, TrialConfig(), total_timesteps, seed=0, **options)
                rates.append(result.timesteps / result.seconds)
                rewards.append(result.curve[-1][1])
            out[name] = {
                "steps_per_s": statistics.median(rates),
                "timesteps": result.timesteps,
                "last_reward": rewards[-1],
            }
    return out


def summary(results: dict[str, Any]) -> list[SummaryRow]:
    gae = results["runs"]["gae"]["steps_per_s"]
    return [
        (
            f"PPO learn with {name} advantages, default knobs",
            f"{r['steps_per_s']:,.0f} steps/s",
            "the reference" if name == "gae" else f"x{r['steps_per_s'] / gae:.2f} of gae",
        )
        for name, r in results["runs"].items()
    ]


def main(quick: bool = False) -> dict[str, Any]:
    """Times PPO with each estimator, prints a table and returns the numbers."""
    total = DEFAULT_TOTAL_TIMESTEPS // 2 if quick else DEFAULT_TOTAL_TIMESTEPS
    n_runs = 1 if quick else N_RUNS
    results: dict[str, Any] = {"runs": bench(total, n_runs)}
    print(
        f"PPO on the embedded S&P 500 training window, default knobs, {total:,} env steps, "
        f"seed 0; median of {n_runs} run(s)"
    )
    print_rows(
        [
            (
                name,
                f"{r['steps_per_s']:8,.0f} steps/s   last curve point {r['last_reward']:+.4f}",
            )
            for name, r in results["runs"].items()
        ]
    )
    results["summary"] = summary(results)
    return results


if __name__ == "__main__":
    main(parse_quick(__doc__.splitlines()[0]))
