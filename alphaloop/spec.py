"""What a session is started with, as data: :class:`SessionSpec`, the one session model, a manual
training run's :class:`ManualRunSpec`, and the parts they are made of: where the prices come
from (:class:`DataSpec`), what is maximised (:class:`Objective`), what every trial may spend
(:class:`TrialBudget`) and what judges the pick (:class:`Gates`).

Schemas only: fields, bounds, defaults, help and the rules across fields. What acts on a spec
lives above it: loading its data (:func:`alphaloop.market.market_of`), resolving its gates
under the settings' (:func:`alphaloop.validation.resolved_gates`), placing its trials
(:mod:`alphaloop.placement`), building it from a request (:mod:`alphaloop.ops.research`).
The journal stores a session's spec as these models and reads it back as them; the requests
every front end accepts (:mod:`alphaloop.ops.requests`) take their fields from these
declarations. A field a session gains is declared here, once.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Protocol, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic.fields import FieldInfo

from alphaloop.vocabulary import (
    DEFAULT_METRIC,
    MANUAL_PROPOSER,
    Advantage,
    Fill,
    Metric,
    Mode,
    ProposerChoice,
)

_FROZEN = ConfigDict(frozen=True, extra="forbid")

# numpy's legacy seeding (``np.random.seed``, which SB3 and optuna's samplers call) takes
# 0 .. 2**32 - 1: the seeds a trial accepts.
SEED_MAX = 2**32 - 1
# A session runs its baselines on ``seed .. seed + noise_seeds - 1`` and confirms candidates on
# the ``confirm_seeds`` seeds after them: its seed leaves room in the trials' range for both.
MAX_NOISE_SEEDS = 20
MIN_NOISE_SEEDS = 2  # one seed has no spread: no gain could be told from luck
CONFIRM_SEEDS = 2  # fresh seeds a candidate that passes the keep rule's screen is re-run on
SESSION_SEED_MAX = SEED_MAX - (MAX_NOISE_SEEDS - 1)
MAX_FOLDS = 20
MAX_WORKERS = 256  # the most trials a session runs at once (processes here, or Ray tasks)
MAX_WEEK_S = 7 * 24 * 3600
# A month of trading days: the shortest window a trial is evaluated on (a walk's fold too).
MIN_EVAL_ROWS = 21
GOAL_MAX = 500  # characters of a goal (the page, the prompts and the tables show it whole)

# Measured with the default knobs on 20 assets x 6,800 days, lookback 20, on a shared 2-core
# CPU: 4 envs x 2 rollouts of 2,048 steps (2 PPO updates of 10 epochs x 128 minibatches) train
# in 5.4-6.7 s, within a 10 s trial budget with room for load. 2 envs took 3.7 s but give each
# update half the data; 8 envs took 12.4 s. Minibatch updates dominate, not env stepping.
# (Those times are SB3's own loops; NumpyPPO trains the same policy in about a third of it.)
DEFAULT_N_ENVS = 4
DEFAULT_TOTAL_TIMESTEPS = 16_384

# Where trials run: this machine whatever RAY_ADDRESS says, Ray's own choice (RAY_ADDRESS, else
# the cluster ``ray start`` last started here), or a cluster by address.
LOCAL = "local"
AUTO = "auto"
CLIENT = "ray://"

# The markets alphaloop makes or ships: a name, or a name and a seed (what a client may send;
# the command line also takes a price file's path).
DATA_NAME = r"^(sp500|(synthetic|null|tied|flat|planted)(:\d{1,9})?)$"
DATA_HELP = (
    "sp500 (the embedded S&P 500 set), synthetic[:SEED], a market with a known answer (null, "
    "tied, flat or planted[:SEED]); the command line also takes a CSV/Parquet path"
)


def same(model: type[BaseModel], field: str, **changes: Any) -> Any:
    """A copy of ``model``'s declaration of ``field`` (its bounds, default and help), with
    ``changes`` (another default, say)."""
    return FieldInfo.merge_field_infos(model.model_fields[field], **changes)


def check_address(value: str | None) -> str | None:
    """``value`` if it reads as a place to run trials (``local``, ``auto``, ``HOST:PORT`` or
    ``ray://HOST:PORT``), else ``ValueError`` saying what was expected."""
    if value is None or value in (LOCAL, AUTO):
        return value
    host, sep, port = value.removeprefix(CLIENT).rpartition(":")
    if sep and host and port.isdigit() and 0 < int(port) < 65536:
        return value
    raise ValueError(
        f"expected local, auto, HOST:PORT or ray://HOST:PORT (a port 1-65535), got {value!r}"
    )


def labelled_goal(goal: str, *, before: str = "", after: str = "") -> str:
    """``goal`` between ``before`` and ``after`` within :data:`GOAL_MAX` characters: the goal
    is cut (with an ellipsis), never the labels, which say what the session is (a retrain, a
    walk's epoch)."""
    room = GOAL_MAX - len(before) - len(after)
    if len(goal) > room:
        goal = goal[: max(room - 1, 0)] + "…"
    return f"{before}{goal}{after}"


def _name_only(extra: dict[str, Any]) -> None:
    extra["pattern"] = DATA_NAME  # what a client may send (the command line also takes a path)


class DataSpec(BaseModel):
    """Where prices come from and how they are split: what a session (or a manual run) stores so
    that resuming it, or replaying one of its trials, loads exactly the same data."""

    model_config = _FROZEN

    data: str = Field(
        default="sp500", max_length=4096, json_schema_extra=_name_only, description=DATA_HELP
    )
    fill: Fill = Field(default="none", description="missing prices: none (refuse) or ffill")
    symbols: list[str] | None = Field(default=None, description="a subset of the data's columns")
    train_end: str | None = None
    val_end: str | None = None
    # The last day of TEST: the prices after it are dropped (a walk's epoch, whose TEST is the
    # period after the epoch; None: the data's last day).
    test_end: str | None = None
    date_format: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="strptime format for a file's date column, e.g. %d/%m/%Y",
    )

    @property
    def data_spec(self) -> DataSpec:
        """The :class:`DataSpec` part alone (a session's or a run's data, as a library entry
        stores it)."""
        return DataSpec(**self.model_dump(include=set(DataSpec.model_fields)))


