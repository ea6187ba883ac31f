"""Does the loop, replayed over history, say GO when the edge is real, as often as an oracle
would, and never on noise? Run: ``python -m benchmarks.bench_walk`` (``--quick`` for a smoke
run).

A walk (``alphaloop walk``) runs a research session at every epoch on the data cut there and
trades its pick over the period after it; its verdict tests those periods end to end. This
benchmark runs walks through the code the CLI runs (``create_walk`` / ``run_walk``, each in a
fresh home, ``cufolio_only``, TPE and random in turn) on markets where the answer is known:

* power: graded markets (``graded:EDGE:SEED``, 33 years, where the planted config
  ``cufolio_hold_days`` 5 beats the default by EDGE of annualised Sharpe on unseen data,
  traded without costs) at EDGE 0, 0.25, 0.5 and 1.0. Per grade: the share of walks that say
  GO under each rule (the session's own pick, the best kept config, the best-estimated one;
  every walk reports all three on the same sessions), with Wilson 95% intervals, beside
  - the ORACLE: the planted config itself traded over the same out-of-sample days, judged by
    the same tests (its two paired tests and the success criteria), the ceiling no search can
    beat but by luck;
  - a lone session on the same market (its own TEST, the last three years), as today's
    product says GO.
  At EDGE 0 every config ties exactly: any GO is false, and so is a lone session's pick that
  is not the default.
* null, tied, null-ar: markets with no edge for anything (see ``bench_power.py``): any GO is
  false; a lone session's pick that is not the default is false.
* sp500: the embedded S&P 500 set, one walk: its verdict, its minimum detectable edge, the
  picks per epoch, the preference pairs labelled by the period after their epoch and their
  agreement with the period after that, and its wall time.

Each row also prints the edge the walks could detect (the median minimum detectable edge over
the default at 80% power), the pairs per walk, and the median wall time of a walk. Walks run in
a process pool (``--workers``, each walk on one core, its epochs in turn). ``--save`` keeps
the walks, ``--merge`` prints saved ones beside this run's. Reports numbers only; it asserts
nothing.
"""

from __future__ import annotations

import argparse
import logging
import pickle
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from alphaloop.journal import Journal
from alphaloop.knobs import TrialConfig
from alphaloop.market import PLANTED_HOLD_DAYS, market_of
from alphaloop.market.worlds import GRADED_EVAL_DAYS
from alphaloop.meta_agent.session import SessionSpec, create_session, run_session
from alphaloop.settings import Settings
from alphaloop.trials import TrialBudget, equal_weight_backtest, run_trial
from alphaloop.validation import Gates, evaluate_gates, excess_evidence
from alphaloop.walk import DEFAULT_RULE, RULES, WalkSpec, create_walk, plan, run_walk
from alphaloop.walk.record import _metrics
from alphaloop.walk.run import epoch_spec
from benchmarks._report import SummaryRow, print_rows
from benchmarks.bench_generalisation import share
from benchmarks.bench_power import _ar_market

MODE = "cufolio_only"
PROPOSERS = ("tpe", "random")
GRADES = (0.0, 0.25, 0.5, 1.0)
NULLS = ("null", "tied", "null-ar")
PLANTED = TrialConfig(cufolio_hold_days=PLANTED_HOLD_DAYS)
COST_FREE = TrialBudget(eval_cost_bps=0.0)


@dataclass(frozen=True)
class Task:
    arm: str
    data: str
    index: int
    budget: int
    carry: int
    folds: int | None
    start: str | None
    quick: bool
    # Each fold three years, as a lone session's VALIDATION on a graded market (a file of
    # one, the null-ar arm's, would otherwise be split 60/20/20).
    fold_days: int | None = None


@dataclass
class Walked:
    """One walk and what it is judged against."""

    arm: str
    data: str
    proposer: str
    go: dict[str, bool]
    detectable_default: dict[str, float | None]
    oracle_go: bool | None
    session_go: bool
    session_picked: bool
    n_epochs: int
    n_default: dict[str, int]
    pairs: int
    pairs_checked: int
    pairs_agree: int
    seconds: float
    verdict: str
    epochs: list[dict[str, Any]] = field(default_factory=list)
    # The search an epoch ran (trials, configs carried): walks saved under other settings are
    # reported in cells of their own.
    setting: str = ""


def _data(arm: str, grade: float | None, seed: int, folder: Path) -> str:
    if arm == "power":
        return f"graded:{grade:g}:{seed}"
    if arm == "null-ar":  # the graded market at EDGE 0 with an AR(1) common factor
        return _ar_market(folder, seed)[0]
    return {"null": f"null:{seed}", "tied": f"tied:{seed}", "sp500": "sp500"}[arm]


