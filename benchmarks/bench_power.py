"""Does the loop say GO when the edge is real, as often as an oracle would, and never on noise?
Run: ``python -m benchmarks.bench_power`` (``--quick`` for a smoke run).

The power curve of the whole product on markets where the answer is known: research sessions
run through the code the CLI runs (``create_session`` / ``run_session``, each in a fresh
home, ``cufolio_only``, TPE and random in turn, the default budget of 20 search trials),
side by side under two sets of rules in one run:

* before: today's rules as they were, three VALIDATION-long folds at the end of the history
  and the former gates (the six absolute gates, the paired TEST tests, and the deflated Sharpe
  of the TEST excess over each reference deflated by the search's configs, every deflated
  Sharpe's trial variance capped at Lo's i.i.d. variance), recomputed from the journal;
* after: the session as it runs now, its GO as finalize journals it.

Arms (``--arm``, repeatable; all by default):

* power: graded markets (``graded:EDGE:SEED``, :func:`alphaloop.market.graded_prices`), where
  the planted config (``cufolio_hold_days`` 5) beats the default by EDGE of annualised Sharpe
  on unseen data, at EDGE 0, 0.25, 0.5 and 1.0, traded without costs. Per grade and rule: the
  share of sessions whose pick is not the default, whose pick beats the default on TEST, and
  that say GO, with Wilson 95% intervals, and beside each the ORACLE: the planted config alone
  (no search), on the same folds and TEST, judged by the same tests (the pick's paired test
  against the default on the folds at 5%, one pre-registered config; then the TEST tests and
  the success criteria). No procedure that searches can beat it by more than luck. At EDGE 0
  every config ties exactly and every pick that is not the default is false; GO with the
  success criteria switched off (the two paired TEST tests alone) is printed too, since the
  criteria alone fail a market without drift.
* folds: the fold length, measured: the same sessions' rule on folds half VALIDATION's length
  (eighteen folds of 18 months on a graded market, where VALIDATION-long folds make nine), at
  EDGE 0.5 and 1.0, beside the power arm's: pick, GO and search trials per hour.
* cpcv: combinatorial purged CV beside walk-forward at the same days: whether a group's returns
  depend on the groups that trained (a Mean-CVaR book has no training window), the paired z of
  the planted config over the default, and the group backtests each needs. (PPO's CPCV would
  train on groups after the one it scores; the evaluator refuses training rows after the
  window it scores, the guarantee that no TEST row and nothing later than a fold trains.)
* grades: each grade checked, not assumed: the planted config and the default on long unseen
  graded markets (years after a warm-up no session sees), their Sharpe difference.
* null-ar: the graded market at EDGE 0 with an autocorrelated common factor (AR(1), 0.4), which
  the calm and wild assets load on unequally, so every difference of two books is
  autocorrelated noise: false picks and false GO.
* tied: ``tied:SEED`` markets (:func:`alphaloop.market.tied_prices`), traded without costs:
  every long-only book ties, the default and 1/N included, while every book's Sharpe is about
  1.2, so the success criteria pass and only the two TEST tests can say NO-GO. Any pick that
  is not the default is false, and so is any GO.
* null: ``null:SEED`` markets (:func:`alphaloop.market.null_prices`): nothing beats 1/N (a
  diversifying config can beat the concentrated default, a small real edge), so any GO is
  false: the test against 1/N has to stop it.
* size: the paired Sharpe-difference test (Ledoit & Wolf, HAC) on null markets at the lengths
  it decides on: the default against the planted config on long graded markets at EDGE 0
  (independent and with the AR(1) factor), cut into TEST-long and fold-span-long windows; its
  rejection rate at 5% should be 5%.
* dsr: the deflated Sharpe on pure AR(1) noise (coefficient 0.4, N = 50 trials of T = 500
  days, the best taken, 300 repetitions): how often the best passes DSR > 0.95 with the
  trials' own variance of Sharpe ratios (the paper's), and with it capped at Lo's i.i.d.
  variance (the former rule).
* ppo: a smaller grid in ``ppo_only`` (EDGE 0 and 1.0).
* sp500: the embedded S&P 500 set, 12 sessions: per session the pick, its TEST Sharpe against
  the default's, whether it lost by more than one standard error, and GO with the test that
  decided it.

Sessions run in a process pool (``--workers``, 2 by default: this machine's cores), each
session on one core. A run can be extended: ``--first N`` starts each cell at session N, and
``--merge FILE ...`` puts the sessions an earlier run saved (``--save``) beside this run's in
every table (``--sessions 0 --merge ...`` prints the saved runs together). Reports numbers
only; it asserts nothing.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import pickle
import statistics
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from alphaloop import metrics
from alphaloop.flywheel.heldout import HELDOUT_BUCKETS, MIN_HELDOUT
from alphaloop.journal import Journal, TrialKind
from alphaloop.knobs import TrialConfig
from alphaloop.market import PLANTED_HOLD_DAYS, graded_prices, load_market, split
from alphaloop.market.worlds import GRADED_EVAL_DAYS
from alphaloop.meta_agent.session import SessionSpec
from alphaloop.metrics import Metrics
from alphaloop.trials import Rows, TrialBudget, build_folds, equal_weight_backtest, run_trial
from alphaloop.trials import folds as folds_module
from alphaloop.validation import (
    Gates,
    aligned_matrix,
    search_set,
    session_dsr,
    sharpe_difference,
)
from alphaloop.validation.sharpe import (
    effective_trials,
    expected_max_sharpe,
    probabilistic_sharpe_ratio,
    psr_from_moments,
    trial_sharpes,
)
from benchmarks import _pick_rules
from benchmarks._report import SummaryRow, print_rows, timed
from benchmarks.bench_generalisation import (
    LAST_PICKS,
    REPLAY,
    Outcome,
    _session,
    share,
    z_buckets,
)

MODE = "cufolio_only"
PROPOSERS = ("tpe", "random")
GRADES = (0.0, 0.25, 0.5, 1.0)
CHOSEN_GRADES: tuple[float, ...] = ()  # --grade: the power arm's grades, when not all
# The markets where no config beats the default, pooled for the pick's false-pick rate (the
# null market is apart: a diversifying config there can beat the concentrated default).
NO_EDGE = (("power", 0.0), ("tied", 0.0), ("null-ar", 0.0))
RULES = ("before", "after")
# The fold-length arm's rule: today's, on folds half VALIDATION's length (twice as many).
HALF = "after, half-length folds"
LEVEL = 0.05  # every paired test's one-sided level, the oracle's selection included
BUDGET = SessionSpec.model_fields["budget"].default  # the default budget of search trials
FORMER_FOLDS = 3  # today's layout: three VALIDATION-long folds ending at TEST
PLANTED = TrialConfig(cufolio_hold_days=PLANTED_HOLD_DAYS)
COST_FREE = TrialBudget(eval_cost_bps=0.0)
# Sessions per grade and rule, and of the other arms.
FULL = {"power": 16, "folds": 8, "null-ar": 16, "tied": 16, "null": 16, "ppo": 4, "sp500": 12}
QUICK = {"power": 1, "folds": 1, "null-ar": 1, "tied": 1, "null": 1, "ppo": 1, "sp500": 1}
QUICK_BUDGET = 4
PPO_TIMESTEPS, QUICK_PPO_TIMESTEPS = 4096, 1024
AR_FACTOR = 0.4
# Labelled pairs a first DPO run needs: ALPHALOOP_DPO_MIN_HELDOUT (20) held out, one in five.
DPO_PAIRS = MIN_HELDOUT * HELDOUT_BUCKETS


# --- the former rule's deflated Sharpe ---------------------------------------------------------


def former_dsr(candidate: Any, search: list[Any], effective: bool) -> float | None:
    """The deflated Sharpe as the former rule computed it: the hurdle's variance of Sharpe
    ratios capped at Lo's i.i.d. variance of one, ``(1 + SR^2 / 2) / T``; under N effective
    (Li & Ji) when ``effective``, else under N."""
    matrix = aligned_matrix(search)
    srs = trial_sharpes(matrix)
    luck = (1.0 + 0.5 * float(np.mean(srs**2))) / matrix.shape[0]
    variance = min(float(np.var(srs, ddof=1)) if srs.size > 1 else 0.0, luck)
    n = effective_trials(matrix) if effective else float(matrix.shape[1])
    r = np.asarray(candidate, dtype=float)
    sd = r.std(ddof=1)
    if r.size < 3 or sd <= 1e-15:
        return None
    from scipy import stats

    sr = float(r.mean() / sd)
    value = psr_from_moments(
        sr,
        r.size,
        float(stats.skew(r)),
        float(stats.kurtosis(r, fisher=False)),
        expected_max_sharpe(max(n, 1.0), variance),
    )
    return value if math.isfinite(value) else None


def vol_matched_excess(returns: Any, reference: Any) -> np.ndarray:
    """The former rule's excess series: ``returns`` less ``reference`` levered to the
    volatility of ``returns``, on their common latest days (its mean is the Sharpe difference
    times the volatility of ``returns``)."""
    paired = aligned_matrix([returns, reference])
    sd = paired.std(axis=0, ddof=1)
    return paired[:, 0] - (sd[0] / sd[1]) * paired[:, 1]


def criteria(test_metrics: dict[str, float], gates: Gates) -> bool:
    """The success criteria on TEST metrics (Sharpe, max drawdown, hit rate, profit factor)."""
    m = Metrics(**test_metrics)
    return (
        m.sharpe > (gates.min_sharpe or -math.inf)
        and m.max_drawdown < (gates.max_drawdown or math.inf)
        and m.hit_rate > (gates.min_hit_rate or -math.inf)
        and m.profit_factor > (gates.min_profit_factor or -math.inf)
    )


# --- what a session is judged by ---------------------------------------------------------------


@dataclass
class Judged:
    """One session's verdicts under its rule, and the oracle's on the same folds and TEST."""

    rule: str
    arm: str
    grade: float | None
    outcome: Outcome
    picked: bool = False
    beats_default: bool = False
    go: bool = False
    go_tests_only: bool = False  # the two paired TEST tests alone (success criteria off)
    oracle_picked: bool = False
    oracle_beats_default: bool = False
    oracle_go: bool = False
    oracle_go_tests_only: bool = False
    notes: dict[str, Any] = field(default_factory=dict)


def _seed_mean(series: list[list[float]]) -> np.ndarray:
    return aligned_matrix(series).mean(axis=1)


def _oracle(
    spec: SessionSpec, market: Any, rows: list[Any], n_folds: int, test: dict[str, Any]
) -> dict[str, Any]:
    """The planted config alone on the session's folds (on the baseline's seeds, as the pick's
    test averages both sides over their seeds) and on its TEST."""
    budget = spec.trial_budget
    base = [t for t in rows if t.kind == TrialKind.baseline and t.val_returns]
    folds = build_folds(market, n_folds)
    ours = []
    for seed in [t.seed or 0 for t in base]:
        days = [
            x
            for rows_ in folds
            for x in run_trial(MODE, PLANTED, market, budget, seed, window=rows_).daily_returns
        ]
        ours.append(days)
    planted_folds = _seed_mean(ours)
    pair = aligned_matrix([planted_folds, _seed_mean([t.val_returns for t in base])])
    on_folds = sharpe_difference(pair[:, 0], pair[:, 1])
    good = run_trial(MODE, PLANTED, market, budget, base[0].seed or 0, window="test")
    p = {ref: sharpe_difference(good.daily_returns, r).p_value for ref, r in test.items()}
    psr = probabilistic_sharpe_ratio(planted_folds)
    return {
        "picked": on_folds.p_value < LEVEL,
        "fold_z": on_folds.z,
        "test_sharpe": good.metrics.sharpe,
        "test_metrics": good.metrics.model_dump(),
        "p": p,
        "psr": psr,
        "excess": {ref: vol_matched_excess(good.daily_returns, r) for ref, r in test.items()},
        "returns": planted_folds,
    }


def power_extra(
    oracle: bool, spec: SessionSpec, market: Any, journal: Journal, sid: str
) -> dict[str, Any]:
    """What the power arms read off a finished session: the former rule's deflated Sharpes of
    its pick (and of its TEST excess), and the oracle on its folds and TEST."""
    session = journal.sessions.get(sid)
    final = session.final.journaled() if session.final else {}
    rows = journal.trials.of_session(sid)
    search = [t.val_returns for t in search_set(rows)]
    base = next(t for t in rows if t.kind == TrialKind.baseline and t.val_returns)
    tests = {t.parent_id: t for t in rows if t.kind == TrialKind.test and t.val_returns}
    budget = spec.trial_budget
    ew_val = equal_weight_backtest(market, "validation", budget).net
    test = {
        "default": tests[base.id].val_returns,
        "equal_weight": equal_weight_backtest(market, "test", budget).net,
    }
    reference_val = {"default": base.val_returns, "equal_weight": ew_val}
    out: dict[str, Any] = {"final": final}
    pick_id = final.get("best_trial_id")
    if pick_id is not None and search:
        pick = next(t for t in rows if t.id == pick_id)
        out["former_dsr"] = former_dsr(pick.val_returns, search, effective=False)
        out["former_excess_dsr"] = {
            ref: former_dsr(
                vol_matched_excess(tests[pick.id].val_returns, test[ref]),
                [vol_matched_excess(s, reference_val[ref]) for s in search],
                effective=True,
            )
            for ref in test
        }
    if oracle:
        found = _oracle(spec, market, rows, final["folds"]["n"], test)
        if search:
            found["former_excess_dsr"] = {
                ref: former_dsr(
                    found["excess"][ref],
                    [vol_matched_excess(s, reference_val[ref]) for s in search],
                    effective=True,
                )
                for ref in test
            }
        del found["excess"], found["returns"]
        out["oracle"] = found
    out["alternatives"] = alternative_picks(spec, market, rows, final, test)
    return out


# The pick rules weighed against one another on the same sessions, each replayed at the
# session's finalize on its rows (:mod:`benchmarks._pick_rules`).
ALTERNATIVES = tuple(_pick_rules.RULES)
REPLAY.update(_pick_rules.RULES)


def alternative_picks(
    spec: SessionSpec, market: Any, rows: list[Any], final: dict[str, Any], test: dict[str, Any]
) -> dict[str, dict[str, bool]]:
    """What each replayed pick rule picked in this session (:data:`LAST_PICKS`, the default
    when it picked nothing), and whether that pick beats the default on TEST and says GO by
    the session's gates."""
    by_id = {t.id: t for t in rows}
    return {
        name: _judged_pick(spec, market, rows, final, test, by_id.get(LAST_PICKS.get(name)))
        for name in ALTERNATIVES
    }


