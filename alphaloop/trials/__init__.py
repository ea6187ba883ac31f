"""The frozen evaluator: runs one trial of a mode and scores it. Proposers never edit this package.

What a proposer may change lives in ``alphaloop.knobs``. What it may not — the data split, the
cost charged on the evaluation window, the metric code, the training budget, the baselines — is
fixed here. Knobs shape training only: validation and test always charge ``eval_cost_bps``
whatever ``turnover_cost_bps`` or ``vol_penalty`` a proposer set.

A trial is a pure function of (mode, config, data fingerprint, seed, budget): the same inputs give
the same ``TrialResult`` (up to elapsed time), which is what makes a journaled trial replayable.

Backtest accounting (one convention for every strategy and baseline): at the open of a
rebalance day the book trades from its drifted weights to the target weights, paying
``eval_cost_bps`` per unit of one-way turnover ``sum |w_target - w_drifted|``; between rebalances
weights drift with prices. The book starts on the window's first day already holding its first
target, so no strategy pays for the initial purchase.

One entry point scores everything: :func:`evaluate` of a subject (a config, or a published
policy) on a window (a named one, or explicit rows or dates of the data) returns a
``TrialResult`` stamped with ``EVALUATOR_VERSION``, which the journal keeps beside every number.
Search trials, final test evaluations, walk-forward windows, replays, stress reruns and the
portfolio manager's reference book all go through it (or, for the backtest pieces alone,
through its one split, :func:`split_for`).

Modules: ``version`` (``EVALUATOR_VERSION``), ``models`` (``TrialBudget``, ``TrialResult``),
``backtest`` (the accounting and the named windows), ``windows`` (explicit windows and the split
that serves them), ``strategies`` (what each mode decides), ``reference`` (the baselines),
``evaluation`` (the subjects and :func:`evaluate`), ``folds`` (the walk-forward folds a search
trial is scored on, and their aggregate), ``run`` (``run_trial``, the research loop's
call of it) and ``walk_forward`` (one config window after window, and the stress reruns).
"""

from alphaloop.rl_engine import set_worker_threads
from alphaloop.trials.backtest import Backtest, simulate, window_slice
from alphaloop.trials.evaluation import ConfigSubject, PolicySubject, Subject, evaluate
from alphaloop.trials.folds import (
    PURGE_ROWS,
    aggregate_folds,
    build_folds,
    fold_budget,
    fold_score,
    max_folds,
)
from alphaloop.trials.models import TrialBudget, TrialResult, Window
from alphaloop.trials.reference import (
    BASELINE_CVAR_ALPHA,
    BASELINE_HOLD_DAYS,
    BASELINE_MAX_WEIGHT,
    BASELINE_N_SCENARIOS,
    BASELINE_SEED,
    baseline_backtests,
    baselines,
    equal_weight_backtest,
    known_baselines,
    remember_baselines,
)
from alphaloop.trials.run import run_trial
from alphaloop.trials.strategies import strategy_targets
from alphaloop.trials.version import EVALUATOR_VERSION
from alphaloop.trials.walk_forward import (
    SchemeSummary,
    WalkForward,
    WalkForwardWindow,
    span_reruns,
    walk_forward,
    walk_forward_splits,
)
from alphaloop.trials.windows import EXPLICIT, Dates, EvalWindow, Rows, Split, split_for

__all__ = [
    "BASELINE_CVAR_ALPHA",
    "BASELINE_HOLD_DAYS",
    "BASELINE_MAX_WEIGHT",
    "BASELINE_N_SCENARIOS",
    "BASELINE_SEED",
    "EVALUATOR_VERSION",
    "EXPLICIT",
    "PURGE_ROWS",
    "Backtest",
    "ConfigSubject",
    "Dates",
    "EvalWindow",
    "PolicySubject",
    "Rows",
    "SchemeSummary",
    "Split",
    "Subject",
    "TrialBudget",
    "TrialResult",
    "WalkForward",
    "WalkForwardWindow",
    "Window",
    "aggregate_folds",
    "baseline_backtests",
    "baselines",
    "build_folds",
    "equal_weight_backtest",
    "evaluate",
    "fold_budget",
    "fold_score",
    "known_baselines",
    "max_folds",
    "remember_baselines",
    "run_trial",
    "set_worker_threads",
    "simulate",
    "span_reruns",
    "split_for",
    "strategy_targets",
    "walk_forward",
    "walk_forward_splits",
    "window_slice",
]
