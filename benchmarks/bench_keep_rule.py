"""How often the keep rule keeps luck, how often it keeps a real edge, and what racing and
confirmation cost: ``python -m benchmarks.bench_keep_rule``.

Real research sessions (the LangGraph loop, the journal, Mean-CVaR trials in ``cufolio_only``
scored on the default walk-forward folds, 3 noise seeds) run on the tied synthetic market
(``tied:SEED``, :func:`alphaloop.market.tied_prices`: exchangeable assets so correlated that
every long-only book has the same expected Sharpe up to trading costs, so no knob setting has a
true edge over the default). A proposer patched in for the benchmark makes one kind of edit per
session, and the rule judges it as it would any proposal. The kind and the proposal's index
``j`` ride on two env knobs a ``cufolio_only`` trial never reads, which the evaluator, wrapped
for this benchmark, decodes:

* seed-only: the default config on a seed of its own (``seed + 1000 j``): the incumbent's true
  mean, only the seed differs. On the tied market the seed's scenarios alone move the weights
  among near-identical assets, so its daily returns differ from the baseline's too.
* window-lucky: a genuinely different Mean-CVaR config (``cvar_alpha``, ``max_position_pct``
  >= 0.1, ``n_scenarios`` and ``cufolio_hold_days`` drawn uniformly within their bounds, seeded
  by the session and ``j``) on the search seed: different daily returns with no true edge, so
  whatever it gains on the folds is the folds' noise, which seeds cannot expose and the
  window test (step 3) is there to catch. That the drawn configs have no true edge is
  checked, not assumed: a sample of them and the default run once each on the TRAIN +
  VALIDATION span of a long, independent tied market (no TEST row), and their mean Sharpe
  minus the default's is printed.
* +0.3 Sharpe: the window-lucky candidate with an edge planted in its daily returns: each
  fold's returns get the constant ``0.3 sd / sqrt(252)`` per edge level (``sd`` that fold's own
  daily standard deviation, so its annualised Sharpe rises by exactly 0.3), one level above the
  incumbent's, and the fold's metrics and objective are recomputed from the new returns by the
  evaluator's own :func:`~alphaloop.metrics.compute_metrics` and
  :func:`~alphaloop.metrics.objective_value`. Every fold carries the edge, so the folds' whole
  span does: each such proposal is a true +0.3 over the incumbent of its time (a kept
  incumbent's own window luck aside, which is why the rate against the baseline is shown too).

Per search trial, read from the journal: kept or not, the step that discarded it (from its
journaled reason: raced out on its first fold, the single-seed screen, not confirmed over its
seeds, or the window test), the confirmation runs and the folds it ran. Keep rates carry
Wilson 95% intervals. Beside the rule, the former one on the same journal rows ("keep if the
objective beats the best by 2 x the baseline seeds' spread", the best being a single seed's
objective). Reports numbers only; it asserts nothing.
"""

from __future__ import annotations

import logging
import math
import statistics
import tempfile
from collections import Counter
from typing import Any

import numpy as np

from alphaloop.journal import Journal, TrialRecord
from alphaloop.knobs import KNOBS, ConfigDelta, TrialConfig, clip
from alphaloop.market import split, tied_prices
from alphaloop.meta_agent import keep_rule, session
from alphaloop.meta_agent.folding import FOLD_SCREEN_Z
from alphaloop.meta_agent.proposers import ProposalContext, ProposerBase
from alphaloop.meta_agent.session import SessionSpec, create_session, run_session
from alphaloop.metrics import TRADING_DAYS, compute_metrics, objective_value
from alphaloop.placement import jobs as trial_jobs
from alphaloop.settings import Settings
from alphaloop.trials import Rows, run_trial
from benchmarks._report import SummaryRow, parse_quick, print_rows, timed
from benchmarks.bench_generalisation import wilson