def _judged_pick(
    spec: SessionSpec,
    market: Any,
    rows: list[Any],
    final: dict[str, Any],
    test: dict[str, Any],
    chosen: Any,
) -> dict[str, bool]:
    """A pick's TEST verdicts under the session's gates (the default: no GO)."""
    if chosen is None:
        return {"picked": False, "beats": False, "go": False}
    config, seed = TrialConfig(**chosen.config), chosen.seed or 0
    policy = chosen.policy_path if spec.mode != MODE else None
    run = run_trial(
        spec.mode, config, market, spec.trial_budget, seed, window="test", policy_path=policy
    )
    p = {ref: sharpe_difference(*_pair(run.daily_returns, r)).p_value for ref, r in test.items()}
    gates = Gates()  # the benchmark's sessions are judged by the defaults (PBO no gate)
    dsr = session_dsr(chosen.val_returns, [t.val_returns for t in search_set(rows)]).dsr
    go = (
        all(v < (gates.max_excess_p_value or 1.0) for v in p.values())
        and criteria(run.metrics.model_dump(), gates)
        and (gates.min_deflated_sharpe is None or (dsr or 0.0) > gates.min_deflated_sharpe)
    )
    beats = run.metrics.sharpe > (final.get("baseline_test_objective") or math.inf)
    return {"picked": True, "beats": bool(beats), "go": bool(go)}


