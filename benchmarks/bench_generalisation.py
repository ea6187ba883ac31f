"""Do research picks hold up out of sample, and can noise or 1/N pass the gates?
Run: ``python -m benchmarks.bench_generalisation``.

Whole research sessions run through the code the CLI runs (``create_session`` /
``run_session`` with a ``SessionSpec``, each in a fresh temporary home, ``cufolio_only``,
proposers TPE and random in turn, 3 noise seeds). The benchmark reads each session's journal
(``final`` and its trials) and re-runs every scored search trial's config on TEST with
``run_trial`` on its journaled seed: the loop never does that (TEST stays sealed until
finalize), and it is the only way to see whether the validation ranking carried over.

Arms (the targets are those of the issues "held up out of sample" and "checks that noise and
1/N cannot pass"):

* null: ``null:SEED`` markets (:func:`alphaloop.market.null_prices`), exchangeable assets with
  equal drift and volatility, where no rule beats 1/N in expectation. Reported: the share of
  sessions whose pick is not the default (target <= 5%) and the share that pass the gates, GO
  (target <= 5%), with Wilson 95% intervals. A non-default pick here can at best tie the
  default (cap near 1/N against a concentrated default): its mean TEST excess is printed
  beside it.
* tied: ``tied:SEED`` markets (:func:`alphaloop.market.tied_prices`), the null market's assets
  so correlated that every long-only book ties, traded without costs: no knob setting beats the
  default. (With costs a config that trades less has a real edge, and folds spanning nine
  years find it: two such picks in eight sessions when this arm was first run with costs.)
  Here a pick that is not the default is a false discovery: reported are that share (target
  <= 5%) and the GO share (target <= 5%).
* flat: ``flat:SEED`` markets (:func:`alphaloop.market.flat_prices`), the null market's assets
  without drift and traded without costs: every strategy's expected return is zero, so every
  config ties with the default exactly, where the tied market leaves a diversification gain
  too small to measure but real. A pick that is not the default is a false discovery: that
  share is the selection's false-discovery rate (target <= 5%). The absolute gates fail on
  this market by themselves, so its GO says nothing about the excess gates.
* planted: ``planted:SEED`` markets (:func:`alphaloop.market.planted_prices`), where short
  Mean-CVaR holding periods (``cufolio_hold_days`` near 5) truly beat the default and 1/N.
  The edge is first checked directly: the planted config against the default on each market's
  TEST. Reported: the share of sessions whose pick beats the default on TEST (a default pick
  counts as not beating; target >= 80%) and the GO rate (target >= 70%).
* sp500: the embedded S&P 500 set. Per session the TEST Sharpe of the pick, the default and
  1/N; the Spearman correlation of validation and TEST objectives over the search trials; how
  often a search pick loses to the default on TEST by more than one standard error of the
  paired difference; and the share of GO picks that beat 1/N on TEST.
* sp500-ppo: the same in ``ppo_only``, each trial training PPO for a small fixed budget (4,096
  env steps; a TEST re-run uses the policy the trial trained, as finalize does).

For every arm also the accuracy of the research preference pairs as the flywheel builds them
(two scored proposals from one state whose daily returns differ with confidence on the folds
both ran, at a false discovery rate over the session's pairs,
:func:`alphaloop.flywheel.research.labelled`): the share whose chosen side also has the
higher TEST objective, and the same over every pair of a session's search trials; and over
every such pair, by the strength of the folds' paired test (|z| buckets), how often the side
the folds favour wins on TEST: whether a stricter label, or any label from the folds, could be
right more often on that market. The other label source a flywheel could use, a walk-forward
run of both configs on data after the session, is measured too: the same pairs are judged on
TEST's second half, once by the folds and once by the paired test on TEST's first half.
Reports numbers only; it asserts nothing. ``--arm NAME`` (repeatable) runs only the arms named,
``--sessions N`` runs N sessions of each (with no false GO, a Wilson interval falls below 5%
from about 75 sessions).
"""

