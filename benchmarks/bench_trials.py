"""Wall time of one trial per mode on the embedded data: ``python -m benchmarks.bench_trials``.

Runs :func:`~alphaloop.trials.run_trial` at the default knobs and session settings on
``load_market("sp500")`` (20 stocks; three validation years), for each mode, with a different
seed each run. The first run of a mode in a process pays one-off costs a session pays once too
(cvxpy canonicalising each LP shape, the baselines of the window, torch warming up); it is
reported apart, and the median is over the runs after it.

Then the ``ppo_only`` trial by SB3's own ``PPO`` (the reference) and by ``NumpyPPO`` (the
trainer: SB3's loops with the gradients worked out in numpy), in rounds on the same seeds with
the order alternated each round, so load on a shared machine falls on both alike. It prints each
trainer's median, the ratio, how far NumpyPPO's daily returns are from SB3's, and where a
trial's time goes: model and env set-up, rollout collection (and the env stepping inside it),
the PPO update, and the evaluation (walk-forward, backtest, baselines).

``--quick`` runs each mode once after the first, and one round of the comparison. Reports
numbers only; it asserts nothing, since timings depend on the machine and its load.
"""

from __future__ import annotations

import os
import statistics
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

import numpy as np
from stable_baselines3 import PPO

from alphaloop.knobs import TrialConfig
from alphaloop.market import MarketData, load_market
from alphaloop.rl_engine import BatchedPortfolioVecEnv, NumpyPPO
from alphaloop.rl_engine import ppo as ppo_module
from alphaloop.trials import TrialBudget, run_trial
from alphaloop.vocabulary import MODES
from benchmarks._report import SummaryRow, parse_quick, print_rows, timed

N_RUNS = 3
N_PAIRS = 5
# Targets on a 2-core machine (unified has none: it is ppo_only plus a CVaR overlay).
TARGET_S = {"cufolio_only": 5.0, "ppo_only": 5.0}
LOOPS: dict[str, type[PPO]] = {"sb3": PPO, "numpy": NumpyPPO}
PARTS = ("set-up", "rollouts", "env stepping", "update", "evaluation", "cpu")
PART_NOTES = {"env stepping": "  (inside rollouts)", "cpu": "  (the whole trial's CPU time)"}


def bench_mode(mode: str, n_runs: int) -> dict[str, Any]:
    data = load_market("sp500")
    budget = TrialBudget()
    times = []
    objective = float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(n_runs + 1):
            seconds, result = timed(
                lambda s=seed: run_trial(mode, TrialConfig(), data, budget, seed=s)
            )
            times.append(seconds)
            objective = result.objective
    return {
        "first_s": times[0],
        "median_s": statistics.median(times[1:]),
        "runs": n_runs,
        "last_objective": objective,
    }


