"""How often the keep rule keeps luck, how often it keeps a real gain, and what confirmation
costs: ``python -m benchmarks.bench_keep_rule``.

Real research sessions (the LangGraph loop, journal, Mean-CVaR trials in ``cufolio_only`` on
the embedded S&P 500 data, 3 noise seeds) run with a proposer that makes only two kinds of
edit, each judged by the rule as any proposal would be:

* seed-only: ``n_scenarios`` is set to a marker value that the evaluator, wrapped for this
  benchmark, runs as the *default config* on a seed of its own (``seed + 1000 j`` for the j-th
  proposal). The candidate's true mean is the incumbent's; only the seed differs. (A literal
  ``n_scenarios`` 4999 -> 5001 edit on the search seed draws almost the same bootstrap as the
  baseline's first seed, so it would understate the problem.)
* real +0.2 Sharpe: the same, plus exactly +0.2 added to the objective (and the Sharpe in the
  metrics) per edge level, one level above the incumbent's: every such proposal is a true
  improvement of 0.2 over the incumbent of its time, with the real seed noise of the trials
  (their spread over seeds is about 0.04 Sharpe here).

Per search trial, against the incumbent it was proposed from, the table gives the keep rate of
the new rule (read from the journal) and of the old one ("keep if y > best + 2 x spread", the
best being a single seed's objective), and the confirmation runs spent. A normal-noise model of
both rules (``t-model``, many draws) is printed beside them as the reference. Reports numbers
only; it asserts nothing.
"""

from __future__ import annotations

import logging
import statistics
import tempfile
from typing import Any

import numpy as np

from alphaloop.journal import Journal, TrialRecord
from alphaloop.knobs import ConfigDelta, TrialConfig
from alphaloop.meta_agent import executors, keep_rule, session
from alphaloop.meta_agent.proposers import ProposalContext, ProposerBase
from alphaloop.meta_agent.session import SessionSpec, create_session, run_session
from alphaloop.settings import Settings
from benchmarks._report import parse_quick, print_rows, timed

EDGE = 0.2
DEFAULT_SCENARIOS = TrialConfig().n_scenarios
NOISE_SEEDS = 3
# (sessions, search trials per session) for the seed-only and the edge proposals.
FULL = {"seed-only": (8, 25), "+0.2 Sharpe": (4, 10)}
QUICK = {"seed-only": (2, 12), "+0.2 Sharpe": (1, 6)}


def _marker(j: int, level: int) -> int:
    return DEFAULT_SCENARIOS + 10 * j + level


def _decode(n_scenarios: int) -> tuple[int, int]:
    """(j, edge level) of a marker; (0, 0) for the default config itself."""
    return divmod(max(n_scenarios - DEFAULT_SCENARIOS, 0), 10)


class MarkerProposer(ProposerBase):
    """Proposes the default config on a new seed stream, at the incumbent's edge level (a
    seed-only change) or one level above it (a real +0.2 improvement)."""

    name = "marker"

    def __init__(self, edge: bool) -> None:
        self.edge, self.j = edge, 0

    def propose(self, ctx: ProposalContext) -> ConfigDelta:
        self.j += 1
        _, level = _decode(ctx.best_config.n_scenarios)
        level += 1 if self.edge else 0
        return ConfigDelta(changes={"n_scenarios": _marker(self.j, level)}, rationale="bench")


def _wrapped(real: Any) -> Any:
    def evaluate(mode: str, config: TrialConfig, data: Any, budget: Any, seed: int, **kw: Any):
        j, level = _decode(config.n_scenarios)
        if j == 0:
            return real(mode, config, data, budget, seed, **kw)
        result = real(mode, TrialConfig(), data, budget, seed + 1000 * j, **kw)
        gain = EDGE * level
        metrics = result.metrics.model_copy(update={"sharpe": result.metrics.sharpe + gain})
        return result.model_copy(update={"objective": result.objective + gain, "metrics": metrics})

    return evaluate


def _per_trial(rows: list[TrialRecord]) -> list[dict[str, Any]]:
    """Each search trial's verdict under the new rule (journaled) and the old one, against the
    incumbent it was proposed from."""
    by_id = {t.id: t for t in rows}
    base = [t.objective for t in rows if t.kind == "baseline" and t.objective is not None]
    spread, base_mean = statistics.stdev(base), statistics.fmean(base)
    out = []
    for t in rows:
        if t.kind != "search" or t.objective is None:
            continue
        parent = by_id[t.parent_id]
        old_best = base_mean if parent.kind == "baseline" else parent.objective
        confirms = [c for c in rows if c.kind == "confirm" and c.parent_id == t.id]
        out.append(
            {
                "new": t.status == "keep",
                "old": t.objective > old_best + 2 * spread,
                "confirms": len(confirms),
                "confirm_s": sum(c.elapsed_s or 0.0 for c in confirms),
                "trial_s": t.elapsed_s or 0.0,
            }
        )
    return out