from __future__ import annotations

import argparse
import logging
import math
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import combinations, pairwise
from typing import Any
from unittest import mock

from scipy import stats

from alphaloop import metrics
from alphaloop.flywheel.research import folds_test, labelled
from alphaloop.journal import Journal, TrialKind, TrialRecord, TrialStatus
from alphaloop.knobs import TrialConfig, knobs_for_mode
from alphaloop.market import PLANTED_HOLD_DAYS, market_of
from alphaloop.meta_agent import finalize
from alphaloop.meta_agent.session import SessionSpec, create_session, run_session
from alphaloop.settings import Settings
from alphaloop.trials import TrialBudget, run_trial
from alphaloop.validation import (
    ExcessEvidence,
    SharpeDifference,
    benjamini_hochberg,
    benjamini_yekutieli,
    excess_evidence,
)
from alphaloop.validation.excess import sharpe_difference
from benchmarks import _pick_rules
from benchmarks._report import SummaryRow, print_rows, timed

MODE = "cufolio_only"
PROPOSERS = ("tpe", "random")
# (sessions, search trials per session) per arm. The planted arm searches longer: the gates'
# GO rate there measures their power, and a session that never finds the planted region has
# nothing for them to pass.
FULL = {
    "null": (16, 10),
    "tied": (48, 10),
    "flat": (48, 10),
    "planted": (16, 20),
    "sp500": (12, 10),
    "sp500-ppo": (12, 6),
}
QUICK = {
    "null": (2, 4),
    "tied": (2, 4),
    "flat": (2, 4),
    "planted": (2, 4),
    "sp500": (2, 4),
    "sp500-ppo": (1, 2),
}
SYNTHETIC = ("null", "tied", "flat", "planted")
# The row under a pick's row: the same under the former pick rule (Šidák over Li & Ji's
# effective count, the Newey-West test).
FORMER = "  the same, the former pick rule (Šidák over Li & Ji)"
# Markets where no config has an edge unless trading costs give one to the config that trades
# least: they trade without costs.
COST_FREE = ("tied", "flat")
# The PPO arm trains each trial for a small fixed budget (a session setting, not a knob).
PPO_TIMESTEPS, QUICK_PPO_TIMESTEPS = 4096, 2048
# Markets on which the planted config is checked against the default directly.
EDGE_MARKETS, QUICK_EDGE_MARKETS = 40, 2
Z95 = 1.959964