class Measured(Protocol):
    """What a limit is checked on (a trial's :class:`~alphaloop.metrics.Metrics`)."""

    @property
    def max_drawdown(self) -> float: ...

    @property
    def annual_turnover(self) -> float: ...


class Objective(BaseModel):
    """A metric to maximise on validation, with optional hard limits.

    ``max_drawdown`` and ``max_turnover`` are fractions (0.15 = 15%; turnover is annual one-way).
    Limits must be finite: ``nan`` would compare false and never discard anything, and an
    infinite limit is no limit (leave it out instead).
    """

    model_config = _FROZEN

    metric: Metric = Field(
        default=DEFAULT_METRIC,
        description="the objective the trials are ranked by: sharpe, sortino, calmar or return",
    )
    max_drawdown: float | None = Field(
        default=None,
        gt=0,
        le=1,
        allow_inf_nan=False,
        description="discard trials with a larger drawdown (a fraction: 0.15 = 15%)",
    )
    max_turnover: float | None = Field(
        default=None,
        gt=0,
        le=1_000,
        allow_inf_nan=False,
        description="discard trials with more annual one-way turnover",
    )

    def violation(self, metrics: Measured) -> str | None:
        """Why these metrics break a limit, or None when they respect all of them."""
        if self.max_drawdown is not None and metrics.max_drawdown > self.max_drawdown:
            return (
                f"max drawdown {metrics.max_drawdown:.1%} exceeds the limit {self.max_drawdown:.1%}"
            )
        if self.max_turnover is not None and metrics.annual_turnover > self.max_turnover:
            return (
                f"annual turnover {metrics.annual_turnover:.2f} exceeds the limit "
                f"{self.max_turnover:.2f}"
            )
        return None

    def describe(self) -> str:
        parts = [f"maximise validation {self.metric}"]
        if self.max_drawdown is not None:
            parts.append(f"max drawdown <= {self.max_drawdown:.0%}")
        if self.max_turnover is not None:
            parts.append(f"annual turnover <= {self.max_turnover:g}")
        return ", ".join(parts)


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

    model_config = _FROZEN

    total_timesteps: int = Field(
        default=DEFAULT_TOTAL_TIMESTEPS,
        ge=64,
        le=50_000_000,
        description=f"PPO env steps per trial (default {DEFAULT_TOTAL_TIMESTEPS:,})",
    )
    n_envs: int = Field(
        default=DEFAULT_N_ENVS,
        ge=1,
        le=256,
        description=f"parallel training environments (default {DEFAULT_N_ENVS})",
    )
    eval_cost_bps: float = Field(default=10.0, ge=0, le=500)
    scenario_window: int = Field(
        default=504, ge=60, le=5000, description="trailing days the scenarios are drawn from"
    )
    time_limit_s: float | None = Field(default=None, gt=0)
    truncate_drawdown: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="end a PPO training episode, as truncated, once its value falls this far "
        "below its peak: in (0, 1), e.g. 0.2 (default: never)",
    )
    stop_properly: float = Field(
        default=1.0,
        ge=0,
        le=1,
        description="in [0, 1]: share of a truncated episode's reward it keeps (a loss grows "
        "by the rest); needs truncate_drawdown (default 1: no penalty)",
    )
    advantage: Advantage = Field(
        default="gae",
        description="PPO advantages: gae (SB3's, with a critic), grpo (group-relative) or "
        "reinforce_pp (REINFORCE++, leave-one-out baseline)",
    )

    @model_validator(mode="after")
    def _every_env_trains(self) -> Self:
        # The env-step budget is split evenly over the env copies (a hard cap, see
        # ``rl_engine.rollout_plan``): each copy needs at least one step.
        if self.total_timesteps < self.n_envs:
            raise ValueError(
                f"total_timesteps {self.total_timesteps} is less than n_envs {self.n_envs}: the "
                "budget is split over the env copies, and each needs at least one step"
            )
        return self

    @model_validator(mode="after")
    def _stop_properly_needs_truncation(self) -> Self:
        # The coefficient only acts on episodes the drawdown rule truncates; accepting it alone
        # would journal a setting that changed nothing.
        if self.stop_properly != 1.0 and self.truncate_drawdown is None:
            raise ValueError(
                f"stop_properly {self.stop_properly:g} only applies to episodes ended by "
                "truncate_drawdown, which is not set"
            )
        return self