EDGE = 0.3  # annualised Sharpe planted per edge level
NOISE_SEEDS = 3
KINDS = ("seed-only", "window-lucky", "+0.3 Sharpe")
# Sessions and search trials per session of each kind (the same markets and session seeds for
# every kind, so the kinds differ only in what is proposed), and window-lucky configs whose
# true edge is checked.
FULL = {"sessions": 8, "budget": 12, "true_check": 16}
QUICK = {"sessions": 1, "budget": 3, "true_check": 2}
# The marker knobs: env knobs that a cufolio_only trial never reads. ``j`` (the proposal's
# index in its session) is turnover_cost_bps - 20 in hundredths, the edge level vol_penalty - 1.
J_KNOB, LEVEL_KNOB = "turnover_cost_bps", "vol_penalty"
J_BASE, LEVEL_BASE = 20.0, 1.0
CVAR_KNOBS = ("cvar_alpha", "max_position_pct", "n_scenarios", "cufolio_hold_days")
MIN_CAP = 0.1  # a drawn position cap: no lower, so every drawn book holds at most 10 assets
DEFAULT = TrialConfig()


def _markers(j: int, level: int) -> dict[str, float]:
    return {J_KNOB: J_BASE + j / 100, LEVEL_KNOB: LEVEL_BASE + level / 100}


def _decode(config: TrialConfig) -> tuple[int, int]:
    """(j, edge level) of a marked config; (0, 0) for one the benchmark did not mark."""
    if getattr(config, J_KNOB) < J_BASE:
        return 0, 0
    j = round((getattr(config, J_KNOB) - J_BASE) * 100)
    return j, round((getattr(config, LEVEL_KNOB) - LEVEL_BASE) * 100)


def _unmarked(config: TrialConfig) -> TrialConfig:
    return config.model_copy(update={k: getattr(DEFAULT, k) for k in (J_KNOB, LEVEL_KNOB)})


def drawn_config(session_idx: int, j: int) -> dict[str, float]:
    """The cvar knobs of window-lucky proposal ``j`` of session ``session_idx``: uniform within
    their bounds (the position cap within [MIN_CAP, its upper bound])."""
    rng = np.random.default_rng([session_idx, j])
    out: dict[str, float] = {}
    for name in CVAR_KNOBS:
        k = KNOBS[name]
        low = max(k.low, MIN_CAP) if name == "max_position_pct" else k.low
        out[name] = int(rng.integers(low, k.high + 1)) if k.is_int else rng.uniform(low, k.high)
    return out


class MarkerProposer(ProposerBase):
    """Proposes one kind of edit (see the module docstring), marked for the wrapped evaluator."""

    name = "marker"

    def __init__(self, kind: str, session_idx: int) -> None:
        self.kind, self.session_idx, self.j = kind, session_idx, 0

    def propose(self, ctx: ProposalContext) -> ConfigDelta:
        self.j += 1
        _, level = _decode(ctx.best_config)
        changes: dict[str, float] = {}
        if self.kind == "seed-only":
            changes.update({k: getattr(DEFAULT, k) for k in CVAR_KNOBS})
        else:
            changes.update(drawn_config(self.session_idx, self.j))
        level = level + 1 if self.kind == "+0.3 Sharpe" else 0
        changes.update(_markers(self.j, level))
        return ConfigDelta(changes=changes, rationale="bench")


def with_edge(result: Any, level: int) -> Any:
    """``result`` (one fold's) with ``level`` x :data:`EDGE` annualised Sharpe planted in its
    daily returns, its metrics and objective recomputed from them by the evaluator's own
    functions."""
    returns = np.asarray(result.daily_returns, dtype=float)
    # metrics.sharpe divides by the ddof=1 sd: a constant of this size adds exactly EDGE.
    shifted = returns + level * EDGE * returns.std(ddof=1) / math.sqrt(TRADING_DAYS)
    # A constant return changes no weight, so the turnover stays; compute_metrics needs the
    # daily turnover, which a result does not keep, so its annual figure is carried over.
    metrics = compute_metrics(shifted, np.zeros_like(shifted)).model_copy(
        update={"annual_turnover": result.metrics.annual_turnover}
    )
    return result.model_copy(
        update={
            "daily_returns": [float(x) for x in shifted],
            "metrics": metrics,
            "objective": objective_value(metrics, result.metric),
        }
    )