@dataclass
class Outcome:
    """What one session produced, and its search trials' TEST objectives."""

    arm: str
    data: str
    proposer: str
    mode: str
    final: dict[str, Any]
    val_test: list[tuple[float, float]] = field(default_factory=list)
    pairs: list[bool] = field(default_factory=list)  # flywheel pairs: chosen wins on TEST
    # The scored pairs the flywheel's rule labels under each false-discovery procedure (BH,
    # BY): whether the chosen side wins on TEST.
    fdr_pairs: dict[str, list[bool]] = field(default_factory=dict)
    all_pairs: list[bool] = field(default_factory=list)  # every pair of search trials
    # Every pair of scored search trials: |z| of the folds' paired Sharpe test, and whether
    # the side the folds favour has the higher TEST objective (see :func:`z_buckets`).
    fold_z: list[tuple[float, bool]] = field(default_factory=list)
    # The same pairs judged on TEST's second half, by the folds and by TEST's first half (an
    # unseen window just after the search's): |z| of the label's paired test and whether the
    # side it favours has the higher Sharpe on the second half (see :func:`half_split`).
    folds_on_half: list[tuple[float, bool]] = field(default_factory=list)
    half_on_half: list[tuple[float, bool]] = field(default_factory=list)
    # Every pair of scored search trials of one state (the flywheel's candidates): |z| of the
    # folds' paired test, the folds both ran, and whether the favoured side wins on TEST.
    state_pairs: list[tuple[float, int, bool]] = field(default_factory=list)
    best_rerun_gap: float | None = None  # re-run best on TEST minus finalize's, a check
    pick_knobs: dict[str, float] = field(default_factory=dict)  # the pick's non-default knobs
    # The pick under the former pick rule (:data:`_pick_rules.FORMER`): its TEST objective, or
    # None when that rule picked the default too.
    former_pick_test: float | None = None
    # Planted markets: the planted config itself (the optimum) against the default on TEST,
    # deflated by this session's search trials as its pick is (see :func:`optimum_evidence`).
    optimum: ExcessEvidence | None = None
    # What a caller's ``extra`` read off the session's journal (see :func:`_session`), and the
    # session's wall time from its creation to its review (seconds).
    extra: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def searched(self) -> bool:
        return self.final.get("pick") == "search"

    @property
    def go(self) -> bool:
        return bool(self.final.get("gates_passed"))

    def test_sharpe(self, who: str) -> float | None:
        f = self.final
        if who == "default":
            return f.get("baseline_test_objective")
        if who == "pick":
            return f.get("best_test_objective" if self.searched else "baseline_test_objective")
        return _excess(f, "equal_weight", "sharpe_b")

    @property
    def beats_default(self) -> bool:
        f = self.final
        return self.searched and f["best_test_objective"] > f["baseline_test_objective"]

    @property
    def former_searched(self) -> bool:
        return self.former_pick_test is not None

    @property
    def former_beats_default(self) -> bool:
        former = self.former_pick_test
        return former is not None and former > self.final["baseline_test_objective"]

    @property
    def gate_results(self) -> list[dict[str, Any]]:
        """The journaled verdict of every gate."""
        return list((self.final.get("gates") or {}).get("results", []))

    @property
    def former_go(self) -> bool:
        """GO under the former rule: the six absolute gates alone, from the same verdicts."""
        former = [r for r in self.gate_results if r["gate"] in FORMER_GATES]
        return bool(former) and all(r["passed"] for r in former)

    @property
    def beats_equal_weight(self) -> bool:
        """The pick's TEST Sharpe is above 1/N's."""
        return (_excess(self.final, "equal_weight", "difference") or 0.0) > 0.0


FORMER_GATES = ("sharpe", "max_drawdown", "hit_rate", "profit_factor", "deflated_sharpe", "pbo")


def _excess(final: dict[str, Any], reference: str, key: str) -> float | None:
    """A number of the pick's paired TEST test against ``reference``, None when absent."""
    test = (final.get("excess") or {}).get(reference, {}).get("test")
    return None if test is None else test.get(key)


def wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson's 95% interval of a binomial share ``k / n``."""
    if n == 0:
        return (math.nan, math.nan)
    p, z2 = k / n, Z95**2
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def share(k: int, n: int) -> str:
    if n == 0:
        return "n/a (0 cases)"
    lo, hi = wilson(k, n)
    return f"{k}/{n} = {k / n:5.1%} [{lo:.1%}, {hi:.1%}]"


def _scored(t: TrialRecord) -> bool:
    return (
        t.kind == TrialKind.search
        and t.status in (TrialStatus.keep, TrialStatus.discard)
        and t.objective is not None
        and math.isfinite(t.objective)
    )


# Pick rules replayed at every session's finalize beside its own pick (name -> rule), and what
# each picked in the latest session this process ran (trial id, None: the default), for a
# caller's ``extra`` to read while the session's journal is open.
REPLAY: dict[str, Any] = {_pick_rules.FORMER: _pick_rules.RULES[_pick_rules.FORMER]}
LAST_PICKS: dict[str, int | None] = {}