def _pair(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    m = aligned_matrix([a, b])
    return m[:, 0], m[:, 1]


def _p(final: dict[str, Any], reference: str) -> float:
    test = ((final.get("excess") or {}).get(reference) or {}).get("test") or {}
    return test.get("p_value", 1.0)


def judge(rule: str, arm: str, grade: float | None, o: Outcome) -> Judged:
    """A session's verdicts under ``rule`` (see the module docstring), and its oracle's."""
    extra, gates = o.extra, Gates()
    final = extra.get("final") or o.final
    j = Judged(rule, arm, grade, o)
    j.picked = o.searched
    j.beats_default = o.beats_default
    tests = j.picked and _p(final, "default") < LEVEL and _p(final, "equal_weight") < LEVEL
    j.go_tests_only = tests
    floor = gates.min_deflated_sharpe or 0.0
    if rule == "before":
        excess = extra.get("former_excess_dsr") or {}
        j.go = (
            tests
            and criteria(final["best_test"], gates)
            and (extra.get("former_dsr") or 0.0) > floor
            and (final.get("pbo") if final.get("pbo") is not None else 1.0) < (gates.max_pbo or 1)
            and all((excess.get(ref) or 0.0) > floor for ref in ("default", "equal_weight"))
        )
    else:
        j.go = bool(final.get("gates_passed"))
    oracle = extra.get("oracle")
    if oracle is not None:
        default_sharpe = final.get("baseline_test_objective")
        j.oracle_picked = oracle["picked"]
        j.oracle_beats_default = oracle["picked"] and oracle["test_sharpe"] > default_sharpe
        p = oracle["p"]
        j.oracle_go_tests_only = oracle["picked"] and all(v < LEVEL for v in p.values())
        go = (
            j.oracle_go_tests_only
            and criteria(oracle["test_metrics"], gates)
            and (oracle["psr"] if math.isfinite(oracle["psr"]) else 0.0) > floor
        )
        if rule == "before":
            excess = oracle.get("former_excess_dsr") or {}
            go = go and all((excess.get(r) or 0.0) > floor for r in ("default", "equal_weight"))
        j.oracle_go = go
    j.notes = {"seconds": o.seconds, "search_trials": len(o.val_test)}
    return j


# --- sessions ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """One session to run: its rule, arm, data and index."""

    rule: str
    arm: str
    grade: float | None
    index: int
    budget: int
    quick: bool


def _spec(task: Task, data: str, dates: tuple[str, str] | None = None) -> SessionSpec:
    ppo = task.arm == "ppo"
    steps = QUICK_PPO_TIMESTEPS if task.quick else PPO_TIMESTEPS
    if task.arm in ("sp500", "null"):
        budget = TrialBudget()
    elif ppo:
        budget = TrialBudget(total_timesteps=steps, eval_cost_bps=0.0)
    else:
        budget = COST_FREE
    return SessionSpec(
        goal=f"power benchmark, {task.arm}",
        mode="ppo_only" if ppo else MODE,
        budget=task.budget,
        proposer=PROPOSERS[task.index % 2],
        seed=1000 * (task.index + 1),
        data=data,
        train_end=dates[0] if dates else None,
        val_end=dates[1] if dates else None,
        trial_budget=budget,
        folds=FORMER_FOLDS if task.rule == "before" else None,
    )


def run_task(task: Task) -> Judged:
    """Runs one session (in a pool worker) and judges it."""
    logging.getLogger("alphaloop").setLevel(logging.ERROR)
    oracle = task.arm in ("power", "null-ar", "folds")
    extra = _bind(power_extra, oracle)
    if task.arm == "null-ar":
        with tempfile.TemporaryDirectory() as folder:
            data, dates = _ar_market(Path(folder), task.index)
            outcome = _session(_spec(task, data, dates), task.arm, extra)
    else:
        named = {"sp500": "sp500", "tied": f"tied:{task.index}", "null": f"null:{task.index}"}
        # A graded market's name is built only for the arms that have a grade.
        data = named[task.arm] if task.arm in named else f"graded:{task.grade:g}:{task.index}"
        half = task.rule == HALF
        layout = mock.patch.object(folds_module, "_fold_rows", half_rows) if half else nullcontext()
        with layout:
            outcome = _session(_spec(task, data), task.arm, extra)
    return judge(task.rule, task.arm, task.grade, outcome)


def half_rows(data: Any) -> int:
    """Folds half VALIDATION's length (the fold-length arm's layout)."""
    return (data.val.stop - data.val.start) // 2


def _bind(fn: Callable[..., Any], *args: Any) -> Callable[..., Any]:
    import functools

    return functools.partial(fn, *args)


def _ar_market(folder: Path, seed: int) -> tuple[str, tuple[str, str]]:
    """The graded market at EDGE 0 with an AR(1) common factor, written where a session can
    load it, and its VALIDATION and TEST (the last three years each, as ``graded:``)."""
    prices = graded_prices(0.0, seed=seed, factor_ar=AR_FACTOR)
    path = folder / f"graded-ar-{seed}.parquet"
    prices.to_parquet(path)
    days = prices.index[1:]  # returns start a day after the prices
    n = len(days)
    eval_days = GRADED_EVAL_DAYS
    return str(path), (
        days[n - 2 * eval_days - 1].date().isoformat(),
        days[n - eval_days - 1].date().isoformat(),
    )


def run_tasks(tasks: list[Task], workers: int) -> list[Judged]:
    """Runs ``tasks`` on ``workers`` processes (in the order given when ``workers`` is 1)."""
    if workers <= 1:
        return [run_task(t) for t in tasks]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(run_task, tasks))


