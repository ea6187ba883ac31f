"""One trial: a config, or a saved policy, scored on a named window of the session's data.

Part of the frozen evaluator (:mod:`alphaloop.trials`): proposers never edit it. The research
loop's way of calling :func:`~alphaloop.trials.evaluate`, kept with its argument list.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from alphaloop.knobs import TrialConfig
from alphaloop.market import MarketData
from alphaloop.trials.evaluation import ConfigSubject, PolicySubject, Subject, evaluate
from alphaloop.trials.models import TrialBudget, TrialResult
from alphaloop.trials.windows import EvalWindow
from alphaloop.vocabulary import DEFAULT_METRIC, Mode


def run_trial(
    mode: Mode,
    config: TrialConfig,
    data: MarketData,
    budget: TrialBudget | None = None,
    seed: int = 0,
    *,
    window: EvalWindow = "validation",
    metric: str = DEFAULT_METRIC,
    policy_path: str | Path | None = None,
    policy_dir: str | Path | None = None,
    on_update: Callable[[int, float], None] | None = None,
) -> TrialResult:
    """Runs one trial and scores it on ``window``.

    Args:
        mode: ``ppo_only``, ``cufolio_only`` or ``unified``.
        config: the knobs (already clipped).
        data: the market data and its split; training only ever sees ``data.train``.
        budget: session settings (PPO timesteps, envs, evaluation cost...).
        seed: seeds PPO, the scenario bootstrap and environment starts.
        window: ``validation``, ``test`` once per session at the end, or explicit rows (a
            fold of the history before TEST).
        metric: which metric is the objective (``sharpe``, ``sortino``, ``calmar``, ``return``).
        policy_path: evaluate this saved policy instead of training one (PPO modes).
        policy_dir: where a freshly trained policy is saved.
        on_update: called with (timestep, mean episode reward) after each PPO rollout.

    Raises:
        ValueError: an unknown mode, metric or window.
        TrialCrashed: the trial could not produce weights (diverged policy, solver failure).
        TrialTimeout: ``budget.time_limit_s`` ran out.
    """
    fields = {
        "mode": mode,
        "config": config,
        "budget": budget or TrialBudget(),
        "seed": seed,
        "metric": metric,
    }
    subject: Subject
    # cufolio_only has no policy file: a path given with it was always ignored.
    if policy_path is not None and mode != "cufolio_only":
        subject = PolicySubject(**fields, policy_path=str(policy_path))
    else:
        subject = ConfigSubject(**fields)
    return evaluate(subject, window, data, policy_dir=policy_dir, on_update=on_update)
