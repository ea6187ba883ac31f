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

Modules: ``models`` (``TrialBudget``, ``TrialResult``), ``backtest`` (the accounting and the
windows), ``strategies`` (what each mode decides), ``reference`` (the baselines) and ``run``
(one trial end to end), ``walk_forward`` (one config window after window).
"""

from alphaloop.trials.backtest import Backtest, simulate, window_slice
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
)
from alphaloop.trials.run import run_trial
from alphaloop.trials.strategies import strategy_targets
from alphaloop.trials.walk_forward import (
    SchemeSummary,
    WalkForward,
    WalkForwardWindow,
    span_reruns,
    walk_forward,
    walk_forward_splits,
)

__all__ = [
    "BASELINE_CVAR_ALPHA",
    "BASELINE_HOLD_DAYS",
    "BASELINE_MAX_WEIGHT",
    "BASELINE_N_SCENARIOS",
    "BASELINE_SEED",
    "Backtest",
    "SchemeSummary",
    "TrialBudget",
    "TrialResult",
    "WalkForward",
    "WalkForwardWindow",
    "Window",
    "baseline_backtests",
    "baselines",
    "equal_weight_backtest",
    "run_trial",
    "simulate",
    "span_reruns",
    "strategy_targets",
    "walk_forward",
    "walk_forward_splits",
    "window_slice",
]