@contextmanager
def _former_pick(into: list[int | None]) -> Iterator[None]:
    """While the session runs, its finalize also asks every rule of :data:`REPLAY` for a pick
    (the same rows) into :data:`LAST_PICKS`, and appends the former rule's (None: the default)
    to ``into``; the session keeps today's pick."""
    today = finalize.pick

    def both(ctx: Any, rows: list[TrialRecord], rule: Any = None) -> Any:
        LAST_PICKS.clear()
        for name, replayed in REPLAY.items():
            chosen = replayed(ctx, rows)
            LAST_PICKS[name] = None if chosen is None else chosen.id
        into.append(LAST_PICKS.get(_pick_rules.FORMER))
        return today(ctx, rows, rule)

    with mock.patch.object(finalize, "pick", both):
        yield


# Reads what a benchmark wants of a finished session while its journal is open: (the spec,
# its market, the journal, the session id) -> anything picklable, kept in ``Outcome.extra``.
Extra = Callable[[SessionSpec, Any, Journal, str], dict[str, Any]]


def _session(spec: SessionSpec, arm: str, extra: Extra | None = None) -> Outcome:
    """Runs one session as the CLI would, then re-runs its search trials on TEST (a PPO trial
    with the policy it trained, as finalize does)."""
    market = market_of(spec)
    former: list[int | None] = []
    optimum = None
    extras: dict[str, Any] = {}
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as home, _former_pick(former):
        settings = Settings(ALPHALOOP_HOME=home)
        sid = create_session(spec, settings)
        run_session(sid, settings)
        seconds = time.perf_counter() - began
        with Journal(settings.journal_path) as journal:
            session = journal.sessions.get(sid)
            rows = journal.trials.of_session(sid, series=False)
            days = journal.folds.returns_by_fold(sid)
            if arm == "planted":
                optimum = optimum_evidence(spec, market, journal.trials.of_session(sid))
            if extra is not None:
                extras = extra(spec, market, journal, sid)
        search = [t for t in rows if _scored(t)]
        reruns = {
            t.id: run_trial(
                spec.mode,
                TrialConfig(**t.config),
                market,
                spec.trial_budget,
                t.seed or 0,
                window="test",
                policy_path=t.policy_path,
            )
            for t in search
        }
    test = {i: r.objective for i, r in reruns.items()}
    final = session.final.journaled() if session.final else {}
    out = Outcome(arm, spec.data, spec.proposer, spec.mode, final)
    out.val_test = [(float(t.objective), test[t.id]) for t in search]  # type: ignore[arg-type]
    out.optimum, out.extra, out.seconds = optimum, extras, seconds
    if former and former[-1] is not None:
        out.former_pick_test = test[former[-1]]
    if final.get("best_trial_id") in test:
        out.best_rerun_gap = test[final["best_trial_id"]] - final["best_test_objective"]
        best = next(t for t in search if t.id == final["best_trial_id"])
        default = TrialConfig().model_dump()
        out.pick_knobs = {
            k: best.config[k] for k in knobs_for_mode(spec.mode) if best.config[k] != default[k]
        }
    floor = session.noise_floor
    for a, b in combinations(search, 2):
        if test[a.id] == test[b.id] or a.objective == b.objective:
            continue
        folds = folds_test(days, a.id, b.id)
        if folds is not None and folds.z != 0:
            out.fold_z.append((abs(folds.z), (folds.z > 0) == (test[a.id] > test[b.id])))
        half_split(out, folds, reruns[a.id].daily_returns, reruns[b.id].daily_returns)
        chosen, rejected = (a, b) if a.objective > b.objective else (b, a)  # type: ignore[operator]
        out.all_pairs.append(test[chosen.id] > test[rejected.id])
        if a.parent_id != b.parent_id or floor is None or not math.isfinite(floor):
            continue
        if folds is not None and folds.z != 0:
            shared = len(set(days.get(a.id, {})) & set(days.get(b.id, {})))
            won = (folds.z > 0) == (test[a.id] > test[b.id])
            out.state_pairs.append((abs(folds.z), shared, won))
    if floor is not None and math.isfinite(floor):
        # The flywheel's own rule over the session's pairs (both scored: TEST decides).
        states: dict[int | None, list[TrialRecord]] = {}
        for t in search:
            states.setdefault(t.parent_id, []).append(t)
        for chosen, rejected, _ in labelled(list(states.values()), days):
            if test[chosen.id] != test[rejected.id]:
                out.pairs.append(test[chosen.id] > test[rejected.id])
        for name, procedure in (("BH", benjamini_hochberg), ("BY", benjamini_yekutieli)):
            out.fdr_pairs[name] = [
                test[chosen.id] > test[rejected.id]
                for chosen, rejected, margin in labelled(list(states.values()), days, procedure)
                if math.isfinite(margin) and test[chosen.id] != test[rejected.id]
            ]
    return out


