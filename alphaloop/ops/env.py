"""The Gymnasium env as a reader sees it: its id, its config and its spaces for a scope."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from alphaloop.ops.knobs import KnobInfo, list_knobs


class SpaceInfo(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    shape: list[int]
    low: float
    high: float
    dtype: str
    layout: str


class EnvInfo(BaseModel):
    """``alphaloop/PortfolioCVaR-v0`` for ``n_assets`` assets at the default knobs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    env_id: str
    n_assets: int
    config: dict[str, float]
    observation_space: SpaceInfo
    action_space: SpaceInfo
    reward: str
    knobs: list[KnobInfo]


def env_info(n_assets: int = 4) -> EnvInfo:
    """The env's config (its knobs at their defaults), spaces and the 16 knobs with bounds.

    Raises:
        ValueError: fewer than 2 assets.
    """
    from alphaloop.rl_engine import ENV_ID
    from alphaloop.rl_engine.env_core import action_space_for, knob_default, observation_space_for

    if n_assets < 2:
        raise ValueError(f"the env needs at least 2 assets, got {n_assets}")
    env_knobs = [k for k in list_knobs() if k.group == "env"]
    config = {k.name: knob_default(k.name) for k in env_knobs}
    lookback = int(config["lookback"])
    obs, act = observation_space_for(lookback, n_assets), action_space_for(n_assets)
    return EnvInfo(
        env_id=ENV_ID,
        n_assets=n_assets,
        config=config,
        observation_space=SpaceInfo(
            kind="Box",
            shape=list(obs.shape),
            low=float(obs.low.min()),
            high=float(obs.high.max()),
            dtype=str(obs.dtype),
            layout=f"{lookback} days x {n_assets} clipped log returns (day-major), "
            f"then {n_assets} current weights",
        ),
        action_space=SpaceInfo(
            kind="Box",
            shape=list(act.shape),
            low=float(act.low.min()),
            high=float(act.high.max()),
            dtype=str(act.dtype),
            layout="one logit per asset; target weights are their softmax",
        ),
        reward="log growth of the held period - turnover_cost_bps/1e4 x turnover "
        "- vol_penalty x downside semi-variance",
        knobs=list_knobs(),
    )
