"""The 16 knobs: the whole edit space a proposer may touch, and nothing else.

Bounds live in the pydantic model, so the schema *is* the edit space (and the JSON schema sent to
an LLM). ``clip`` turns any numeric proposal into a valid, feasible :class:`TrialConfig` and
reports every change it made as a :class:`BoundsClip`; only non-numbers and unknown names are
refused, as :class:`~alphaloop.exceptions.InvalidDelta`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from alphaloop.exceptions import InvalidDelta

logger = logging.getLogger(__name__)

Group = Literal["env", "ppo", "cvar"]
Scale = Literal["int", "float", "log", "int-log"]


@dataclass(frozen=True)
class Knob:
    """One knob: its bounds, scale, default and a one-line meaning."""

    name: str
    group: Group
    low: float
    high: float
    scale: Scale
    default: float
    doc: str

    @property
    def is_int(self) -> bool:
        return self.scale in ("int", "int-log")

    @property
    def is_log(self) -> bool:
        return self.scale in ("log", "int-log")


# Defaults follow common practice: SB3's PPO defaults (learning_rate=3e-4, n_steps=2048,
# batch_size=64, n_epochs=10, gamma=0.99, gae_lambda=0.95, ent_coef=0.0), a 95% CVaR with
# 5,000 scenarios, monthly-ish re-solves and a 25% position cap.
KNOBS: dict[str, Knob] = {
    k.name: k
    for k in (
        Knob("lookback", "env", 5, 60, "int", 20, "days of past log returns the policy observes"),
        Knob("episode_len", "env", 20, 120, "int", 60, "trading days per training episode"),
        Knob("rebal_freq", "env", 1, 10, "int", 5, "days between two policy rebalances"),
        Knob(
            "turnover_cost_bps",
            "env",
            0,
            50,
            "float",
            10.0,
            "training-time cost per unit turnover, in basis points",
        ),
        Knob(
            "vol_penalty",
            "env",
            0,
            5,
            "float",
            0.5,
            "training-time penalty on squared negative daily returns (downside variance)",
        ),
        Knob("learning_rate", "ppo", 1e-5, 1e-2, "log", 3e-4, "PPO Adam step size"),
        Knob("n_steps", "ppo", 64, 4096, "int-log", 2048, "PPO rollout length per env"),
        Knob("batch_size", "ppo", 32, 512, "int-log", 64, "PPO minibatch size"),
        Knob("gae_lambda", "ppo", 0.85, 0.99, "float", 0.95, "GAE bias/variance trade-off"),
        Knob("gamma", "ppo", 0.90, 0.999, "float", 0.99, "discount factor"),
        Knob("ent_coef", "ppo", 0.0, 0.10, "float", 0.0, "entropy bonus (exploration)"),
        Knob("n_epochs", "ppo", 3, 30, "int", 10, "PPO passes over each rollout"),
        Knob("cvar_alpha", "cvar", 0.85, 0.99, "float", 0.95, "CVaR confidence level"),
        Knob("max_position_pct", "cvar", 0.02, 0.30, "float", 0.25, "cap on any one weight"),
        Knob("n_scenarios", "cvar", 1000, 10000, "int", 5000, "return scenarios per solve"),
        Knob("cufolio_hold_days", "cvar", 5, 60, "int", 21, "days between Mean-CVaR re-solves"),
    )
}
KNOB_NAMES: tuple[str, ...] = tuple(KNOBS)
MIN_TAIL_SCENARIOS = 50

MODE_GROUPS: dict[str, tuple[Group, ...]] = {
    "ppo_only": ("env", "ppo"),
    "cufolio_only": ("cvar",),
    "unified": ("env", "ppo", "cvar"),
}


def _field(name: str) -> Any:
    k = KNOBS[name]
    default: Any = int(k.default) if k.is_int else float(k.default)
    return Field(default=default, ge=k.low, le=k.high, description=f"{k.doc} ({k.scale})")


class TrialConfig(BaseModel):
    """All 16 knobs, validated against their bounds. Frozen: edits go through :func:`clip`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lookback: int = _field("lookback")
    episode_len: int = _field("episode_len")
    rebal_freq: int = _field("rebal_freq")
    turnover_cost_bps: float = _field("turnover_cost_bps")
    vol_penalty: float = _field("vol_penalty")
    learning_rate: float = _field("learning_rate")
    n_steps: int = _field("n_steps")
    batch_size: int = _field("batch_size")
    gae_lambda: float = _field("gae_lambda")
    gamma: float = _field("gamma")
    ent_coef: float = _field("ent_coef")
    n_epochs: int = _field("n_epochs")
    cvar_alpha: float = _field("cvar_alpha")
    max_position_pct: float = _field("max_position_pct")
    n_scenarios: int = _field("n_scenarios")
    cufolio_hold_days: int = _field("cufolio_hold_days")