class Gates(BaseModel):
    """Thresholds of the go/no-go gates (see :mod:`alphaloop.validation.gates`); ``None`` turns
    a gate off. The fields are :data:`alphaloop.vocabulary.GATE_NAMES`, in order.

    Attributes:
        min_sharpe: annualised out-of-sample Sharpe must be above this.
        max_drawdown: out-of-sample maximum drawdown (a fraction) must be below this.
        min_hit_rate: share of positive days must be above this.
        min_profit_factor: gains over losses must be above this.
        min_deflated_sharpe: the deflated Sharpe ratio must be above this.
        max_pbo: the probability of backtest overfitting must be below this; off (None) by
            default: PBO is reported as a diagnostic (see :mod:`alphaloop.validation.gates`).
        max_excess_p_value: the paired test of the pick's TEST Sharpe against the default's
            and against 1/N's must each reject "no better" below this p-value (the level of
            the intersection-union test).
        min_walk_forward_share: the share of walk-forward windows on unseen data (anchored
            scheme) in which the pick's Sharpe beats 1/N's must be above this (checked by
            ``alphaloop validate``, which runs walk-forward).
    """

    model_config = _FROZEN

    min_sharpe: float | None = Field(default=0.8, allow_inf_nan=False)
    max_drawdown: float | None = Field(default=0.30, gt=0, le=1)
    min_hit_rate: float | None = Field(default=0.48, ge=0, le=1)
    min_profit_factor: float | None = Field(default=1.1, ge=0, allow_inf_nan=False)
    min_deflated_sharpe: float | None = Field(default=0.95, ge=0, le=1)
    max_pbo: float | None = Field(default=None, gt=0, le=1)
    max_excess_p_value: float | None = Field(default=0.05, gt=0, lt=1)
    min_walk_forward_share: float | None = Field(default=0.5, ge=0, lt=1)

    def within(self, max_drawdown: float | None) -> Gates:
        """These gates with a session's drawdown limit (``--max-drawdown``) as the drawdown
        gate, unless it was set here explicitly: a pick is judged against the limit its
        session searched under, by finalize and by ``validate`` alike."""
        if max_drawdown is None or "max_drawdown" in self.model_fields_set:
            return self
        return self.model_copy(update={"max_drawdown": max_drawdown})