def half_split(
    out: Outcome, folds: SharpeDifference | None, a: list[float], b: list[float]
) -> None:
    """Judges trials ``a`` and ``b`` (their TEST daily returns) on TEST's second half twice:
    by the folds' paired test, and by the paired test on TEST's first half, the label a
    walk-forward run on data after the session would give. Like against like: the same pairs,
    the same days to be right on."""
    if folds is None or folds.z == 0:
        return
    half = len(a) // 2
    late = metrics.sharpe(a[half:]) - metrics.sharpe(b[half:])
    if late == 0:
        return
    try:
        early = sharpe_difference(a[:half], b[:half]).z
    except ValueError:  # a half that does not vary
        return
    if early != 0 and math.isfinite(early):
        out.folds_on_half.append((abs(folds.z), (folds.z > 0) == (late > 0)))
        out.half_on_half.append((abs(early), (early > 0) == (late > 0)))


# Edges of the |z| buckets of :func:`z_buckets`; the flywheel labels a pair from 1.96 up.
Z_EDGES = (0.0, 1.0, 1.96, 3.0, math.inf)


def z_buckets(judged: list[tuple[float, bool]]) -> str:
    """How often the side a label favours wins, by the strength of the label's paired test
    (``judged``: |z| and whether it was right, as :attr:`Outcome.fold_z` holds them): whether a
    stricter label (or any label from the folds) could be right more often."""
    cells = [f"all {share(sum(w for _, w in judged), len(judged))}"]
    for lo, hi in pairwise(Z_EDGES):
        hits = [win for z, win in judged if lo <= z < hi]
        label = f"|z| {lo:g}-{hi:g}" if math.isfinite(hi) else f"|z| >= {lo:g}"
        cells.append(
            f"{label}: {sum(hits)}/{len(hits)}"
            + (f" ({sum(hits) / len(hits):.0%})" if hits else "")
        )
    return "; ".join(cells)


def optimum_evidence(spec: SessionSpec, market: Any, rows: list[TrialRecord]) -> ExcessEvidence:
    """The planted config (the optimum, not the session's pick) against the default on TEST,
    by the paired test finalize runs on a pick. What the optimum itself scores is the ceiling of
    the session's GO rate: a pick that passes more often than the optimum would is luck."""
    base = next(t for t in rows if t.kind == TrialKind.baseline and t.status == TrialStatus.keep)
    default = next(t for t in rows if t.kind == TrialKind.test and t.parent_id == base.id)
    planted = TrialConfig(cufolio_hold_days=PLANTED_HOLD_DAYS)
    good = run_trial(MODE, planted, market, spec.trial_budget, default.seed or 0, window="test")
    return excess_evidence("default", good.daily_returns, default.val_returns)


