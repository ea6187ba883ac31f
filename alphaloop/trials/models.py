"""What a trial is given beyond its knobs (the session's ``TrialBudget``) and what it returns
(``TrialResult``).

Part of the frozen evaluator (:mod:`alphaloop.trials`): proposers never edit it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from alphaloop.market import Window
from alphaloop.metrics import Metrics
from alphaloop.rl_engine import DEFAULT_N_ENVS, DEFAULT_TOTAL_TIMESTEPS, AdvantageEstimator
from alphaloop.trials.version import EVALUATOR_VERSION

__all__ = ["TrialBudget", "TrialResult", "Window"]


class TrialBudget(BaseModel):
    """Session settings every trial of a session shares. Not knobs: a proposer cannot touch them.

    Besides the compute and the evaluation cost, three training options of PPO modes live here
    rather than among the knobs: how a trial trains is the session's method, and a proposer
    free to switch it would be searching over estimators, not over one method's settings.
    ``truncate_drawdown`` ends a training episode, as truncated, once its value falls that far
    below its peak; ``stop_properly`` is how much of such an episode's reward it keeps (see
    ``rl_engine.PortfolioEnv``); ``advantage`` picks SB3's GAE, GRPO or REINFORCE++ (see
    ``rl_engine.advantages``). The defaults train exactly as before they existed.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    total_timesteps: int = Field(default=DEFAULT_TOTAL_TIMESTEPS, ge=64, le=50_000_000)
    n_envs: int = Field(default=DEFAULT_N_ENVS, ge=1, le=256)
    eval_cost_bps: float = Field(default=10.0, ge=0, le=500)
    scenario_window: int = Field(
        default=504, ge=60, le=5000, description="trailing days the scenarios are drawn from"
    )
    time_limit_s: float | None = Field(default=None, gt=0)
    truncate_drawdown: float | None = Field(
        default=None, gt=0, lt=1, description="drawdown from its peak that ends a PPO episode"
    )
    stop_properly: float = Field(
        default=1.0, ge=0, le=1, description="share of a truncated episode's reward it keeps"
    )
    advantage: AdvantageEstimator = Field(default="gae", description="PPO advantage estimator")

    @model_validator(mode="after")
    def _every_env_trains(self) -> TrialBudget:
        # The env-step budget is split evenly over the env copies (a hard cap, see
        # ``rl_engine.rollout_plan``): each copy needs at least one step.
        if self.total_timesteps < self.n_envs:
            raise ValueError(
                f"total_timesteps {self.total_timesteps} is less than n_envs {self.n_envs}: the "
                "budget is split over the env copies, and each needs at least one step"
            )
        return self

    @model_validator(mode="after")
    def _stop_properly_needs_truncation(self) -> TrialBudget:
        # The coefficient only acts on episodes the drawdown rule truncates; accepting it alone
        # would journal a setting that changed nothing.
        if self.stop_properly != 1.0 and self.truncate_drawdown is None:
            raise ValueError(
                f"stop_properly {self.stop_properly:g} only applies to episodes ended by "
                "truncate_drawdown, which is not set"
            )
        return self


class TrialResult(BaseModel):
    """What one evaluation produced on one window: a search trial on VALIDATION, a final one on
    TEST, or any subject on explicit rows (``window`` is then ``"explicit"``; the dates say
    which). ``evaluator_version`` names the evaluator that produced the numbers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: str
    window: str
    metric: str
    objective: float
    metrics: Metrics
    baselines: dict[str, Metrics]
    daily_returns: list[float]
    final_weights: list[float]
    elapsed_s: float
    seed: int
    config_hash: str
    data_fingerprint: str
    start_date: str
    end_date: str
    policy_path: str | None = None
    timesteps: int | None = None
    curve: list[tuple[int, float]] = Field(default_factory=list)
    evaluator_version: str = EVALUATOR_VERSION