# --- the power table -----------------------------------------------------------------------


def _rate(k: int, n: int) -> str:
    return share(k, n) if n else "n/a"


def grade_rows(judged: list[Judged]) -> list[tuple[str, str]]:
    """The rows of one grade: each share under each rule, the oracle's beside it."""
    rows = []
    by_rule = {r: [j for j in judged if j.rule == r] for r in dict.fromkeys(j.rule for j in judged)}
    measures: tuple[tuple[str, Callable[[Judged], bool], Callable[[Judged], bool]], ...] = (
        ("pick is not the default", lambda j: j.picked, lambda j: j.oracle_picked),
        (
            "pick beats the default on TEST",
            lambda j: j.beats_default,
            lambda j: j.oracle_beats_default,
        ),
        ("GO", lambda j: j.go, lambda j: j.oracle_go),
        (
            "GO, success criteria off (the two TEST tests)",
            lambda j: j.go_tests_only,
            lambda j: j.oracle_go_tests_only,
        ),
    )
    for name, ours, theirs in measures:
        for rule, js in by_rule.items():
            if not js:
                continue
            n = len(js)
            rows.append((f"{name}: {rule}", _rate(sum(map(ours, js)), n)))
            rows.append((f"  oracle ({rule})", _rate(sum(map(theirs, js)), n)))
    after = by_rule.get("after") or []
    for name in ALTERNATIVES:
        alt = [j.outcome.extra.get("alternatives", {}).get(name) for j in after]
        alt = [a for a in alt if a is not None]
        if alt:
            n = len(alt)
            rows.append(
                (
                    f"pick | beats on TEST | GO: {name}",
                    f"{_rate(sum(a['picked'] for a in alt), n)} | "
                    f"{sum(a['beats'] for a in alt)}/{n} | {_rate(sum(a['go'] for a in alt), n)}",
                )
            )
    for procedure in ("BH", "BY"):
        labels = [j.outcome.fdr_pairs.get(procedure) for j in after]
        labels = [x for x in labels if x is not None]
        if labels:
            won = [w for x in labels for w in x]
            anyone = _rate(sum(bool(x) for x in labels), len(labels))
            rows.append(
                (
                    f"pairs labelled by {procedure} at 10%: a session | sessions with any | "
                    "right on TEST",
                    f"{len(won) / len(labels):.1f} | {anyone} | {_rate(sum(won), len(won))}",
                )
            )
    for rule, js in by_rule.items():
        go, oracle = sum(j.go for j in js), sum(j.oracle_go for j in js)
        if js and oracle:
            rows.append((f"GO / oracle's GO: {rule}", f"{go / oracle:.0%} ({go} / {oracle})"))
        if js:
            rows.append((f"  GO (oracle's) by proposer, {' | '.join(PROPOSERS)}: {rule}",
                         " | ".join(_by_proposer(js, p) for p in PROPOSERS)))  # fmt: skip
            pairs = [p for j in js for p in j.outcome.pairs]
            rows.append(
                (
                    f"research pairs a session | right on TEST: {rule}",
                    f"{len(pairs) / len(js):.1f} | {_rate(sum(pairs), len(pairs))}",
                )
            )
            each = [pairs_at(j.outcome.state_pairs, 0.05) for j in js]
            flat = [won for session in each for won in session]
            rows.append(
                (
                    f"  the same labelled each at 5% (the former rule): {rule}",
                    f"{len(flat) / len(js):.1f} | {_rate(sum(flat), len(flat))}",
                )
            )
            rows.append(
                (
                    f"  every search pair by the folds' |z|, favoured wins on TEST: {rule}",
                    z_buckets([z for j in js for z in j.outcome.fold_z]),
                )
            )
            hours = sum(j.notes["seconds"] for j in js) / 3600
            trials = sum(j.notes["search_trials"] for j in js)
            rows.append((f"search trials per hour: {rule}", f"{trials / hours:,.0f}"))
    return rows