def _session_spec(task: Task) -> SessionSpec:
    costs = TrialBudget() if task.arm in ("sp500", "null") else COST_FREE
    return SessionSpec(
        goal=f"walk benchmark, {task.arm}",
        mode=MODE,
        budget=task.budget,
        proposer=PROPOSERS[task.index % 2],
        seed=1000 * (task.index + 1),
        data=task.data,
        trial_budget=costs,
        folds=task.folds,
    )


def _oracle(spec: WalkSpec, walk_id: str, gates: Gates) -> bool | None:
    """The planted config traded over the walk's periods, under the walk's tests."""
    if not spec.session.data.startswith("graded:"):
        return None  # (the null-ar market is a file: its planted config ties, as at EDGE 0)
    data = market_of(spec.session)
    planted, default, equal = [], [], []
    budget = spec.session.trial_budget
    for epoch in plan(spec, data):
        market = market_of(epoch_spec(spec, epoch, walk_id, side_by_side=False))
        seed = spec.session.seed
        planted.append(run_trial(MODE, PLANTED, market, budget, seed, window="test"))
        default.append(run_trial(MODE, TrialConfig(), market, budget, seed, window="test"))
        equal.append(equal_weight_backtest(market, "test", budget).net)
    p = np.concatenate([r.daily_returns for r in planted])
    d = np.concatenate([r.daily_returns for r in default])
    e = np.concatenate(equal)
    excess = {
        "default": excess_evidence("default", p, d),
        "equal_weight": excess_evidence("equal_weight", p, e),
    }
    report = evaluate_gates(
        _metrics(p),
        None,
        None,
        gates.model_copy(update={"min_deflated_sharpe": None, "max_pbo": None}),
        excess=excess,
    )
    return report.passed


def _lone_session(task: Task, home: str) -> tuple[bool, bool]:
    """A lone session on the same market: (GO, its pick is not the default)."""
    settings = Settings(ALPHALOOP_HOME=f"{home}/lone")
    sid = create_session(_session_spec(task), settings)
    run_session(sid, settings)
    with Journal(settings.journal_path) as journal:
        final = journal.sessions.get(sid).final
    return bool(final and final.gates_passed), bool(final and final.pick == "search")


def run_task(task: Task) -> Walked:
    """Runs one walk (in a pool worker), its oracle and a lone session on the same market."""
    logging.getLogger("alphaloop").setLevel(logging.ERROR)
    spec = WalkSpec(session=_session_spec(task), carry=task.carry, fold_days=task.fold_days)
    if task.start is not None and task.start.startswith("last:"):  # the last N epochs, or all
        epochs = plan(spec, market_of(spec.session))
        last = epochs[-min(int(task.start.removeprefix("last:")), len(epochs))]
        spec = WalkSpec.model_validate({**spec.model_dump(), "start": last.first_day})
    elif task.start is not None:
        spec = WalkSpec.model_validate({**spec.model_dump(), "start": task.start})
    with tempfile.TemporaryDirectory() as home:
        settings = Settings(ALPHALOOP_HOME=home)
        began = time.perf_counter()
        walk_id = create_walk(spec, settings)
        report = run_walk(walk_id, settings)
        seconds = time.perf_counter() - began
        with Journal(settings.journal_path) as journal:
            stored = journal.walks.get(walk_id).spec
        oracle = _oracle(stored, walk_id, stored.session.gates)
        session_go, session_picked = _lone_session(task, home)
    return Walked(
        arm=task.arm,
        data=task.data,
        proposer=spec.session.proposer,
        go={r.rule: r.go for r in report.records},
        detectable_default={r.rule: r.detectable.get("default") for r in report.records},
        oracle_go=oracle,
        session_go=session_go,
        session_picked=session_picked,
        n_epochs=len(report.epochs),
        n_default={r.rule: r.n_default for r in report.records},
        pairs=report.pairs.n_pairs,
        pairs_checked=report.pairs.n_checked,
        pairs_agree=report.pairs.n_agree,
        seconds=seconds,
        verdict=report.verdict,
        epochs=[line.model_dump() for line in report.epochs],
        setting=f"budget {task.budget}, carry {task.carry}",
    )


def tasks(arms: list[str], walks: int, args: argparse.Namespace, folder: Path) -> list[Task]:
    out = []
    for arm in arms:
        grades = args.grade or GRADES
        cells = [(g, f"{arm} {g:+g}") for g in grades] if arm == "power" else [(None, arm)]
        n = 1 if arm == "sp500" else walks
        for grade, _ in cells:
            for i in range(n):
                seed = 7000 + i
                out.append(
                    Task(
                        arm=arm if grade is None else f"power {grade:+g}",
                        data=_data(arm, grade, seed, folder),
                        index=i,
                        budget=args.budget,
                        carry=args.carry,
                        folds=args.folds,
                        start=args.start,
                        quick=args.quick,
                        fold_days=GRADED_EVAL_DAYS if arm == "null-ar" else None,
                    )
                )
    return out