def run_arm(
    arm: str, n_sessions: int, budget: int, quick: bool, folds: int | None = None
) -> list[Outcome]:
    outcomes = []
    ppo = arm == "sp500-ppo"
    steps = QUICK_PPO_TIMESTEPS if quick else PPO_TIMESTEPS
    for i in range(n_sessions):
        spec = SessionSpec(
            goal=f"generalisation benchmark, {arm}",
            mode="ppo_only" if ppo else MODE,
            budget=budget,
            # Proposers alternate; on sp500 the session seed is all that differs between
            # sessions of one proposer.
            proposer=PROPOSERS[i % 2],
            seed=1000 * (i + 1),
            data=f"{arm}:{i}" if arm in SYNTHETIC else "sp500",
            trial_budget=_trial_budget(arm, steps),
            folds=folds,
        )
        outcomes.append(_session(spec, arm))
    return outcomes


def _trial_budget(arm: str, ppo_steps: int) -> TrialBudget:
    """PPO trains for a small fixed budget; the tied and flat markets trade without costs, since
    costs alone give a config that trades less a real edge, and those arms want none."""
    if arm == "sp500-ppo":
        return TrialBudget(total_timesteps=ppo_steps)
    return TrialBudget(eval_cost_bps=0.0) if arm in COST_FREE else TrialBudget()


def planted_edge(n_markets: int) -> list[tuple[str, float, float, float, float]]:
    """The planted config (``cufolio_hold_days`` = :data:`PLANTED_HOLD_DAYS`, other knobs at
    their defaults) against the default on each planted market's TEST: (data, default Sharpe,
    planted Sharpe, 1/N Sharpe, z of the paired Sharpe difference)."""
    rows = []
    planted = TrialConfig(cufolio_hold_days=PLANTED_HOLD_DAYS)
    for i in range(n_markets):
        data = f"planted:{i}"
        market = market_of(SessionSpec(goal="edge check", data=data))
        base = run_trial(MODE, TrialConfig(), market, None, 0, window="test")
        good = run_trial(MODE, planted, market, None, 0, window="test")
        z = sharpe_difference(good.daily_returns, base.daily_returns).z
        rows.append(
            (data, base.objective, good.objective, base.baselines["equal_weight"].sharpe, z)
        )
    return rows


def _median(values: list[float | None]) -> float:
    xs = [v for v in values if v is not None and math.isfinite(v)]
    return statistics.median(xs) if xs else math.nan


def _spearman(outcomes: list[Outcome]) -> list[float]:
    out = []
    for o in outcomes:
        if len(o.val_test) >= 3:
            val, test = zip(*o.val_test, strict=True)
            rho = stats.spearmanr(val, test).statistic
            if math.isfinite(rho):
                out.append(float(rho))
    return out