def rule_summary(judged: dict[str, list[Judged]]) -> list[SummaryRow]:
    """Each replayed pick rule side by side: its false picks pooled over the markets where no
    config beats the default (:data:`NO_EDGE`) and on the null market, and its picks and GO at
    each planted grade beside the oracle's GO."""
    out: list[SummaryRow] = []

    def alternatives(js: list[Judged]) -> dict[str, list[dict[str, bool]]]:
        found = {name: [j.outcome.extra.get("alternatives", {}).get(name) for j in js]
                 for name in ALTERNATIVES}  # fmt: skip
        return {name: [a for a in alt if a is not None] for name, alt in found.items()}

    pooled = [j for arm, grade in NO_EDGE for j in judged.get(arm, [])
              if j.grade == grade and j.rule == "after"]  # fmt: skip
    cells = [("no edge (graded 0, tied, null-ar)", pooled, "<= 5%")]
    cells.append(("null (1/N unbeaten)", judged.get("null", []), "reported"))
    rows = []
    for label, js, target in cells:
        for name, alt in alternatives(js).items():
            if not alt:
                continue
            picks = _rate(sum(a["picked"] for a in alt), len(alt))
            go = sum(a["go"] for a in alt)
            rows.append((f"{label}: {name}", f"pick {picks}; GO {go}/{len(alt)}"))
            out.append((f"pick rule, {label}: {name}", f"{picks}; GO {go}/{len(alt)}", target))
    for grade in (0.25, 0.5, 1.0):
        js = [j for j in judged.get("power", []) if j.grade == grade and j.rule == "after"]
        if not js:
            continue
        oracle = sum(j.oracle_go for j in js)
        for name, alt in alternatives(js).items():
            if not alt:
                continue
            picks = _rate(sum(a["picked"] for a in alt), len(alt))
            go = sum(a["go"] for a in alt)
            said = f"pick {picks}; GO {_rate(go, len(alt))} (oracle {oracle}/{len(js)})"
            rows.append((f"EDGE +{grade:g}: {name}", said))
            out.append((f"pick rule, EDGE +{grade:g}: {name}", said, "no loss of power"))
    if rows:
        print("\npick rules side by side (the same sessions)")
        print_rows(rows)
    return out


def _by_proposer(judged: list[Judged], proposer: str) -> str:
    """GO and the oracle's GO over ``proposer``'s sessions: ``go/n (oracle/n)``."""
    js = [j for j in judged if j.outcome.proposer == proposer]
    return f"{sum(j.go for j in js)}/{len(js)} ({sum(j.oracle_go for j in js)}/{len(js)})"


def pairs_at(state_pairs: list[tuple[float, int, bool]], alpha: float) -> list[bool]:
    """Whether the favoured side won on TEST, for each of a session's same-state pairs whose
    folds' paired test passes at ``alpha`` two-sided on its own (the former labelling rule)."""
    from scipy import stats

    return [won for z, _, won in state_pairs if 2 * stats.norm.sf(z) < alpha]