def _sessions(kind: str, n_sessions: int, budget: int, home: str) -> list[list[dict[str, Any]]]:
    settings = Settings(ALPHALOOP_HOME=home)
    results = []
    for i in range(n_sessions):
        proposer = MarkerProposer(edge=kind != "seed-only")
        session.make_proposer = lambda *args, p=proposer: p
        spec = SessionSpec(
            goal=f"keep-rule benchmark, {kind}",
            mode="cufolio_only",
            budget=budget,
            noise_seeds=NOISE_SEEDS,
            seed=1_000_000 * (i + 1) + (500_000 if kind != "seed-only" else 0),
        )
        sid = create_session(spec, settings)
        run_session(sid, settings)
        with Journal(settings.journal_path) as journal:
            results.append(_per_trial(journal.trials.of_session(sid, series=False)))
    return results


def _model(gain_in_spreads: float, draws: int = 200_000) -> tuple[float, float, float]:
    """Keep rates of the new and old rule, and confirmation runs per trial, on normal noise."""
    rng = np.random.default_rng(0)
    n, k = NOISE_SEEDS, keep_rule.CONFIRM_SEEDS
    base = rng.normal(0.0, 1.0, (draws, n))
    s, m = base.std(axis=1, ddof=1), base.mean(axis=1)
    seeds = rng.normal(gain_in_spreads, 1.0, (draws, 1 + k))
    first = seeds[:, 0] - m > keep_rule.t_margin(1.0, n - 1, 1, n, keep_rule.SCREEN_ALPHA) * s
    margin = keep_rule.t_margin(1.0, n - 1, 1 + k, n, keep_rule.KEEP_ALPHA)
    new = first & (seeds.mean(axis=1) - m > margin * s)
    old = seeds[:, 0] - m > 2 * s
    return float(new.mean()), float(old.mean()), float(first.mean() * k)


def main(quick: bool = False) -> dict[str, Any]:
    """Runs the sessions, prints the keep rates of both rules and the confirmation cost."""
    logging.getLogger("alphaloop").setLevel(logging.ERROR)
    plan = QUICK if quick else FULL
    real, make = executors.evaluate, session.make_proposer
    executors.evaluate = _wrapped(real)
    measured: dict[str, list[list[dict[str, Any]]]] = {}
    try:
        with tempfile.TemporaryDirectory() as home:
            for kind, (n_sessions, budget) in plan.items():
                seconds, measured[kind] = timed(
                    lambda kind=kind, n=n_sessions, b=budget: _sessions(kind, n, b, home)
                )
                print(f"{kind}: {n_sessions} sessions x {budget} trials in {seconds:.0f} s")
    finally:
        executors.evaluate, session.make_proposer = real, make
    spread = 0.039  # the default config's Sharpe spread over 20 seeds on this data
    rows, summary = [], []
    for kind, per_session in measured.items():
        trials = [t for s in per_session for t in s]
        n = len(trials)
        new, old = sum(t["new"] for t in trials) / n, sum(t["old"] for t in trials) / n
        extra = sum(t["confirms"] for t in trials)
        extra_s = sum(t["confirm_s"] for t in trials) / max(sum(t["trial_s"] for t in trials), 1e-9)
        model = _model(0.0 if kind == "seed-only" else EDGE / spread)
        rows.append(
            (
                f"{kind} ({n} trials, {len(per_session)} sessions)",
                f"kept: new {new:6.1%}   old {old:6.1%}   | confirmation runs "
                f"{extra / n:.2f} per trial, {extra / len(per_session):.1f} per session "
                f"(+{extra_s:.0%} trial time)   | t-model: new {model[0]:.1%} old {model[1]:.1%}"
                f" runs/trial {model[2]:.2f}",
            )
        )
        target = "<= 5%" if kind == "seed-only" else ">= 90%"
        summary.append((f"keep rate, {kind} change (new rule)", f"{new:.1%}", target))
        summary.append((f"keep rate, {kind} change (old 2 x spread rule)", f"{old:.1%}", target))
        summary.append(
            (f"confirmation runs per {kind} trial", f"{extra / n:.2f}", "not counted in budget")
        )
    print(
        f"rule: screen alpha {keep_rule.SCREEN_ALPHA}, keep alpha {keep_rule.KEEP_ALPHA}, "
        f"{keep_rule.CONFIRM_SEEDS} confirmation seeds, {NOISE_SEEDS} noise seeds (2 dof)"
    )
    print_rows(rows)
    return {"measured": measured, "summary": summary}


if __name__ == "__main__":
    main(parse_quick(__doc__.splitlines()[0]))