class SessionSpec(DataSpec):
    """Everything a session is started with (stored with it, so resume needs only its id)."""

    goal: str = Field(
        min_length=1,
        max_length=GOAL_MAX,
        description='what to achieve, e.g. "maximise Sharpe, drawdown < 15%"',
    )
    mode: Mode = Field(default="cufolio_only", description="what the trials run")
    budget: int = Field(default=20, ge=1, le=100_000, description="number of search trials")
    proposer: ProposerChoice = Field(
        default="auto", description="auto (LLM if configured, else tpe), tpe, random, llm"
    )
    objective: Objective = Objective()
    time_budget_s: float | None = Field(
        default=None,
        gt=0,
        le=MAX_WEEK_S,
        allow_inf_nan=False,
        description="stop after this much trial time, in seconds (the command line takes a "
        "unit: 90s, 10m, 1h30m)",
    )
    max_tokens_total: int | None = Field(
        default=None,
        ge=1,
        le=2**40 - 1,
        description="stop when LLM usage reaches this many tokens",
    )
    seed: int = Field(
        default=0,
        ge=0,
        le=SESSION_SEED_MAX,
        description="the session's seed (the baselines use the seeds after it)",
    )
    noise_seeds: int = Field(
        default=3,
        ge=MIN_NOISE_SEEDS,
        le=MAX_NOISE_SEEDS - CONFIRM_SEEDS,
        description="baseline seeds that estimate the seed noise of the keep rule (at least 2: "
        "one has no spread)",
    )
    confirm_seeds: int = Field(default=CONFIRM_SEEDS, ge=1, le=MAX_NOISE_SEEDS - MIN_NOISE_SEEDS)
    trial_budget: TrialBudget = TrialBudget()
    # None: as many folds as the history before TEST holds (resolved when the session is
    # created, so a stored spec always names its count).
    folds: int | None = Field(
        default=None,
        ge=1,
        le=MAX_FOLDS,
        description="walk-forward folds of the history before TEST each trial is scored on "
        "(default: as many as the history holds; 1 scores VALIDATION alone)",
    )
    # The thresholds set here win over the settings' (``ALPHALOOP_GATES``), both over the
    # defaults; resolved, with the drawdown limit, when the session is created.
    gates: Gates = Field(default_factory=Gates)
    # Trials run at once; more than 1 (or a Ray address) runs them in single-threaded worker
    # processes (or Ray tasks), one per trial (see :mod:`alphaloop.placement`).
    workers: int = Field(
        default=1,
        ge=1,
        le=MAX_WORKERS,
        description="trials in flight at once, each in a single-threaded worker process",
    )
    # None: ``RAY_ADDRESS`` when set (resolved when the session is created), else here.
    ray_address: Annotated[str, AfterValidator(check_address)] | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="run the trials as Ray tasks on this cluster (auto, HOST:PORT or "
        "ray://HOST:PORT), or here: local (default: RAY_ADDRESS when set, else here)",
    )
    # Whether finalize adds the pick to the policy library (where ``auto_activate`` may make it
    # the live book's): a walk's epochs do not, their picks trade history.
    publish: bool = True
    # Configs (knob -> value) the search tries first, before its proposer is asked, each as
    # a search trial like any other: a walk's epoch starts from what earlier epochs kept.
    start_configs: list[dict[str, float]] = Field(default_factory=list, max_length=20)

    @model_validator(mode="after")
    def _seeds_fit(self) -> Self:
        # Baseline and confirmation seeds follow the session seed, within the room it leaves.
        if self.noise_seeds + self.confirm_seeds > MAX_NOISE_SEEDS:
            raise ValueError(
                f"noise_seeds + confirm_seeds must be at most {MAX_NOISE_SEEDS}, got "
                f"{self.noise_seeds} + {self.confirm_seeds}"
            )
        return self


MANUAL_GOAL = "manual PPO run"


class ManualRunSpec(DataSpec):
    """What a manual PPO run is started with (journaled with its session: a session of one
    ``ppo_only`` trial, proposed by :data:`~alphaloop.vocabulary.MANUAL_PROPOSER`)."""

    mode: ClassVar[Mode] = "ppo_only"
    budget: ClassVar[int] = 1
    proposer: ClassVar[str] = MANUAL_PROPOSER

    goal: str = Field(default=MANUAL_GOAL, min_length=1, max_length=GOAL_MAX)
    changes: dict[str, float] = Field(
        default_factory=dict, description="knob edits on the default config, clipped to bounds"
    )
    seed: int = Field(default=0, ge=0, le=SEED_MAX, description="the run's seed")
    metric: Metric = same(Objective, "metric")
    trial_budget: TrialBudget = TrialBudget()

    @property
    def objective(self) -> Objective:
        """What the run is scored by: its metric, without limits."""
        return Objective(metric=self.metric)


__all__ = [
    "CONFIRM_SEEDS",
    "DATA_HELP",
    "DATA_NAME",
    "DEFAULT_N_ENVS",
    "DEFAULT_TOTAL_TIMESTEPS",
    "GOAL_MAX",
    "MANUAL_GOAL",
    "MAX_FOLDS",
    "MAX_NOISE_SEEDS",
    "MAX_WORKERS",
    "MIN_NOISE_SEEDS",
    "SEED_MAX",
    "SESSION_SEED_MAX",
    "DataSpec",
    "Gates",
    "ManualRunSpec",
    "Objective",
    "SessionSpec",
    "TrialBudget",
    "check_address",
    "labelled_goal",
    "same",
]
