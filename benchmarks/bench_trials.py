"""Wall time of one trial per mode on the embedded data: ``python -m benchmarks.bench_trials``.

Runs :func:`~alphaloop.trials.run_trial` at the default knobs and session settings on
``load_market("sp500")`` (20 stocks; three validation years), for each mode, with a different
seed each run. The first run of a mode in a process pays one-off costs a session pays once too
(cvxpy canonicalising each LP shape, the baselines of the window, torch warming up); it is
reported apart, and the median is over the runs after it.

Then the ``ppo_only`` trial before and after its lean loops: SB3's own ``PPO`` (the code path
trials took before :class:`~alphaloop.rl_engine.LeanPPO`) against ``LeanPPO``, in alternating
runs on the same seeds (old then new, new then old, ...), so load on a shared machine falls on
both alike. It prints each side's median, their ratio, whether every pair gave the same daily
returns, and where a trial's time goes: model and env set-up, rollout collection (and the env
stepping inside it), the PPO update, and the evaluation (walk-forward, backtest, baselines).

``--quick`` runs each mode once after the first, and one old/new pair. Reports numbers only; it
asserts nothing, since timings depend on the machine and its load.
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

from stable_baselines3 import PPO

from alphaloop.knobs import MODES, TrialConfig
from alphaloop.market import MarketData, load_market
from alphaloop.rl_engine import BatchedPortfolioVecEnv, LeanPPO
from alphaloop.rl_engine import ppo as ppo_module
from alphaloop.trials import TrialBudget, run_trial
from benchmarks._report import SummaryRow, parse_quick, print_rows, timed

N_RUNS = 3
N_PAIRS = 5
# Targets on a 2-core machine (unified has none: it is ppo_only plus a CVaR overlay).
TARGET_S = {"cufolio_only": 5.0, "ppo_only": 5.0}
LOOPS: dict[str, type[PPO]] = {"old": PPO, "new": LeanPPO}
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


def ppo_trial(loops: type[PPO], data: MarketData, seed: int) -> tuple[float, dict, list]:
    """One default ``ppo_only`` trial trained by ``loops``: its wall seconds, where they went
    (and the trial's CPU seconds, as ``"cpu"``), and its daily returns."""
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
    return seconds, dict(parts), result.daily_returns


def compare_loops(n_pairs: int) -> dict[str, Any]:
    """Old and new ``ppo_only`` trials in alternating order on the same seeds."""
    data = load_market("sp500")
    times: dict[str, list[float]] = {"old": [], "new": []}
    parts: dict[str, dict[str, list[float]]] = {k: defaultdict(list) for k in LOOPS}
    identical = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in LOOPS:  # warm both up (torch, the baselines' cache)
            ppo_trial(LOOPS[name], data, seed=1000)
        for pair in range(n_pairs):
            order = list(LOOPS) if pair % 2 == 0 else list(reversed(LOOPS))
            returns = {}
            for name in order:
                seconds, split, returns[name] = ppo_trial(LOOPS[name], data, seed=pair)
                times[name].append(seconds)
                for part, value in split.items():
                    parts[name][part].append(value)
            identical &= returns["old"] == returns["new"]
    medians = {name: statistics.median(values) for name, values in times.items()}
    cpu = {name: statistics.median(parts[name]["cpu"]) for name in LOOPS}
    return {
        "pairs": n_pairs,
        "old_s": medians["old"],
        "new_s": medians["new"],
        "ratio": medians["old"] / medians["new"],
        "cpu_ratio": cpu["old"] / cpu["new"],
        "identical": identical,
        "parts": {
            name: {part: statistics.median(parts[name][part]) for part in PARTS} for name in LOOPS
        },
        "load": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }


def print_comparison(c: dict[str, Any]) -> None:
    print(
        f"\nppo_only before/after, default knobs and budget: SB3's loops (old) against "
        f"LeanPPO (new), {c['pairs']} alternating pair(s) on the same seeds"
    )
    rows = [
        ("old (SB3 PPO)", f"median {c['old_s']:6.2f} s"),
        ("new (LeanPPO)", f"median {c['new_s']:6.2f} s"),
        ("ratio old/new", f"{c['ratio']:.2f}x wall, {c['cpu_ratio']:.2f}x CPU time"),
        ("same daily returns", "yes, every pair" if c["identical"] else "NO"),
    ]
    for part in PARTS:
        old, new = c["parts"]["old"][part], c["parts"]["new"][part]
        note = PART_NOTES.get(part, "")
        rows.append((f"  {part}", f"old {old:6.2f} s   new {new:6.2f} s{note}"))
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
    rows.append(
        (
            f"ppo_only trial, SB3 loops / LeanPPO (medians of {c['pairs']} alternating)",
            f"{c['ratio']:.2f}x",
            f"{c['old_s']:.1f} s -> {c['new_s']:.1f} s"
            + (", same returns" if c["identical"] else ", RETURNS DIFFER"),
        )
    )
    return rows


def main(quick: bool = False) -> dict[str, Any]:
    """Times every mode and the PPO loops before and after, prints tables, returns the numbers."""
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