def power_summary(judged: list[Judged]) -> list[SummaryRow]:
    """The targets' rows: at 0 pick and GO <= 5%; from +0.5 GO >= 80% of the oracle's; at +1.0
    GO >= 70%; each grade's GO over all sessions and over TPE's (the default proposer)."""
    out: list[SummaryRow] = []
    for grade in sorted({j.grade for j in judged if j.grade is not None}):
        for rule in dict.fromkeys(j.rule for j in judged):
            js = [j for j in judged if j.grade == grade and j.rule == rule]
            if not js:
                continue
            label = f"power +{grade:g} ({rule})"
            if grade == 0:
                n, go, picks = len(js), sum(j.go for j in js), sum(j.picked for j in js)
                out.append((f"{label}: pick | GO", f"{picks}/{n} | {go}/{n}", "<= 5% each"))
                continue
            target = "reported" if grade < 0.5 else ">= 80% of the oracle's"
            target += ", >= 70%" if grade >= 1 else ""
            # TPE is the proposer a session runs when no LLM is configured
            tpe = [j for j in js if j.outcome.proposer == "tpe"]
            for name, some in ((label, js), (f"{label}, TPE", tpe)):
                m, go, oracle = len(some), sum(j.go for j in some), sum(j.oracle_go for j in some)
                ratio = f"{go / oracle:.0%}" if oracle else "n/a"
                out.append(
                    (f"{name}: GO | oracle | ratio", f"{go}/{m} | {oracle}/{m} | {ratio}", target)
                )
    return out


def print_sessions(judged: list[Judged]) -> None:
    rows = []
    for j in judged:
        f = j.outcome.extra.get("final") or j.outcome.final
        rows.append(
            (
                f"{j.rule} {j.outcome.data} {j.outcome.proposer}",
                f"pick {f.get('pick', '?'):<7} GO {'yes' if j.go else 'no ':<3} "
                f"oracle pick {'yes' if j.oracle_picked else 'no '} GO "
                f"{'yes' if j.oracle_go else 'no '}  {j.notes['seconds']:.0f} s  "
                f"{(f.get('gates_summary') or '')[:90]}",
            )
        )
    print_rows(rows, indent="    ")


# --- the checks that need no session -------------------------------------------------------


def dsr_on_ar_noise(repetitions: int, seed: int = 0) -> tuple[float, float]:
    """How often the best of 50 pure-noise AR(1) trials (coefficient 0.4, 500 days) passes
    DSR > 0.95: with the trials' own variance of Sharpe ratios, and capped at Lo's."""
    from scipy.signal import lfilter

    from alphaloop.validation.sharpe import deflated_sharpe

    rng = np.random.default_rng(seed)
    own = capped = 0
    for _ in range(repetitions):
        # x_t = 0.4 x_{t-1} + e_t, the first 100 days dropped as burn-in.
        x = lfilter([1.0], [1.0, -0.4], rng.normal(0.0, 0.01, (600, 50)), axis=0)[100:]
        srs = trial_sharpes(x)
        best = x[:, int(np.argmax(srs))]
        own += deflated_sharpe(best, srs).dsr > 0.95
        capped += (former_dsr(best, list(x.T), effective=False) or 0.0) > 0.95
    return own / repetitions, capped / repetitions


def edge_check(task: tuple[float, int, int]) -> tuple[float, int, float, float, float, float]:
    """The planted config and the default on ``years`` of a graded market after a two-year
    warm-up no session sees: (grade, seed, default Sharpe, planted Sharpe, 1/N Sharpe, the
    paired z of planted over default)."""
    grade, seed, years = task
    prices = graded_prices(grade, n_days=(years + 3) * 252, seed=seed)
    dates = prices.index
    market = split(prices, str(dates[2 * 252].date()), str(dates[3 * 252].date()), "edge")
    runs = {
        name: run_trial(MODE, config, market, COST_FREE, 0, window="test").daily_returns
        for name, config in (("default", TrialConfig()), ("planted", PLANTED))
    }
    ew = equal_weight_backtest(market, "test", COST_FREE).net
    z = sharpe_difference(runs["planted"], runs["default"]).z
    return (
        grade,
        seed,
        metrics.sharpe(runs["default"]),
        metrics.sharpe(runs["planted"]),
        metrics.sharpe(ew),
        z,
    )


def size_windows(task: tuple[float, int, int]) -> dict[str, list[float]]:
    """The paired test's z, the planted config against the default, on consecutive windows of
    a long graded market at EDGE 0 (no book has an edge): TEST-long (3 years) and three-fold
    long (9 years) windows. ``task``: (AR(1) coefficient of the factor, seed, years)."""
    ar, seed, years = task
    prices = graded_prices(0.0, n_days=(years + 3) * 252, seed=seed, factor_ar=ar)
    dates = prices.index
    market = split(prices, str(dates[2 * 252].date()), str(dates[3 * 252].date()), "size")
    a, b = (
        np.asarray(run_trial(MODE, c, market, COST_FREE, 0, window="test").daily_returns)
        for c in (PLANTED, TrialConfig())
    )
    out: dict[str, list[float]] = {}
    for label, length in (("3 years", 3 * 252), ("9 years", 9 * 252)):
        out[label] = [
            sharpe_difference(a[i : i + length], b[i : i + length]).z
            for i in range(0, len(a) - length + 1, length)
        ]
    return out


def cpcv_check(seed: int) -> dict[str, Any]:
    """Combinatorial purged CV beside walk-forward on one graded market (EDGE 0.5): the planted
    config and the default on the session's nine folds as groups. CPCV with k = 2 test groups
    scores each group in C(8, 1) = 8 of its C(9, 2) = 36 splits, each time after training on
    the other groups (purged); walk-forward scores each once after training on the groups
    before it. A Mean-CVaR book has no training window (its scenarios are the trailing days
    before each solve), so a group's returns cannot depend on which groups trained: the check
    runs each group twice, with the walk-forward's training rows and with a CPCV split's
    (purged, the rows after the group left out, as the evaluator requires), and compares."""
    market = load_market(f"graded:0.5:{seed}")
    groups = build_folds(market, 9)
    same, z = True, {}
    for config, name in ((PLANTED, "planted"), (TrialConfig(), "default")):
        walk = [run_trial(MODE, config, market, COST_FREE, 0, window=g) for g in groups]
        other = Rows(
            start=groups[4].start, stop=groups[4].stop, train=(groups[0].start, groups[1].stop)
        )
        again = run_trial(MODE, config, market, COST_FREE, 0, window=other)
        same = same and again.daily_returns == walk[4].daily_returns
        z[name] = [x for r in walk for x in r.daily_returns]
    test = sharpe_difference(z["planted"], z["default"])
    return {"same_returns": same, "z": test.z, "walk_runs": 9, "cpcv_runs": 36 * 2}