@contextmanager
def _stopwatch(parts: dict[str, float], targets: list[tuple[Any, str, str]]) -> Iterator[None]:
    """Adds the wall time of each call of ``owner.attr`` to ``parts[key]``."""

    def timing(original: Callable[..., Any], key: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                parts[key] += time.perf_counter() - began

        return call

    with ExitStack() as stack:
        for owner, attr, key in targets:
            original = getattr(owner, attr)
            stack.enter_context(mock.patch.object(owner, attr, timing(original, key)))
        yield


def ppo_trial(loops: type[PPO], data: MarketData, seed: int) -> tuple[float, dict, list, float]:
    """One default ``ppo_only`` trial trained by ``loops``: its wall seconds, where they went
    (and the trial's CPU seconds, as ``"cpu"``), its daily returns and its objective."""
    parts: dict[str, float] = defaultdict(float)
    targets = [
        (ppo_module, "make_ppo", "set-up"),
        (ppo_module, "_batched_env", "set-up"),
        (ppo_module, "_learn", "learn"),
        (loops, "collect_rollouts", "rollouts"),
        (loops, "train", "update"),
        (BatchedPortfolioVecEnv, "step_wait", "env stepping"),
    ]
    with mock.patch.object(ppo_module, "PPO_CLASS", loops), _stopwatch(parts, targets):
        cpu_began = time.process_time()
        seconds, result = timed(
            lambda: run_trial("ppo_only", TrialConfig(), data, TrialBudget(), seed=seed)
        )
        parts["cpu"] = time.process_time() - cpu_began
    parts["set-up"] += parts.pop("learn") - parts["rollouts"] - parts["update"]
    parts["evaluation"] = seconds - parts["set-up"] - parts["rollouts"] - parts["update"]
    return seconds, dict(parts), result.daily_returns, result.objective


def compare_loops(n_rounds: int) -> dict[str, Any]:
    """SB3's and the numpy ``ppo_only`` trials on the same seeds, the order alternated each
    round so load on a shared machine falls on both alike."""
    data = load_market("sp500")
    times: dict[str, list[float]] = {name: [] for name in LOOPS}
    parts: dict[str, dict[str, list[float]]] = {name: defaultdict(list) for name in LOOPS}
    objectives: dict[str, list[float]] = {name: [] for name in LOOPS}
    numpy_gap = 0.0
    names = list(LOOPS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in LOOPS:  # warm each up (torch, the baselines' cache)
            ppo_trial(LOOPS[name], data, seed=1000)
        for round_ in range(n_rounds):
            returns = {}
            for name in names if round_ % 2 == 0 else names[::-1]:
                seconds, split, returns[name], objective = ppo_trial(LOOPS[name], data, round_)
                times[name].append(seconds)
                objectives[name].append(objective)
                for part, value in split.items():
                    parts[name][part].append(value)
            gap = np.abs(np.asarray(returns["numpy"]) - np.asarray(returns["sb3"])).max()
            numpy_gap = max(numpy_gap, float(gap))
    medians = {name: statistics.median(values) for name, values in times.items()}
    cpu = {name: statistics.median(parts[name]["cpu"]) for name in LOOPS}
    return {
        "rounds": n_rounds,
        "median_s": medians,
        "cpu_s": cpu,
        "numpy_gap": numpy_gap,
        "objective_gap": max(
            abs(x - y) for x, y in zip(objectives["numpy"], objectives["sb3"], strict=True)
        ),
        "parts": {
            name: {part: statistics.median(parts[name][part]) for part in PARTS} for name in LOOPS
        },
        "load": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }


def print_comparison(c: dict[str, Any]) -> None:
    med, cpu = c["median_s"], c["cpu_s"]
    print(
        f"\nppo_only trial, default knobs and budget, by trainer: SB3's PPO (the reference), "
        f"NumpyPPO (the trainer); {c['rounds']} round(s) on the same seeds"
    )
    rows = [(name, f"median {med[name]:6.2f} s   CPU {cpu[name]:6.2f} s") for name in LOOPS]
    rows += [
        (
            "sb3 / numpy",
            f"{med['sb3'] / med['numpy']:.2f}x wall, {cpu['sb3'] / cpu['numpy']:.2f}x CPU",
        ),
        (
            "numpy: largest gap to SB3",
            f"{c['numpy_gap']:.1e} in a daily return, {c['objective_gap']:.1e} in the objective",
        ),
    ]
    for part in PARTS:
        note = PART_NOTES.get(part, "")
        times = "   ".join(f"{name} {c['parts'][name][part]:5.2f} s" for name in LOOPS)
        rows.append((f"  {part}", times + note))
    if c["load"] is not None:
        rows.append(("load average (1, 5, 15 min)", ", ".join(f"{x:.2f}" for x in c["load"])))
    print_rows(rows)


def summary(results: dict[str, Any]) -> list[SummaryRow]:
    rows = []
    for mode in MODES:
        r = results[mode]
        target = TARGET_S.get(mode)
        rows.append(
            (
                f"one {mode} trial, default knobs, sp500 (median of {r['runs']})",
                f"{r['median_s']:.1f} s",
                f"< {target:g} s" if target else f"first run {r['first_s']:.1f} s",
            )
        )
    c = results["ppo_loops"]
    med = c["median_s"]
    rows.append(
        (
            f"ppo_only trial, SB3's PPO / NumpyPPO (medians of {c['rounds']} rounds)",
            f"{med['sb3'] / med['numpy']:.2f}x",
            f"{med['sb3']:.1f} s / {med['numpy']:.1f} s; numpy within "
            f"{c['numpy_gap']:.0e} of SB3's daily returns",
        )
    )
    return rows


def main(quick: bool = False) -> dict[str, Any]:
    """Times every mode and the PPO trainer against SB3's, prints tables, returns the numbers."""
    n_runs = 1 if quick else N_RUNS
    results: dict[str, Any] = {mode: bench_mode(mode, n_runs) for mode in MODES}
    print(
        f"one trial per mode on the embedded S&P 500 data, default knobs and budget; "
        f"median of {n_runs} run(s) after a first one"
    )
    rows = []
    for mode in MODES:
        r = results[mode]
        target = TARGET_S.get(mode)
        rows.append(
            (
                mode,
                f"median {r['median_s']:6.2f} s   first {r['first_s']:6.2f} s"
                + (f"   target < {target:g} s" if target else ""),
            )
        )
    print_rows(rows)
    results["ppo_loops"] = compare_loops(1 if quick else N_PAIRS)
    print_comparison(results["ppo_loops"])
    results["summary"] = summary(results)
    return results


if __name__ == "__main__":
    main(parse_quick(__doc__.splitlines()[0]))