def report(arm: str, outcomes: list[Outcome]) -> tuple[list[tuple[str, str]], list[SummaryRow]]:
    """The printed rows of one arm and its summary rows."""
    n = len(outcomes)
    searched = [o for o in outcomes if o.searched]
    go = [o for o in outcomes if o.go]
    k_search, k_go = len(searched), len(go)
    k_beat = sum(o.beats_default for o in outcomes)
    losses = sum(
        1
        for o in searched
        if (d := _excess(o.final, "default", "difference")) is not None
        and (se := _excess(o.final, "default", "se")) is not None
        and d < -se
    )
    go_beats_ew = sum(o.beats_equal_weight for o in go)
    excess_default = [
        o.final["best_test_objective"] - o.final["baseline_test_objective"] for o in searched
    ]
    rhos = _spearman(outcomes)
    pairs = [p for o in outcomes for p in o.pairs]
    all_pairs = [p for o in outcomes for p in o.all_pairs]
    gaps = [abs(o.best_rerun_gap) for o in outcomes if o.best_rerun_gap is not None]
    k_former = sum(o.former_searched for o in outcomes)
    k_former_beat = sum(o.former_beats_default for o in outcomes)
    failed = Counter(r["gate"] for o in outcomes for r in o.gate_results if not r["passed"])
    short_holds = []
    if all("cufolio_hold_days" in knobs_for_mode(o.mode) for o in outcomes):
        short = sum(o.pick_knobs.get("cufolio_hold_days", 21) <= 10 for o in searched)
        short_holds = [("search picks with cufolio_hold_days <= 10", share(short, k_search))]
    rows = [
        ("pick is not the default", share(k_search, n)),
        (FORMER, share(k_former, n)),
        ("GO (all gates passed)", share(k_go, n)),
        (
            "gates failed (sessions failing each)",
            ", ".join(f"{g} {k}" for g, k in failed.most_common()) or "none",
        ),
        (
            "GO under the former gates (absolute ones only)",
            share(sum(o.former_go for o in outcomes), n),
        ),
        ("pick beats the default on TEST", share(k_beat, n)),
        (FORMER, share(k_former_beat, n)),
        (
            "TEST Sharpe, median over sessions",
            f"pick {_median([o.test_sharpe('pick') for o in outcomes]):.3f}   default "
            f"{_median([o.test_sharpe('default') for o in outcomes]):.3f}   1/N "
            f"{_median([o.test_sharpe('1/N') for o in outcomes]):.3f}",
        ),
        *short_holds,
        (
            "search pick - default on TEST",
            f"mean {statistics.fmean(excess_default):+.3f}, median "
            f"{statistics.median(excess_default):+.3f} Sharpe over {k_search} search picks"
            if excess_default
            else "no search picks",
        ),
        ("search pick loses to default by > 1 SE", share(losses, k_search)),
        ("GO picks that beat 1/N on TEST", share(go_beats_ew, k_go)),
        (
            "validation -> TEST Spearman",
            f"median {_median(rhos):+.3f} over {len(rhos)} sessions "
            f"({sum(r > 0 for r in rhos)} positive)"
            if rhos
            else "n/a",
        ),
        ("preference pairs, chosen wins on TEST", share(sum(pairs), len(pairs))),
        ("every search pair, chosen wins on TEST", share(sum(all_pairs), len(all_pairs))),
        (
            "every search pair by the folds' paired |z|: favoured wins on TEST",
            z_buckets([row for o in outcomes for row in o.fold_z]),
        ),
        (
            "the same judged on TEST's second half: by the folds",
            z_buckets([row for o in outcomes for row in o.folds_on_half]),
        ),
        (
            "  by TEST's first half (a walk-forward label)",
            z_buckets([row for o in outcomes for row in o.half_on_half]),
        ),
        (
            "check: best re-run on TEST vs finalize",
            f"max |gap| {max(gaps):.2e} over {len(gaps)} picks" if gaps else "no search picks",
        ),
    ]
    summary: list[SummaryRow] = []
    if arm in ("null", "tied", "flat"):
        summary += [
            (f"{arm}: pick is not the default", f"{k_search}/{n} (former {k_former}/{n})", "<= 5%"),
            (f"{arm}: GO", f"{k_go}/{n}", "<= 5%"),
        ]
    elif arm == "planted":
        summary += [
            (
                "planted: pick beats default on TEST",
                f"{k_beat}/{n} (former {k_former_beat}/{n})",
                ">= 80%",
            ),
            ("planted: GO", f"{k_go}/{n}", ">= 70%"),
        ]
    else:
        summary += [
            (f"{arm}: search pick loses to default > 1 SE", f"{losses}/{k_search}", "low"),
            (f"{arm}: GO picks beating 1/N on TEST", f"{go_beats_ew}/{k_go}", "all of them"),
            (f"{arm}: validation -> TEST Spearman", f"{_median(rhos):+.3f}", "> 0"),
        ]
    summary.append(
        (f"{arm}: preference pairs right on TEST", f"{sum(pairs)}/{len(pairs)}", "44% (issue)")
    )
    return rows, summary


