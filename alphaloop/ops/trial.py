"""One trial run by hand, outside any session: clipped like a session's trials, scored by the
frozen evaluator on the validation window only, and not journaled (it belongs to no session)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from alphaloop.exceptions import AlphaloopError
from alphaloop.knobs import BoundsClip, ConfigDelta, TrialConfig, clip
from alphaloop.ops._journal import open_journal
from alphaloop.settings import Settings
from alphaloop.vocabulary import DEFAULT_METRIC, Metric, Mode

if TYPE_CHECKING:
    from alphaloop.trials import TrialBudget, TrialResult


class TrialRequest(BaseModel):
    """What one hand-run trial is asked for.

    The knob ``changes`` apply to the default config, or to the best config of
    ``from_session``; values are clipped to their bounds as a session's would be.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Mode = "cufolio_only"
    changes: dict[str, float | str] = Field(default_factory=dict)
    rationale: str = "set by hand"
    from_session: str | None = None
    data: str = "sp500"
    fill: str = "none"
    date_format: str | None = None
    symbols: list[str] | None = None
    seed: int = 0
    metric: Metric = DEFAULT_METRIC
    total_timesteps: int | None = None
    n_envs: int | None = None
    truncate_drawdown: float | None = None
    stop_properly: float | None = None
    advantage: str | None = None


# A frozen dataclass rather than a pydantic model: its field types come from the evaluator,
# which loads torch, and importing the operations must not.
@dataclass(frozen=True)
class TrialRun:
    """A hand-run trial: the evaluator's result and what it ran."""

    result: TrialResult
    config: TrialConfig
    clips: list[BoundsClip]
    budget: TrialBudget
    data: dict[str, Any]  # the market's description: source, symbols, windows
    source: str
    windows_text: str


def trial_budget(
    total_timesteps: int | None = None,
    n_envs: int | None = None,
    *,
    truncate_drawdown: float | None = None,
    stop_properly: float | None = None,
    advantage: str | None = None,
) -> TrialBudget:
    """The trial budget with the settings given (defaults for the others).

    Raises:
        ValidationError: a value is out of range (its ``loc`` names the field), or
            ``stop_properly`` is given without ``truncate_drawdown``.
    """
    from alphaloop.trials import TrialBudget  # imports torch: only for work that trains

    values = {
        "total_timesteps": total_timesteps,
        "n_envs": n_envs,
        "truncate_drawdown": truncate_drawdown,
        "stop_properly": stop_properly,
        "advantage": advantage,
    }
    return TrialBudget(**{k: v for k, v in values.items() if v is not None})


def advantage_estimators() -> tuple[str, ...]:
    """The advantage estimators PPO trains with (``TrialBudget.advantage``), GAE first."""
    from alphaloop.rl_engine.advantages import ADVANTAGE_ESTIMATORS

    return ADVANTAGE_ESTIMATORS


def training_options(budget: TrialBudget) -> dict[str, Any]:
    """The PPO training options of ``budget`` (drawdown truncation, stop-properly, estimator)."""
    return budget.model_dump(include={"truncate_drawdown", "stop_properly", "advantage"})


def _start_config(request: TrialRequest, settings: Settings) -> TrialConfig:
    if not request.from_session:
        return TrialConfig()
    with open_journal(settings) as j:
        best = j.trials.best(j.sessions.get(request.from_session).id)
    if best is None:
        raise AlphaloopError(f"session {request.from_session} has no finished trial to start from")
    return TrialConfig(**best.config)


def run_by_hand(
    request: TrialRequest,
    settings: Settings,
    *,
    policy_dir: Path,
    on_start: Callable[[str], None] | None = None,
) -> TrialRun:
    """Runs one trial on the validation window.

    Args:
        request: mode, knob changes, data, seed, metric and budget.
        settings: the alphaloop home (and its journal, for ``from_session``).
        policy_dir: where a trained PPO policy is saved.
        on_start: told what is about to run, once the data is loaded.

    Raises:
        InvalidDelta: an unknown knob or a value that is not a number (before any data loads).
        InvalidRequest: the data cannot be loaded.
        ValidationError: the budget is out of range.
    """
    from alphaloop.market import load_market
    from alphaloop.trials import run_trial

    delta = ConfigDelta(changes=request.changes, rationale=request.rationale)
    base = _start_config(request, settings)
    market = load_market(
        request.data, fill=request.fill, symbols=request.symbols, date_format=request.date_format
    )
    budget = trial_budget(
        request.total_timesteps,
        request.n_envs,
        truncate_drawdown=request.truncate_drawdown,
        stop_properly=request.stop_properly,
        advantage=request.advantage,
    )
    config, clips = clip(base, delta, market.n_assets, budget.n_envs)
    if on_start is not None:
        on_start(f"running a {request.mode} trial on {market.source}")
    result = run_trial(
        request.mode,
        config,
        market,
        budget,
        request.seed,
        metric=request.metric,
        policy_dir=policy_dir,
    )
    return TrialRun(
        result=result,
        config=config,
        clips=clips,
        budget=budget,
        data=market.describe(),
        source=market.source,
        windows_text=market.windows_text(),
    )
