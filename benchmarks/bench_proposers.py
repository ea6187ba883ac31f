"""What a proposal costs as a session grows: ``python -m benchmarks.bench_proposers``.

The embedded proposers are stateless: every proposal replays the session's whole history into
a fresh Optuna study, then asks it for a point. This times, on made-up histories of growing
length (the proposer tests' ``tests.meta_agent.histories``: configs drawn uniformly over the
mode's knobs, a smooth objective), side by side:

- the replay through Optuna's own API (``optuna.trial.create_trial`` and ``Study.add_trial``,
  whose in-memory storage deep-copies every trial: how proposals replayed before), against the
  replay the proposers use now (``search._replayed``: the same trials, copied shallowly);
- a whole proposal of random search and of TPE (replay and ask), today's code.

The proposals themselves are unchanged (``tests/meta_agent/test_proposers.py`` checks that
both replays give the same points). Medians of 5 runs, in one process. Reports numbers only; it
asserts nothing.
"""

from __future__ import annotations

import statistics
from typing import Any

import optuna

from alphaloop.meta_agent.proposers import RandomProposer, TPEProposer, TrialView
from alphaloop.meta_agent.proposers.search import _replayed, distributions
from benchmarks._report import SummaryRow, parse_quick, print_rows, timed
from tests.meta_agent.histories import context, history

MODES = ("cufolio_only", "unified")  # 4 knobs and all 16
SIZES = (100, 300, 1000)
QUICK_SIZES = (100, 300)
RUNS = 5


def replay(mode: str, views: list[TrialView], *, shallow: bool) -> optuna.Study:
    """The history as a study, each trial made by ``_replayed`` or by Optuna's own API."""
    dists = distributions(mode)
    study = optuna.create_study(direction="maximize")
    complete = optuna.trial.TrialState.COMPLETE
    for view in views:
        config = view.config.model_dump()
        params = {name: config[name] for name in dists}
        trial = (
            _replayed(params, dists, complete, view.objective)
            if shallow
            else optuna.trial.create_trial(
                params=params, distributions=dists, value=view.objective, state=complete
            )
        )
        study.add_trial(trial)
    return study


def _median_ms(fn: Any) -> float:
    return statistics.median(timed(fn)[0] for _ in range(RUNS)) * 1e3


def measure(mode: str, n: int) -> dict[str, float]:
    """The replays and the proposals at one history length."""
    views = history(mode, n)
    ctx = context(mode, views)
    r = {
        "replay_optuna_ms": _median_ms(lambda: replay(mode, views, shallow=False)),
        "replay_ms": _median_ms(lambda: replay(mode, views, shallow=True)),
        "random_ms": _median_ms(lambda: RandomProposer().propose(ctx)),
        "tpe_ms": _median_ms(lambda: TPEProposer().propose(ctx)),
    }
    r["replay_ratio"] = r["replay_optuna_ms"] / r["replay_ms"]
    return r


def main(quick: bool = False) -> dict[str, Any]:
    sizes = QUICK_SIZES if quick else SIZES
    results: dict[str, dict[int, dict[str, float]]] = {}
    print(f"one proposal against the history's length; medians of {RUNS} runs")
    for mode in MODES:
        rows = []
        results[mode] = {}
        for n in sizes:
            r = results[mode][n] = measure(mode, n)
            rows.append(
                (
                    f"{mode}, {n:>4} trials",
                    f"replay {r['replay_optuna_ms']:6.1f} ms (optuna's) -> {r['replay_ms']:5.1f} "
                    f"ms ({r['replay_ratio']:.1f}x)   proposal: random {r['random_ms']:5.1f} ms, "
                    f"TPE {r['tpe_ms']:6.1f} ms",
                )
            )
        print_rows(rows)
    largest = max(sizes)
    summary: list[SummaryRow] = []
    for mode in MODES:
        r = results[mode][largest]
        summary.append(
            (
                f"history replay per proposal, {mode}, {largest} trials",
                f"{r['replay_ratio']:.1f}x",
                f"{r['replay_optuna_ms']:.0f} ms vs {r['replay_ms']:.0f} ms",
            )
        )
    return {"results": results, "summary": summary}


if __name__ == "__main__":
    main(parse_quick(__doc__.splitlines()[0]))
