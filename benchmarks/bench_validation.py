"""The validation suite's statistics against answers known by construction:
``python -m benchmarks.bench_validation`` (``--quick`` for a smoke run, ``--arm`` to choose).

Arms:

* pbo: PBO by CSCV on trials with and without a real edge, and what CSCV costs. Each seed draws
  50 trials x 750 days (a session's validation window, about three years): pure noise (every
  trial N(0, 1%)), then the same noise with one trial given a real edge of +0.1% a day (a daily
  Sharpe of 0.1, about 1.6 a year) or +0.2% (about 3.2 a year). CSCV at S = 16 (12,870 splits)
  should give PBO near 1/2 for the noise and near 0 for an edge the data can tell apart from
  the luck of the best of 50. Alongside, the effective number of independent trials (Li & Ji,
  2005) of the same noise, and of trials that share a common factor as a session's trials
  share a window. The time is the median of 5 CSCV runs at S = 16 on 50 x 750.
* size: the paired Sharpe-difference test's size, the share of pairs of equal Sharpe it calls
  better, at 5% and at 0.25% (the far tail, where the pick's multiplicity levels live), on
  four kinds of returns (:func:`pair`) of TEST-like lengths (520 and 756 days) and the span
  of nine folds (6,804 days), old against new on the same pairs: the former Newey-West test,
  Ledoit & Wolf's bootstrap as their code studentizes the observed days (prewhitened Parzen
  HAC), today's bootstrap (the observed days studentized as each resample is) and today's
  standard error with a normal p-value. Wilson 95% intervals.
* mde: the minimum detectable edge, checked: pairs whose true Sharpe difference is the edge
  the test said it would detect with 80% power at 5%, and how often it does.
* timing: one paired test at one, three and nine folds of days (756, 2,268, 6,804), the
  former test against today's at the keep rule's and TEST's resamples, and one StepM over a
  session's 20 configs: CPU seconds (one BLAS thread), interleaved rounds, medians.
* family: the pick's multiplicity on families of 20 configs shaped like a session's (:func:
  `family`: three folds of days, half the configs raced out after the latest fold, their
  excesses over the default correlated, i.i.d. or on an AR(1) 0.4 common factor): how often
  each rule names any config when none beats the default (the family-wise error, 5% asked),
  and how often it names the one config planted +0.3 or +0.45 of Sharpe above it (about 2.5
  and 4 standard errors of its difference, where the rules part). The rules:
  Šidák over Li & Ji's effective count of the excesses (the former pick's), Šidák over all
  20, each with the former Newey-West test; StepM; StepM with Hansen's recentring.

Reports numbers only; it asserts nothing.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from alphaloop.validation import cscv_pbo
from alphaloop.validation.excess import minimum_detectable_edge, sharpe_difference
from alphaloop.validation.sharpe import effective_trials
from benchmarks._report import SummaryRow, print_rows, timed

N_TRIALS, N_DAYS, N_BLOCKS = 50, 750, 16
EDGES = (0.001, 0.002)  # per day, on a daily volatility of 1%
SEEDS, QUICK_SEEDS = 8, 3
N_TIMINGS = 5
ARMS = ("pbo", "size", "mde", "timing", "family")

# The paired pairs: a common market move, each book's own noise, equal means (equal Sharpe).
MU, MARKET, OWN = 0.00034, 0.01, 0.004  # about 0.5 of annual Sharpe each
KINDS = ("iid", "ar(1) 0.3", "garch(1,1)", "persistent 0.97")
LENGTHS = (520, 756)
FOLD_SPAN = 6804  # nine three-year folds
METHODS = ("newey_west", "bootstrap_parzen", "bootstrap", "hac")
LABELS = {
    "newey_west": "former (Newey-West, normal)",
    "bootstrap_parzen": "Ledoit & Wolf's code (Parzen-pw observed)",
    "bootstrap": "today (studentized block bootstrap)",
    "hac": "today's se, normal p-value",
}
SIMS, QUICK_SIMS, SPAN_SIMS = 2000, 40, 200
LEVELS = (0.05, 0.0025)


def pair(kind: str, n: int, rng: np.random.Generator, edge: float = 0.0) -> tuple[Any, Any]:
    """Two books of equal Sharpe (``a``'s raised by ``edge`` of annualised Sharpe): a common
    market move plus each one's own noise, i.i.d. normal; every shock AR(1) 0.3; under a
    common GARCH(1,1) volatility (0.05, 0.1, 0.85); or with a persistent component (AR(1)
    0.97, a stationary sd of 0.1% a day) that one book holds and the other sells, so their
    difference carries it (11% of its daily variance, 89% of its long-run variance)."""
    from scipy.signal import lfilter

    burn = 300
    m = n + burn
    z0, z1, z2 = rng.standard_normal((3, m))
    extra = np.zeros(m)
    if kind == "ar(1) 0.3":
        z0, z1, z2 = (lfilter([1.0], [1.0, -0.3], z) * math.sqrt(1 - 0.09) for z in (z0, z1, z2))
    elif kind == "garch(1,1)":
        h, eps = np.ones(m), np.zeros(m)
        for t in range(m):
            if t:
                h[t] = 0.05 + 0.1 * eps[t - 1] ** 2 + 0.85 * h[t - 1]
            eps[t] = math.sqrt(h[t]) * z0[t]
        z0, z1, z2 = eps, np.sqrt(h) * z1, np.sqrt(h) * z2
    elif kind == "persistent 0.97":
        shocks = rng.standard_normal(m) * math.sqrt(1 - 0.97**2) * 0.001
        extra = lfilter([1.0], [1.0, -0.97], shocks)
    a = MU + MARKET * z0 + OWN * z1 + extra
    b = MU + MARKET * z0 + OWN * z2 - extra
    if edge:
        a = a + edge / math.sqrt(252) * a[burn:].std()
    return a[burn:], b[burn:]


def _size_task(task: tuple[str, int, int, int]) -> dict[str, list[float]]:
    kind, n, sims, seed = task
    rng = np.random.default_rng([seed, n, KINDS.index(kind)])
    out: dict[str, list[float]] = {m: [] for m in METHODS}
    for _ in range(sims):
        a, b = pair(kind, n, rng)
        for m in METHODS:
            out[m].append(sharpe_difference(a, b, method=m).p_value)
    return out


def _rate(k: int, n: int) -> str:
    from benchmarks.bench_generalisation import wilson

    lo, hi = wilson(k, n)
    return f"{k}/{n} = {k / n:.2%} [{lo:.2%}, {hi:.2%}]"


def _pool(fn: Any, tasks: list[Any], workers: int) -> list[Any]:
    if workers <= 1:
        return [fn(t) for t in tasks]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, tasks))


def size_arm(quick: bool, workers: int, sims: int | None) -> list[SummaryRow]:
    """The paired test's size, old against new on the same pairs (see the module docstring)."""
    n_sims = sims or (QUICK_SIMS if quick else SIMS)
    cells = [(k, n, n_sims) for k in KINDS for n in LENGTHS]
    cells.append(("persistent 0.97", FOLD_SPAN, max(n_sims // 10, 4)))
    cells.append(("ar(1) 0.3", FOLD_SPAN, max(n_sims // 10, 4)))
    pieces = 8
    tasks = [(k, n, -(-s // pieces), seed) for k, n, s in cells for seed in range(pieces)]
    seconds, found = timed(lambda: _pool(_size_task, tasks, workers))
    print(f"\nsize: the paired test on pairs of equal Sharpe, rejections ({seconds:.0f} s)")
    summary: list[SummaryRow] = []
    for k, n, _ in cells:
        got = [f for t, f in zip(tasks, found, strict=True) if t[:2] == (k, n)]
        rows = []
        for m in METHODS:
            p = np.array([x for f in got for x in f[m]])
            cols = [_rate(int(np.sum(p < lv)), p.size) for lv in LEVELS]
            rows.append((f"{LABELS[m]}", f"at 5%: {cols[0]}   at 0.25%: {cols[1]}"))
            if m in ("newey_west", "bootstrap"):
                summary.append(
                    (
                        f"size, {k}, T = {n}: {'former' if m == 'newey_west' else 'today'}",
                        f"{np.mean(p < 0.05):.2%} | {np.mean(p < 0.0025):.2%} of {p.size}",
                        "5% | 0.25%",
                    )
                )
        print(f"  {k}, T = {n}")
        print_rows(rows, indent="    ")
    return summary


def _mde_task(task: tuple[str, int, int, int]) -> tuple[list[float], list[bool]]:
    kind, n, sims, seed = task
    rng = np.random.default_rng([seed, n, 99])
    # The edge each null pair's own test says it would detect; then pairs with that true edge.
    edges = [minimum_detectable_edge(sharpe_difference(*pair(kind, n, rng), method="hac"))
             for _ in range(sims)]  # fmt: skip
    edge = float(np.median(edges))
    found = [sharpe_difference(*pair(kind, n, rng, edge)).p_value < 0.05 for _ in range(sims)]
    return edges, found


def mde_arm(quick: bool, workers: int, sims: int | None) -> list[SummaryRow]:
    n_sims = sims or (QUICK_SIMS if quick else 400)
    tasks = [(k, n, -(-n_sims // 4), s) for k in ("iid", "ar(1) 0.3") for n in (756,)
             for s in range(4)]  # fmt: skip
    found = _pool(_mde_task, tasks, workers)
    rows, summary = [], []
    for kind in ("iid", "ar(1) 0.3"):
        got = [f for t, f in zip(tasks, found, strict=True) if t[0] == kind]
        edges = [e for f in got for e in f[0]]
        hits = [h for f in got for h in f[1]]
        rows.append(
            (
                f"{kind}, 756 days",
                f"edge {statistics.median(edges):.3f} of Sharpe detected in "
                f"{_rate(sum(hits), len(hits))} (asked: 80%)",
            )
        )
        summary.append((f"mde: power at the edge, {kind}", f"{np.mean(hits):.1%}", "80%"))
    print("\nmde: pairs whose true edge is the minimum detectable edge (5%, power 80%)")
    print_rows(rows)
    return summary


FAMILY_RULES = ("former: Šidák over Li & Ji", "Šidák over all 20", "StepM", "StepM, recentred")


def family(
    rng: np.random.Generator, n: int, k: int, ar: float, edge: float
) -> tuple[dict[int, np.ndarray], np.ndarray]:
    """A default and ``k`` configs on ``n`` days: each config is the market plus noise of its
    own and, with weight 0.5, noise all share (their excesses over the default correlate, as
    a search's near-clones do), loaded on a common factor (AR(1) ``ar``) by its own weight, so
    every difference of two books is autocorrelated when ``ar`` is; config 0 is raised by
    ``edge`` of annualised Sharpe. Odd configs were raced out: their latest third only."""
    from scipy.signal import lfilter

    market = rng.normal(0.0004, 0.01, n)
    factor = lfilter([1.0], [1.0, -ar], rng.standard_normal(n + 200))[200:] * math.sqrt(1 - ar**2)
    default = market + rng.normal(0.0, 0.0005, n)
    shared = rng.standard_normal(n)
    configs = {}
    for j in range(k):
        noise = math.sqrt(0.5) * shared + math.sqrt(0.5) * rng.standard_normal(n)
        x = market + 0.003 * noise + 0.003 * rng.uniform(-1, 1) * factor
        if j == 0:
            x = x + edge * x.std() / math.sqrt(252)
        configs[j] = x[-(n // 3) :] if j % 2 else x
    return configs, default


def _family_task(task: tuple[float, float, int, int]) -> dict[str, list[tuple[bool, bool]]]:
    """(any config named, config 0 named) under each rule, per family."""
    from alphaloop.validation import aligned_matrix
    from alphaloop.validation.sharpe import effective_trials
    from alphaloop.validation.stepm import stepm
    from benchmarks._pick_rules import sidak

    ar, edge, sims, seed = task
    rng = np.random.default_rng([seed, int(ar * 10), int(edge * 10)])
    out: dict[str, list[tuple[bool, bool]]] = {r: [] for r in FAMILY_RULES}
    for _ in range(sims):
        configs, default = family(rng, 2268, 20, ar, edge)
        p = {j: sharpe_difference(x, default[-x.size :], method="newey_west").p_value
             for j, x in configs.items()}  # fmt: skip
        days = aligned_matrix([*configs.values(), default])
        n_eff = max(effective_trials(days[:, :-1] - days[:, -1:]), 1.0)
        for rule, level in (("former: Šidák over Li & Ji", sidak(0.05, n_eff)),
                            ("Šidák over all 20", sidak(0.05, 20))):  # fmt: skip
            named = {j for j, v in p.items() if v < level}
            out[rule].append((bool(named - {0} if edge else named), 0 in named))
        for rule, recentre in (("StepM", False), ("StepM, recentred", True)):
            named = set(stepm(configs, default, reps=999, recentre=recentre).rejected)
            out[rule].append((bool(named - {0} if edge else named), 0 in named))
    return out


def family_arm(quick: bool, workers: int, sims: int | None) -> list[SummaryRow]:
    n_sims = sims or (QUICK_SIMS if quick else 240)
    cells = [(0.0, 0.0), (0.4, 0.0), (0.0, 0.3), (0.0, 0.45)]
    pieces = 4
    tasks = [(ar, e, -(-n_sims // pieces), s) for ar, e in cells for s in range(pieces)]
    seconds, found = timed(lambda: _pool(_family_task, tasks, workers))
    print(f"\nfamily: 20 configs, 2,268 days, half raced out ({seconds:.0f} s)")
    rows, summary = [], []
    for ar, edge in cells:
        got = [f for t, f in zip(tasks, found, strict=True) if t[:2] == (ar, edge)]
        for rule in FAMILY_RULES:
            cases = [c for f in got for c in f[rule]]
            wrong = _rate(sum(a for a, _ in cases), len(cases))
            if edge == 0:
                said = f"names a config: {wrong}"
                summary.append((f"family-wise error, factor AR {ar:g}: {rule}", wrong, "5%"))
            else:
                found_it = _rate(sum(b for _, b in cases), len(cases))
                said = f"names the planted config: {found_it}; another: {wrong}"
                summary.append((f"power at +{edge:g}, factor AR {ar:g}: {rule}", found_it,
                                "no loss"))  # fmt: skip
            rows.append((f"AR {ar:g}, edge +{edge:g}: {rule}", said))
    print_rows(rows)
    return summary


def _cpu_timed(fn: Any) -> tuple[float, Any]:
    """CPU seconds of ``fn`` (one BLAS thread): on a machine shared with other work, what the
    test costs, where the wall clock measures the neighbours."""
    began = time.process_time()
    out = fn()
    return time.process_time() - began, out


def timing_arm(quick: bool) -> list[SummaryRow]:
    """One paired test, the former against today's at the keep rule's resamples (999) and a
    TEST test's (1,999); and one StepM over a session's 20 configs, the pick's test."""
    from alphaloop.meta_agent.keep_rule import WINDOW_REPS
    from alphaloop.validation.stepm import stepm

    rng = np.random.default_rng(3)
    rounds = 3 if quick else 7
    rows, summary = [], []
    for n in (756, 2268, 6804):
        for kind in ("iid", "ar(1) 0.3"):
            a, b = pair(kind, n, rng)
            runs = {
                "former": lambda a=a, b=b: sharpe_difference(a, b, method="newey_west"),
                "keep rule": lambda a=a, b=b: sharpe_difference(a, b, reps=WINDOW_REPS),
                "TEST": lambda a=a, b=b: sharpe_difference(a, b),
            }
            times: dict[str, list[float]] = {name: [] for name in runs}
            for _ in range(rounds):
                for name, run in runs.items():  # interleaved: the load falls on all alike
                    seconds, out = _cpu_timed(run)
                    times[name].append(seconds)
            med = {name: statistics.median(t) for name, t in times.items()}
            rows.append(
                (
                    f"{n} days, {kind} (block {out.block})",
                    f"former {med['former'] * 1e3:.1f} ms; today, 999 resamples (keep rule) "
                    f"{med['keep rule'] * 1e3:.0f} ms, 1,999 (TEST) {med['TEST'] * 1e3:.0f} ms",
                )
            )
            summary.append((f"paired test time, {n} days, {kind}: keep rule | TEST",
                            f"{med['keep rule'] * 1e3:.0f} | {med['TEST'] * 1e3:.0f} ms",
                            f"former {med['former'] * 1e3:.1f} ms"))  # fmt: skip
    configs, default = family(rng, 6804, 20, 0.0, 0.0)
    took = statistics.median(_cpu_timed(lambda: stepm(configs, default))[0] for _ in range(rounds))
    rows.append(("StepM, 20 configs, 6,804 days (10 raced out), 1,999 resamples",
                 f"{took:.2f} s (once a session, at finalize)"))  # fmt: skip
    summary.append(("StepM time, 20 configs x 6,804 days", f"{took:.2f} s", "once a session"))
    load = os.getloadavg()[0]
    print(f"\ntiming: CPU seconds, medians of {rounds} interleaved rounds (load {load:.1f})")
    print_rows(rows)
    return summary


def _trials(seed: int) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """Pure noise, the same with one real edge of each size, and trials sharing a factor."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(0.0, 0.01, (N_DAYS, N_TRIALS))
    lucky = int(rng.integers(N_TRIALS))
    edged = []
    for edge in EDGES:
        x = noise.copy()
        x[:, lucky] += edge
        edged.append(x)
    factor = rng.normal(0.0, 0.01, (N_DAYS, 1))
    shared = 0.9 * factor + np.sqrt(1 - 0.9**2) * noise
    return noise, edged, shared


def pbo_arm(quick: bool) -> tuple[dict[str, Any], list[SummaryRow]]:
    """Runs CSCV on noise and on an edge over several seeds, times it, prints a table."""
    seeds = range(QUICK_SEEDS if quick else SEEDS)
    rows, per_seed = [], []
    for seed in seeds:
        noise, (edge, strong), shared = _trials(seed)
        result = {
            "noise": cscv_pbo(noise, N_BLOCKS).pbo,
            "edge": cscv_pbo(edge, N_BLOCKS).pbo,
            "strong": cscv_pbo(strong, N_BLOCKS).pbo,
            "n_eff_noise": effective_trials(noise),
            "n_eff_shared": effective_trials(shared),
        }
        per_seed.append(result)
        rows.append(
            (
                f"seed {seed}",
                f"PBO noise {result['noise']:.3f}   +0.1%/day {result['edge']:.3f}   "
                f"+0.2%/day {result['strong']:.3f}   N_eff noise {result['n_eff_noise']:.1f}"
                f"   N_eff rho=0.81 {result['n_eff_shared']:.1f}",
            )
        )
    noise, _, _ = _trials(0)
    seconds = statistics.median(
        timed(lambda: cscv_pbo(noise, N_BLOCKS))[0] for _ in range(N_TIMINGS)
    )
    means = {k: float(np.mean([r[k] for r in per_seed])) for k in per_seed[0]}
    spread = {k: (min(r[k] for r in per_seed), max(r[k] for r in per_seed)) for k in per_seed[0]}
    print(
        f"CSCV at S = {N_BLOCKS} ({12_870:,} splits) on {N_TRIALS} trials x {N_DAYS} days; "
        f"one trial with an edge; N_eff by Li & Ji (2005) of {N_TRIALS} trials"
    )
    print_rows(rows)
    print_rows(
        [
            (
                "mean",
                f"PBO noise {means['noise']:.3f}   +0.1%/day {means['edge']:.3f}   "
                f"+0.2%/day {means['strong']:.3f}",
            ),
            ("CSCV time", f"{seconds * 1e3:.0f} ms (median of {N_TIMINGS})"),
        ]
    )
    summary: list[SummaryRow] = [
        (
            f"PBO, {N_TRIALS} noise trials / one edge +0.1% / +0.2% a day "
            f"(S={N_BLOCKS}, {len(seeds)} seeds)",
            f"{means['noise']:.2f} / {means['edge']:.2f} / {means['strong']:.3f}",
            f"noise {spread['noise'][0]:.2f}-{spread['noise'][1]:.2f}; expect ~0.5 for noise, "
            "~0 for an edge the data can resolve",
        ),
        (
            f"CSCV time, S={N_BLOCKS}, {N_TRIALS} trials x {N_DAYS} days",
            f"{seconds * 1e3:.0f} ms",
            "12,870 splits",
        ),
        (
            f"effective trials of {N_TRIALS}: independent vs sharing a factor",
            f"{means['n_eff_noise']:.1f} vs {means['n_eff_shared']:.1f}",
            "pairwise correlation 0.81 in the second",
        ),
    ]
    return {"seeds": per_seed, "means": means, "cscv_seconds": seconds}, summary


def main(
    quick: bool = False,
    arms: list[str] | None = None,
    workers: int = 2,
    sims: int | None = None,
) -> dict[str, Any]:
    """Runs the arms (the PBO arm alone unless asked: the others take longer) and returns
    their summary rows."""
    out: dict[str, Any] = {"summary": []}
    for arm in arms or ("pbo",) + (("size", "mde", "timing") if quick else ()):
        if arm == "pbo":
            found, rows = pbo_arm(quick)
            out.update(found)
        elif arm == "size":
            rows = size_arm(quick, workers, sims)
        elif arm == "mde":
            rows = mde_arm(quick, workers, sims)
        elif arm == "family":
            rows = family_arm(quick, workers, sims)
        else:
            rows = timing_arm(quick)
        out["summary"] += rows
    print()
    print_rows([(m, f"{v}   ({ref})") for m, v, ref in out["summary"]])
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--arm", action="append", choices=ARMS, help="only these arms")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--sims", type=int, help="pairs per cell (size, mde)")
    args = parser.parse_args()
    main(args.quick, args.arm, args.workers, args.sims)