def _pool_map(fn: Callable[[Any], Any], items: Iterable[Any], workers: int) -> list[Any]:
    items = list(items)
    if workers <= 1:
        return [fn(x) for x in items]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, items))


def check_grades(quick: bool, workers: int) -> list[SummaryRow]:
    years, seeds = (4, 1) if quick else (30, 3)
    checks = _pool_map(
        edge_check, [(g, 100 + s, years) for g in GRADES for s in range(seeds)], workers
    )
    rows, summary = [], []
    for grade in GRADES:
        found = [c for c in checks if c[0] == grade]
        gaps = [p - d for _, _, d, p, _, _ in found]
        rows.append(
            (
                f"EDGE {grade:g}",
                f"planted - default {statistics.fmean(gaps):+.3f} over {len(found)} markets of "
                f"{years} unseen years ("
                + ", ".join(f"{g:+.2f}" for g in gaps)
                + f"); default {statistics.fmean(c[2] for c in found):.2f}, planted "
                f"{statistics.fmean(c[3] for c in found):.2f}, 1/N "
                f"{statistics.fmean(c[4] for c in found):.2f}; paired z "
                + ", ".join(f"{c[5]:+.1f}" for c in found),
            )
        )
        summary.append(
            (
                f"grade {grade:g}: planted - default on unseen data",
                f"{statistics.fmean(gaps):+.3f}",
                f"{grade:+g}",
            )
        )
    print(f"grades, checked on long unseen markets ({MODE}, no costs)")
    print_rows(rows)
    return summary


def iid_pair_z(days: int, repetitions: int, seed: int = 0) -> list[float]:
    """The paired test's z on ``repetitions`` pairs of i.i.d. normal series of equal Sharpe (0)
    correlated 0.9, as two long-only books are: where the test is calibrated by construction."""
    rng = np.random.default_rng(seed)
    zs = []
    for _ in range(repetitions):
        common = rng.normal(0.0, 0.01, days)
        a, b = (0.9 * common + math.sqrt(0.19) * rng.normal(0.0, 0.01, days) for _ in "ab")
        zs.append(sharpe_difference(a, b).z)
    return zs


def check_size(quick: bool, workers: int) -> list[SummaryRow]:
    years, seeds = (9, 1) if quick else (90, 2)
    found = _pool_map(
        size_windows,
        [(ar, 200 + s, years) for ar in (0.0, AR_FACTOR) for s in range(seeds)],
        workers,
    )
    rows, summary = [], []
    for k, ar in enumerate((0.0, AR_FACTOR)):
        runs = found[k * seeds : (k + 1) * seeds]
        for label in ("3 years", "9 years"):
            zs = [z for r in runs for z in r[label]]
            hits = sum(z > 1.645 for z in zs)
            var = statistics.variance(zs) if len(zs) > 1 else math.nan
            name = f"paired test at 5%, {label}, factor AR {ar:g}"
            rows.append(
                (name, f"rejects {_rate(hits, len(zs))}; var(z) {var:.2f} (1 if calibrated)")
            )
            summary.append((f"size: {name}", f"{hits}/{len(zs)}", "5%"))
    # The reference: the same test where it is calibrated by construction.
    for label, days in (("3 years", GRADED_EVAL_DAYS), ("9 years", 3 * GRADED_EVAL_DAYS)):
        zs = iid_pair_z(days, 40 if quick else 400)
        hits = sum(z > 1.645 for z in zs)
        rows.append(
            (
                f"the same on i.i.d. normal pairs (correlation 0.9), {label}",
                f"rejects {_rate(hits, len(zs))}; var(z) {statistics.variance(zs):.2f}",
            )
        )
    print("size of the paired Sharpe-difference test on null graded markets (EDGE 0)")
    print_rows(rows)
    return summary


# --- the arms --------------------------------------------------------------------------------

ARMS = (
    "dsr",
    "size",
    "grades",
    "cpcv",
    "power",
    "folds",
    "null-ar",
    "tied",
    "null",
    "ppo",
    "sp500",
)


def _tasks(
    arm: str, n: int, budget: int, quick: bool, rules: tuple[str, ...], first: int = 0
) -> list[Task]:
    grades: tuple[float | None, ...] = (None,)
    if arm == "power":
        grades = CHOSEN_GRADES or GRADES
    elif arm == "ppo":
        grades = (0.0, 1.0)
    elif arm == "folds":
        grades, rules = (0.5, 1.0), (HALF,)
    elif arm in ("null-ar", "tied", "null"):
        grades = (0.0,)
    indices = range(first, first + n)
    return [Task(r, arm, g, i, budget, quick) for g in grades for r in rules for i in indices]


def sp500_rows(judged: list[Judged]) -> list[tuple[str, str]]:
    """Per session: the pick, TEST Sharpes, a loss of more than one standard error, GO and
    the test that decided it."""
    rows = []
    for k, j in enumerate(judged, 1):
        f = j.outcome.extra.get("final") or j.outcome.final
        test = ((f.get("excess") or {}).get("default") or {}).get("test") or {}
        lost = bool(test) and test["difference"] < -test["se"]
        # The journaled verdict starts with GO or NO-GO itself.
        verdict = f.get("gates_summary") or f.get("gates_note") or ("GO" if j.go else "NO-GO")
        rows.append(
            (
                f"session {k} ({j.outcome.proposer})",
                f"pick {f.get('pick')}: TEST Sharpe {j.outcome.test_sharpe('pick') or math.nan:.3f}"
                f" vs default {j.outcome.test_sharpe('default') or math.nan:.3f}"
                f"{' LOST by > 1 SE' if lost else ''}; {verdict}",
            )
        )
    return rows