class BoundsClip(BaseModel):
    """One change ``clip`` made to a proposed value, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    knob: str
    proposed: float
    applied: float
    low: float
    high: float
    reason: str


_PERCENT = re.compile(r"%\s*$")


def parse_number(key: str, value: Any) -> float:
    """Turns a proposed value into a finite float, or raises :class:`InvalidDelta`.

    Numbers and numeric strings ("3e-4", " 64 ") are accepted. Anything a reader would have to
    guess at ("5%", "high", "", booleans, NaN, inf) is refused with the reason.
    """
    if isinstance(value, bool) or value is None:
        raise InvalidDelta(f"knob {key!r}: {value!r} is not a number", key=key, value=value)
    if isinstance(value, str):
        text = value.strip()
        if _PERCENT.search(text):
            raise InvalidDelta(
                f"knob {key!r}: {value!r} is a percentage; give a plain number "
                "(for example 0.05 for 5%)",
                key=key,
                value=value,
            )
        try:
            number = float(text)
        except ValueError:
            raise InvalidDelta(
                f"knob {key!r}: {value!r} is not a number", key=key, value=value
            ) from None
    elif isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # an int beyond float range, e.g. 10**400 from a JSON payload
            number = math.inf
    else:
        try:
            number = float(value)  # numpy scalars and the like
        except (TypeError, ValueError):
            raise InvalidDelta(
                f"knob {key!r}: {value!r} is not a number", key=key, value=value
            ) from None
    if not math.isfinite(number):
        raise InvalidDelta(f"knob {key!r}: {value!r} is not a finite number", key=key, value=value)
    return number


class ConfigDelta(BaseModel):
    """A proposed edit: some knobs with new values, and why.

    Values are parsed on construction; unknown knob names and non-numbers raise
    :class:`InvalidDelta` naming the offending key and value.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    changes: dict[str, float] = Field(default_factory=dict)
    rationale: str = ""

    @field_validator("changes", mode="before")
    @classmethod
    def _check_changes(cls, raw: Any) -> dict[str, float]:
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            raise InvalidDelta(f"changes must be a mapping of knob -> value, got {raw!r}")
        parsed: dict[str, float] = {}
        for key, value in raw.items():
            if key not in KNOBS:
                raise InvalidDelta(
                    f"unknown knob {key!r} (value {value!r}); known knobs: {', '.join(KNOB_NAMES)}",
                    key=str(key),
                    value=value,
                )
            parsed[key] = parse_number(key, value)
        return parsed


def _round_int(knob: Knob, value: float) -> int:
    lo, hi = math.floor(value), math.ceil(value)
    if knob.is_log:
        # On a log scale the nearer integer is the one with the nearer logarithm: 90.4 -> 90,
        # but between 1 and 2 the geometric midpoint is sqrt(2), not 1.5.
        return lo if math.log(value / lo) <= math.log(hi / value) else hi
    return lo if value - lo < 0.5 else hi


def clip(
    config: TrialConfig, delta: ConfigDelta, n_assets: int, n_envs: int = 1
) -> tuple[TrialConfig, list[BoundsClip]]:
    """Applies ``delta`` to ``config`` and returns a valid, feasible config plus every clip made.

    Never raises on a number: out-of-bounds values go to the nearest bound, integer knobs are
    rounded (in log space for log-scale ones), and the feasibility rules are enforced:

    * ``max_position_pct * n_assets >= 1`` (else the cap is raised to ``1 / n_assets``);
    * ``(1 - cvar_alpha) * n_scenarios >= 50`` tail scenarios (``n_scenarios`` is raised);
    * ``batch_size <= n_steps * n_envs`` (``batch_size`` is lowered).

    Args:
        config: the config the delta edits (usually the best so far).
        delta: the proposed edit.
        n_assets: number of assets in the data the trial will run on.
        n_envs: number of parallel environments PPO collects rollouts from.
    """
    if n_assets < 2:
        raise ValueError(f"n_assets must be at least 2, got {n_assets}")
    if n_envs < 1:
        raise ValueError(f"n_envs must be at least 1, got {n_envs}")
    values: dict[str, float] = config.model_dump()
    clips = [_apply(name, proposed, values) for name, proposed in delta.changes.items()]
    clips += [_raise_cap(values, n_assets), _raise_scenarios(values), _lower_batch(values, n_envs)]
    made = [c for c in clips if c is not None]
    for c in made:
        logger.debug("clip %s: %g -> %g (%s)", c.knob, c.proposed, c.applied, c.reason)
    return TrialConfig(**values), made


def _clipped(name: str, proposed: float, applied: float, reason: str) -> BoundsClip:
    k = KNOBS[name]
    return BoundsClip(
        knob=name, proposed=proposed, applied=applied, low=k.low, high=k.high, reason=reason
    )