def _wrapped(real: Any) -> Any:
    def evaluate(mode: str, config: TrialConfig, data: Any, budget: Any, seed: int, **kw: Any):
        j, level = _decode(config)
        if j == 0:
            return real(mode, config, data, budget, seed, **kw)
        if all(getattr(config, k) == getattr(DEFAULT, k) for k in CVAR_KNOBS):
            # A seed-only proposal: the default config on a seed stream of its own.
            return real(mode, DEFAULT, data, budget, seed + 1000 * j, **kw)
        result = real(mode, _unmarked(config), data, budget, seed, **kw)
        return with_edge(result, level) if level else result

    return evaluate


def _step(t: TrialRecord) -> str:
    """Which step of the rule decided a search trial, read from its journaled reason."""
    if t.status == "keep":
        return "kept"
    why = t.reason or ""
    if why.startswith("raced out"):
        return "raced out"
    if "(screen," in why:
        return "screen"
    if "(confirmed," in why and "does not beat" in why:
        return "not confirmed"
    if "window luck not ruled out" in why:
        return "window test"
    return "other"


def _per_trial(journal: Journal, rows: list[TrialRecord]) -> list[dict[str, Any]]:
    """Each search trial's verdict under the rule (journaled) and the former one, against the
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
                "step": _step(t),
                "vs_baseline": parent.kind == "baseline",
                "confirms": len(confirms),
                "folds": len(journal.folds.of_trial(t.id)),
            }
        )
    return out


def _sessions(kind: str, n_sessions: int, budget: int, home: str) -> tuple[list, int]:
    """Per-trial verdicts of ``n_sessions`` sessions of ``kind``, and their fold count."""
    settings = Settings(ALPHALOOP_HOME=home)
    trials, n_folds = [], 0
    for i in range(n_sessions):
        proposer = MarkerProposer(kind, i)
        session.make_proposer = lambda *args, p=proposer: p
        spec = SessionSpec(
            goal=f"keep-rule benchmark, {kind}",
            mode="cufolio_only",
            data=f"tied:{i + 1}",
            budget=budget,
            noise_seeds=NOISE_SEEDS,
            seed=1_000_000 * (i + 1),
        )
        sid = create_session(spec, settings)
        run_session(sid, settings)
        with Journal(settings.journal_path) as journal:
            n_folds = journal.sessions.get(sid).spec.folds
            trials.append(_per_trial(journal, journal.trials.of_session(sid, series=False)))
    return trials, n_folds


def true_edges(n_configs: int, sessions: int, budget: int) -> list[float]:
    """Sharpe of ``n_configs`` window-lucky draws (spread over the benchmark's sessions) minus
    the default's, each run once on the TRAIN + VALIDATION span of a 40-year tied market of a
    seed no session uses: their true edge, to the span's precision."""
    data = split(tied_prices(n_days=40 * TRADING_DAYS, seed=99), source="tied:99")
    rows = Rows(start=data.train.start + 504, stop=data.val.stop)  # a full scenario lookback

    def sharpe(config: TrialConfig) -> float:
        return run_trial("cufolio_only", config, data, seed=7, window=rows).metrics.sharpe

    base = sharpe(DEFAULT)
    picks = [(i % sessions, 1 + (i // sessions) % budget) for i in range(n_configs)]
    n_assets = data.returns.shape[1]
    # The loop clips every proposal (a tail of at least 50 scenarios); so does this check.
    configs = [
        clip(DEFAULT, ConfigDelta(changes=drawn_config(s, j)), n_assets)[0] for s, j in picks
    ]
    return [sharpe(c) - base for c in configs]


def _share(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{k}/{n} = {k / n:5.1%} [{lo:.1%}, {hi:.1%}]" if n else "n/a"


def main(quick: bool = False) -> dict[str, Any]:
    """Runs the sessions, prints each kind's keep rates under both rules and what they cost."""
    logging.getLogger("alphaloop").setLevel(logging.ERROR)
    plan = QUICK if quick else FULL
    n_sessions, budget = plan["sessions"], plan["budget"]
    real, make = trial_jobs.run_trial, session.make_proposer
    trial_jobs.run_trial = _wrapped(real)
    measured: dict[str, list[list[dict[str, Any]]]] = {}
    n_folds = 0
    try:
        with tempfile.TemporaryDirectory() as home:
            for kind in KINDS:
                seconds, (measured[kind], n_folds) = timed(
                    lambda kind=kind: _sessions(kind, n_sessions, budget, home)
                )
                print(
                    f"{kind}: {n_sessions} sessions x {budget} trials in {seconds:.0f} s",
                    flush=True,
                )
    finally:
        trial_jobs.run_trial, session.make_proposer = real, make
    seconds, edges = timed(lambda: true_edges(plan["true_check"], n_sessions, budget))
    print(
        f"rule: screen alpha {keep_rule.SCREEN_ALPHA}, keep alpha {keep_rule.KEEP_ALPHA} (window "
        f"test too), {keep_rule.CONFIRM_SEEDS} confirmation seeds, fold race at z "
        f"{FOLD_SCREEN_Z:g}; {NOISE_SEEDS} noise seeds, {n_folds} folds, tied markets"
    )
    rows: list[tuple[str, str]] = []
    summary: list[SummaryRow] = []
    targets = {"seed-only": "<= 5%", "window-lucky": "<= 5%", "+0.3 Sharpe": ">= 80%"}
    for kind, per_session in measured.items():
        trials = [t for s in per_session for t in s]
        n = len(trials)
        if n == 0:
            continue
        new, old = sum(t["new"] for t in trials), sum(t["old"] for t in trials)
        steps = Counter(t["step"] for t in trials)
        first = [t for t in trials if t["vs_baseline"]]
        rows.append((f"{kind} ({n} trials, {len(per_session)} sessions)", ""))
        rows.append(("  kept, rule", _share(new, n)))
        rows.append(("  kept, former 2 x spread", _share(old, n)))
        if kind == "+0.3 Sharpe":
            k_first = sum(t["new"] for t in first)
            rows.append(("  kept, rule, against the baseline", _share(k_first, len(first))))
        order = ("raced out", "screen", "not confirmed", "window test", "other")
        rows.append(("  discarded by", ", ".join(f"{s} {steps[s]}" for s in order if steps[s])))
        rows.append(
            (
                "  runs per trial",
                f"{sum(t['confirms'] for t in trials) / n:.2f} confirmations, "
                f"{sum(t['folds'] for t in trials) / n:.2f} of {n_folds} folds",
            )
        )
        summary.append((f"keep rate, {kind} change (rule)", f"{new / n:.1%}", targets[kind]))
        summary.append(
            (f"keep rate, {kind} change (former 2 x spread)", f"{old / n:.1%}", targets[kind])
        )
    if edges:
        se = statistics.stdev(edges) / math.sqrt(len(edges)) if len(edges) > 1 else math.nan
        rows.append(
            (
                f"window-lucky configs' true edge ({len(edges)} drawn, {seconds:.0f} s)",
                f"Sharpe {statistics.fmean(edges):+.3f} (se {se:.3f}, range "
                f"{min(edges):+.3f}..{max(edges):+.3f}) over the default on 32 years of a tied "
                "market's TRAIN + VALIDATION",
            )
        )
        mean_edge = f"{statistics.fmean(edges):+.3f}"
        summary.append(("true Sharpe edge of the window-lucky configs", mean_edge, "~0"))
    print_rows(rows)
    return {"measured": measured, "summary": summary, "true_edges": edges}


if __name__ == "__main__":
    main(parse_quick(__doc__.splitlines()[0]))