def main(
    quick: bool = False,
    arms: list[str] | None = None,
    sessions: int | None = None,
    budget: int | None = None,
    workers: int = 2,
    rules: tuple[str, ...] = RULES,
    save: str | None = None,
    first: int = 0,
    merge: list[str] | None = None,
) -> dict[str, Any]:
    """Runs the arms and prints the power table beside the oracle, before and after: sessions
    ``first`` onwards of each cell, beside those an earlier run saved (``merge``)."""
    logging.getLogger("alphaloop").setLevel(logging.ERROR)
    plan = QUICK if quick else FULL
    b = budget or (QUICK_BUDGET if quick else BUDGET)
    summary: list[SummaryRow] = []
    judged: dict[str, list[Judged]] = {}
    earlier: dict[str, list[Judged]] = {}
    for path in merge or []:
        with open(path, "rb") as f:
            for arm, found in pickle.load(f)["judged"].items():
                earlier[arm] = earlier.get(arm, []) + found
    for arm in arms or ARMS:
        if arm == "dsr":
            seconds, (own, capped) = timed(lambda: dsr_on_ar_noise(30 if quick else 300))
            print(f"\ndsr: best of 50 AR(1) noise trials passes DSR > 0.95 ({seconds:.0f} s)")
            print_rows(
                [
                    ("trials' own variance (the paper)", f"{own:.1%}"),
                    ("capped at Lo's i.i.d. variance (former)", f"{capped:.1%}"),
                ]
            )
            summary.append(
                ("dsr on AR(1) noise: own | capped", f"{own:.1%} | {capped:.1%}", "<= 5%")
            )
            continue
        if arm == "grades":
            summary += check_grades(quick, workers)
            continue
        if arm == "size":
            summary += check_size(quick, workers)
            continue
        if arm == "cpcv":
            found = _pool_map(cpcv_check, range(1 if quick else 4), workers)
            same = all(f["same_returns"] for f in found)
            print(
                "\ncpcv: CPCV (9 groups, 2 test groups) beside walk-forward (9 folds), graded:0.5"
            )
            print_rows(
                [
                    ("a group's returns whatever trained", "identical" if same else "DIFFER"),
                    (
                        "paired z, planted over default (every path the same)",
                        ", ".join(f"{f['z']:.2f}" for f in found),
                    ),
                    (
                        "group backtests per config: CPCV | walk-forward",
                        f"{found[0]['cpcv_runs']} | {found[0]['walk_runs']}",
                    ),
                ]
            )
            summary.append(
                (
                    "cpcv: compute for the same days and z, CPCV / walk-forward",
                    f"{found[0]['cpcv_runs'] / found[0]['walk_runs']:.0f}x",
                    "1x",
                )
            )
            continue
        n = plan[arm] if sessions is None else sessions
        arm_rules = ("after",) if arm in ("sp500", "tied", "null", "null-ar") else rules
        seconds, found = timed(
            lambda a=arm, n=n, r=arm_rules: run_tasks(_tasks(a, n, b, quick, r, first), workers)
        )
        ran, found = len(found), earlier.get(arm, []) + found
        judged[arm] = found
        now = f"{ran} run now in {seconds:.0f} s"
        print(f"\n{arm}: {len(found)} sessions x {b} search trials ({now})", flush=True)
        print_sessions(found)
        pairs = [p for j in found for p in j.outcome.pairs]
        per = len(pairs) / len(found) if found else 0.0
        need = math.ceil(DPO_PAIRS / per) if per else "never"
        summary.append(
            (
                f"{arm}: research pairs a session | right on TEST | sessions before dpo train",
                f"{per:.1f} | {_rate(sum(pairs), len(pairs))} | {need}",
                ">= 65% right",
            )
        )
        if arm == "sp500":
            print_rows(sp500_rows(found))
            lost = sum(1 for row in sp500_rows(found) if "LOST" in row[1])
            summary.append(
                ("sp500: pick lost to the default by > 1 SE", f"{lost}/{len(found)}", "0")
            )
            summary.append(("sp500: GO", f"{sum(j.go for j in found)}/{len(found)}", "reported"))
            continue
        for grade in sorted({j.grade for j in found if j.grade is not None}):
            print(f"  EDGE +{grade:g}")
            print_rows(grade_rows([j for j in found if j.grade == grade]), indent="    ")
        if arm != "sp500":
            for row in power_summary(found):
                summary.append((f"{arm}: {row[0]}", row[1], row[2]))
    summary += rule_summary(judged)
    print()
    print_rows([(m, f"{v}   (target {ref})") for m, v, ref in summary])
    if save:
        with open(save, "wb") as f:
            pickle.dump({"judged": judged, "summary": summary}, f)
    return {"judged": judged, "summary": summary}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1 session a cell")
    parser.add_argument("--arm", action="append", choices=ARMS, help="only these arms")
    parser.add_argument("--sessions", type=int, help="sessions per grade and rule")
    parser.add_argument("--budget", type=int, help="search trials per session")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--rule", action="append", choices=RULES, help="only these rules")
    parser.add_argument("--save", help="also pickle every session's verdicts to this file")
    parser.add_argument("--first", type=int, default=0, help="the first session index a cell runs")
    parser.add_argument(
        "--grade", action="append", type=float, choices=GRADES, help="the power arm's grades"
    )
    parser.add_argument(
        "--merge", nargs="+", help="files an earlier --save wrote: their sessions join this run's"
    )
    args = parser.parse_args()
    rules = tuple(args.rule or RULES)
    CHOSEN_GRADES = tuple(args.grade or ())
    main(
        args.quick,
        args.arm,
        args.sessions,
        args.budget,
        args.workers,
        rules,
        args.save,
        args.first,
        args.merge,
    )