def print_sessions(outcomes: list[Outcome]) -> None:
    rows = []
    for i, o in enumerate(outcomes):
        f = o.final
        rows.append(
            (
                f"{o.data} {o.proposer} #{i}",
                f"pick {f.get('pick', '?'):<7} TEST pick {o.test_sharpe('pick') or math.nan:6.3f}"
                f"  default {o.test_sharpe('default') or math.nan:6.3f}"
                f"  1/N {o.test_sharpe('1/N') or math.nan:6.3f}  "
                f"{'GO' if o.go else 'NO-GO'}  {len(o.val_test)} search trials  "
                + " ".join(f"{k}={v:.3g}" for k, v in o.pick_knobs.items()),
            )
        )
    print_rows(rows, indent="    ")


def _check_edge(quick: bool) -> list[tuple[str, float, float, float, float]]:
    """Runs and prints :func:`planted_edge`."""
    seconds, edge = timed(lambda: planted_edge(QUICK_EDGE_MARKETS if quick else EDGE_MARKETS))
    print(
        f"planted edge, checked directly (cufolio_hold_days {PLANTED_HOLD_DAYS} against the "
        f"default 21, seed 0, TEST; {seconds:.0f} s)"
    )
    print_rows(
        [
            (d, f"default {b:6.3f}   planted {g:6.3f}   1/N {ew:6.3f}   paired z {z:+.2f}")
            for d, b, g, ew, z in edge
        ]
    )
    gains = [g - b for _, b, g, _, _ in edge]
    zs = [z for *_, z in edge]
    print(
        f"  planted - default: mean {statistics.fmean(gains):+.3f} Sharpe, "
        f"{sum(x > 0 for x in gains)}/{len(gains)} markets positive; paired z median "
        f"{statistics.median(zs):.2f}, above 1.645 in {sum(z > 1.645 for z in zs)}, above 3.1 "
        f"(with the deflated Sharpe's usual hurdle) in {sum(z > 3.1 for z in zs)}"
    )
    return edge


def main(
    quick: bool = False,
    arms: list[str] | None = None,
    sessions: int | None = None,
    folds: int | None = None,
    budget: int | None = None,
) -> dict[str, Any]:
    """Runs the sessions of every arm (or of ``arms``; ``sessions`` of each and ``budget``
    search trials a session when given), prints per-arm tables and returns the summary rows."""
    logging.getLogger("alphaloop").setLevel(logging.ERROR)
    plan = {
        k: (sessions or n, budget or planned)
        for k, (n, planned) in (QUICK if quick else FULL).items()
        if not arms or k in arms
    }
    summary: list[SummaryRow] = []
    edge: list[tuple[str, float, float, float, float]] = []
    if "planted" in plan:
        edge = _check_edge(quick)
        gains = [g - b for _, b, g, _, _ in edge]
        summary.append(
            ("planted config - default on TEST (direct)", f"{statistics.fmean(gains):+.3f}", "> 0")
        )
    measured: dict[str, list[Outcome]] = {}
    for arm, (n_sessions, budget) in plan.items():
        seconds, measured[arm] = timed(
            lambda a=arm, n=n_sessions, b=budget: run_arm(a, n, b, quick, folds)
        )
        mode = measured[arm][0].mode if measured[arm] else MODE
        print(
            f"\n{arm}: {n_sessions} sessions x {budget} search trials ({mode}, "
            f"{'/'.join(PROPOSERS)}, folds {folds or 'default'}) in {seconds:.0f} s",
            flush=True,
        )
        print_sessions(measured[arm])
        rows, arm_summary = report(arm, measured[arm])
        print_rows(rows)
        summary.extend(arm_summary)
    return {"measured": measured, "edge": edge, "summary": summary}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 sessions an arm")
    parser.add_argument("--arm", action="append", choices=list(FULL), help="only these arms")
    parser.add_argument("--sessions", type=int, help="sessions per arm (narrower intervals)")
    parser.add_argument(
        "--folds", type=int, help="folds per trial (default: the session default; 1 = one window)"
    )
    parser.add_argument("--budget", type=int, help="search trials per session (all arms)")
    args = parser.parse_args()
    main(args.quick, args.arm, args.sessions, args.folds, args.budget)