def _apply(name: str, proposed: float, values: dict[str, float]) -> BoundsClip | None:
    """Sets ``values[name]`` to ``proposed`` clipped to its bounds (and rounded if an integer)."""
    k = KNOBS[name]
    applied: float = min(max(proposed, k.low), k.high)
    clipped = None
    if applied != proposed:
        side = "below the lower" if proposed < k.low else "above the upper"
        if k.is_int:
            applied = int(applied)
        reason = f"{proposed:g} is {side} bound [{k.low:g}, {k.high:g}]"
        clipped = _clipped(name, proposed, applied, reason)
    elif k.is_int:
        applied = _round_int(k, proposed)
        if applied != proposed:
            clipped = _clipped(name, proposed, applied, f"{name} is an integer knob; rounded")
    values[name] = applied
    return clipped


def _raise_cap(values: dict[str, float], n_assets: int) -> BoundsClip | None:
    """``max_position_pct * n_assets >= 1``: a fully invested portfolio must fit under the cap."""
    before = values["max_position_pct"]
    if before * n_assets >= 1.0 - 1e-12:
        return None
    cap_high = KNOBS["max_position_pct"].high
    values["max_position_pct"] = min(math.ceil(1e6 / n_assets) / 1e6, cap_high)
    # With fewer than 1/high assets even the upper bound is infeasible; the evaluator then
    # uses effective_max_weight() = 1/n_assets, i.e. equal weight.
    raised = (
        f"cap raised to 1/{n_assets}"
        if values["max_position_pct"] < cap_high
        else f"cap set to its upper bound and the solver uses 1/{n_assets}"
    )
    return _clipped(
        "max_position_pct",
        before,
        values["max_position_pct"],
        f"infeasible: {n_assets} assets x cap {before:g} < 1 (fully invested); {raised}",
    )


def _raise_scenarios(values: dict[str, float]) -> BoundsClip | None:
    """``(1 - cvar_alpha) * n_scenarios >= MIN_TAIL_SCENARIOS``: enough tail to average."""
    tail = (1.0 - values["cvar_alpha"]) * values["n_scenarios"]
    if tail >= MIN_TAIL_SCENARIOS - 1e-9:
        return None
    before = values["n_scenarios"]
    needed = math.ceil(MIN_TAIL_SCENARIOS / (1.0 - values["cvar_alpha"]) - 1e-9)
    # cvar_alpha <= 0.99 and n_scenarios <= 10,000 always leave >= 100 tail scenarios.
    values["n_scenarios"] = min(needed, int(KNOBS["n_scenarios"].high))
    return _clipped(
        "n_scenarios",
        before,
        values["n_scenarios"],
        f"infeasible: (1 - cvar_alpha={values['cvar_alpha']:g}) x n_scenarios={before:g} "
        f"leaves {tail:.1f} tail scenarios < {MIN_TAIL_SCENARIOS}",
    )


def _lower_batch(values: dict[str, float], n_envs: int) -> BoundsClip | None:
    """``batch_size <= n_steps * n_envs``: a minibatch cannot be larger than the rollout."""
    before = values["batch_size"]
    if before <= values["n_steps"] * n_envs:
        return None
    values["batch_size"] = int(values["n_steps"] * n_envs)
    return _clipped(
        "batch_size",
        before,
        values["batch_size"],
        f"infeasible: batch_size {before:g} > n_steps x n_envs = {values['n_steps']} x {n_envs}",
    )


def config_hash(config: TrialConfig) -> str:
    """sha256 of the canonical JSON of a config: same content, same hash."""
    # ``+ 0.0`` turns -0.0 into 0.0: numerically equal configs ("-0" is a valid proposal for a
    # knob whose lower bound is 0) must not look like different trials.
    values = {k: v + 0.0 if isinstance(v, float) else v for k, v in config.model_dump().items()}
    payload = json.dumps(values, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


def effective_max_weight(config: TrialConfig, n_assets: int) -> float:
    """The position cap a solver enforces: the knob, or 1/n when fewer assets make it infeasible."""
    return max(config.max_position_pct, 1.0 / n_assets)


def knobs_for_mode(mode: str) -> tuple[str, ...]:
    """The knobs a trial mode actually uses (others are recorded but ignored)."""
    groups = MODE_GROUPS[mode]
    return tuple(k.name for k in KNOBS.values() if k.group in groups)


def optuna_distributions(names: Iterable[str]) -> dict[str, Any]:
    """Optuna distributions (``IntDistribution``/``FloatDistribution``) over the knobs
    ``names``, on each knob's real scale (log scales as ``log=True``): the edit space as the
    TPE proposer samples it and as an exported study declares it."""
    from optuna.distributions import FloatDistribution, IntDistribution  # only its callers pay

    out: dict[str, Any] = {}
    for name in names:
        k = KNOBS[name]
        if k.is_int:
            out[name] = IntDistribution(int(k.low), int(k.high), log=k.is_log)
        else:
            out[name] = FloatDistribution(k.low, k.high, log=k.is_log)
    return out