def _median(values: list[float | None]) -> str:
    found = [v for v in values if v is not None]
    return f"{statistics.median(found):+.2f}" if found else "-"


def report(walked: list[Walked]) -> list[SummaryRow]:
    rows: list[SummaryRow] = []
    for arm, setting in dict.fromkeys((w.arm, w.setting) for w in walked):
        cell = [w for w in walked if (w.arm, w.setting) == (arm, setting)]
        n = len(cell)
        print(f"\n{arm} ({setting}): {n} walk(s), {cell[0].n_epochs} epochs each")
        for rule in RULES:
            k = sum(w.go[rule] for w in cell)
            by = [(p, [w.go[rule] for w in cell if w.proposer == p]) for p in PROPOSERS]
            print(
                f"  walk GO, {rule:6} rule: {share(k, n)} ("
                + ", ".join(f"{p} {sum(g)}/{len(g)}" for p, g in by if g)
                + "); edge detectable over the default "
                f"(median) {_median([w.detectable_default[rule] for w in cell])}; epochs "
                f"trading the default {sum(w.n_default[rule] for w in cell)}/"
                f"{sum(w.n_epochs for w in cell)}"
            )
        oracle = [w.oracle_go for w in cell if w.oracle_go is not None]
        if oracle:
            print(
                f"  oracle GO (the planted config, same days, same tests): "
                f"{share(sum(oracle), len(oracle))}"
            )
        print(
            f"  lone session GO: {share(sum(w.session_go for w in cell), n)}; its pick is not "
            f"the default: {share(sum(w.session_picked for w in cell), n)}"
        )
        pairs = sum(w.pairs for w in cell)
        checked = sum(w.pairs_checked for w in cell)
        agree = sum(w.pairs_agree for w in cell)
        print(
            f"  pairs labelled by the period after their epoch: {pairs / n:.1f} a walk; the "
            f"period after that agrees on {share(agree, checked)}"
        )
        print(f"  wall time of a walk (median): {statistics.median(w.seconds for w in cell):.0f} s")
        for w in cell if arm == "sp500" else []:
            print(f"  {w.verdict}")
        rows.append(
            (
                f"walk GO ({arm}, {setting}, {DEFAULT_RULE.value} rule)",
                share(sum(w.go[DEFAULT_RULE.value] for w in cell), n),
                "oracle " + (share(sum(oracle), len(oracle)) if oracle else "-"),
            )
        )
    return rows


def main(argv: list[str] | None = None) -> list[SummaryRow]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arm", action="append", choices=["power", *NULLS, "sp500"])
    parser.add_argument("--walks", type=int, default=8, help="walks a cell (default 8)")
    parser.add_argument("--budget", type=int, default=20, help="search trials an epoch")
    parser.add_argument("--carry", type=int, default=0, help="configs carried between epochs")
    parser.add_argument(
        "--grade", type=float, action="append", help="the power arm's EDGE (default: all four)"
    )
    parser.add_argument("--folds", type=int, default=None, help="folds a session (default: all)")
    parser.add_argument(
        "--start", default=None, help="the first epoch, a date or last:N (default: the first fit)"
    )
    parser.add_argument("--workers", type=int, default=2, help="walks at once (default 2)")
    parser.add_argument("--save", type=Path, default=None, help="keep the walks in this file")
    parser.add_argument("--merge", type=Path, nargs="*", default=[], help="saved walks to add")
    parser.add_argument("--quick", action="store_true", help="a smoke run: tiny walks")
    args = parser.parse_args(argv)
    if args.quick:
        args.walks, args.budget, args.folds = 1, 2, 1
        args.start = args.start or "last:2"
    arms = args.arm or ["power", *NULLS]
    walked: list[Walked] = []
    for path in args.merge:
        walked += pickle.loads(path.read_bytes())
    with tempfile.TemporaryDirectory() as folder, ProcessPoolExecutor(args.workers) as pool:
        todo = tasks(arms, args.walks, args, Path(folder)) if args.walks else []
        for done in pool.map(run_task, todo):
            walked.append(done)
            if args.save:  # after every walk: an interrupted run keeps what it finished
                args.save.write_bytes(pickle.dumps(walked))
    rows = report(walked)
    print()
    print_rows([(name, f"{value} ({ref})") for name, value, ref in rows])
    return rows


if __name__ == "__main__":
    main()
