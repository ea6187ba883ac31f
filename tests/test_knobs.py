"""Knobs: bounds, defaults, clipping, rounding, feasibility, hashing and delta parsing.

The bounds table below is copied from the design document, not from the code, so a drifted
bound in ``alphaloop.knobs`` fails here.
"""

from __future__ import annotations

import ast
import importlib.util
import math
import random
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from alphaloop.exceptions import AlphaloopError, InvalidDelta
from alphaloop.knobs import (
    KNOB_NAMES,
    KNOBS,
    BoundsClip,
    ConfigDelta,
    TrialConfig,
    clip,
    config_hash,
    effective_max_weight,
    knobs_for_mode,
    parse_number,
)

# name: (low, high, is_int, a value below low, a value above high)
DESIGN_BOUNDS: dict[str, tuple[float, float, bool, float, float]] = {
    "lookback": (5, 60, True, 4, 61),
    "episode_len": (20, 120, True, 0, 500),
    "rebal_freq": (1, 10, True, -3, 11),
    "turnover_cost_bps": (0, 50, False, -1.5, 50.5),
    "vol_penalty": (0, 5, False, -0.1, 7.0),
    "learning_rate": (1e-5, 1e-2, False, 1e-6, 0.5),
    "n_steps": (64, 4096, True, 10, 8192),
    "batch_size": (32, 512, True, 16, 1024),
    "gae_lambda": (0.85, 0.99, False, 0.5, 1.0),
    "gamma": (0.90, 0.999, False, 0.8, 1.0),
    "ent_coef": (0.0, 0.10, False, -0.01, 0.2),
    "n_epochs": (3, 30, True, 1, 100),
    "cvar_alpha": (0.85, 0.99, False, 0.5, 0.999),
    "max_position_pct": (0.02, 0.30, False, 0.001, 0.9),
    "n_scenarios": (1000, 10000, True, 10, 50000),
    "cufolio_hold_days": (5, 60, True, 1, 250),
}
# With this many assets no feasibility rule fires at any bound of max_position_pct.
MANY_ASSETS = 100


def test_knob_table_matches_the_design() -> None:
    assert list(KNOB_NAMES) == list(DESIGN_BOUNDS)
    for name, (low, high, is_int, _, _) in DESIGN_BOUNDS.items():
        k = KNOBS[name]
        assert (k.low, k.high, k.is_int) == (low, high, is_int), name


def test_json_schema_is_the_edit_space() -> None:
    props = TrialConfig.model_json_schema()["properties"]
    assert set(props) == set(DESIGN_BOUNDS)
    for name, (low, high, is_int, _, _) in DESIGN_BOUNDS.items():
        assert props[name]["minimum"] == low, name
        assert props[name]["maximum"] == high, name
        assert props[name]["type"] == ("integer" if is_int else "number"), name


@pytest.mark.parametrize("name", list(DESIGN_BOUNDS))
def test_default_within_bounds_and_typed(name: str) -> None:
    low, high, is_int, _, _ = DESIGN_BOUNDS[name]
    value = getattr(TrialConfig(), name)
    assert low <= value <= high
    assert type(value) is (int if is_int else float)


def _sb3_ppo_init_defaults() -> dict[str, object]:
    """``stable_baselines3.PPO.__init__``'s keyword defaults, read from the installed source.

    Parsing the source gives the same signature as ``inspect.signature(PPO.__init__)`` without
    importing torch, which would cost seconds of a test run meant to be fast.
    """
    spec = importlib.util.find_spec("stable_baselines3")
    assert spec is not None and spec.origin is not None
    tree = ast.parse((Path(spec.origin).parent / "ppo" / "ppo.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "PPO")
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    args = init.args.args[len(init.args.args) - len(init.args.defaults) :]
    defaults: dict[str, object] = {}
    for arg, node in zip(args, init.args.defaults, strict=True):
        try:
            defaults[arg.arg] = ast.literal_eval(node)
        except ValueError:
            continue  # not a literal (a class, a callable...): not one of our knobs
    return defaults


def test_defaults_equal_sb3_ppo_defaults() -> None:
    params = _sb3_ppo_init_defaults()
    config = TrialConfig()
    compared = []
    for name, (low, high, _, _, _) in DESIGN_BOUNDS.items():
        if isinstance(params.get(name), int | float) and not isinstance(params[name], bool):
            sb3 = params[name]
            if low <= sb3 <= high:
                assert getattr(config, name) == sb3, name
                compared.append(name)
    assert sorted(compared) == sorted(
        ["learning_rate", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "ent_coef"]
    )
    # And the values themselves, written out (SB3 2.x): a changed SB3 default shows up here.
    assert (config.learning_rate, config.n_steps, config.batch_size, config.n_epochs) == (
        3e-4,
        2048,
        64,
        10,
    )
    assert (config.gamma, config.gae_lambda, config.ent_coef) == (0.99, 0.95, 0.0)


# -- clip at every edge -------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(DESIGN_BOUNDS))
def test_clip_below_low(name: str) -> None:
    low, high, is_int, below, _ = DESIGN_BOUNDS[name]
    new, clips = clip(TrialConfig(), ConfigDelta(changes={name: below}), MANY_ASSETS)
    assert getattr(new, name) == low
    assert type(getattr(new, name)) is (int if is_int else float)
    assert clips == [
        BoundsClip(
            knob=name,
            proposed=below,
            applied=low,
            low=low,
            high=high,
            reason=f"{below:g} is below the lower bound [{low:g}, {high:g}]",
        )
    ]


@pytest.mark.parametrize("name", list(DESIGN_BOUNDS))
def test_clip_above_high(name: str) -> None:
    low, high, is_int, _, above = DESIGN_BOUNDS[name]
    # Raising n_steps / batch_size alone could trip batch_size <= n_steps; keep the pair legal.
    base = TrialConfig(n_steps=4096) if name == "batch_size" else TrialConfig()
    new, clips = clip(base, ConfigDelta(changes={name: above}), MANY_ASSETS)
    assert getattr(new, name) == high
    assert type(getattr(new, name)) is (int if is_int else float)
    assert clips == [
        BoundsClip(
            knob=name,
            proposed=above,
            applied=high,
            low=low,
            high=high,
            reason=f"{above:g} is above the upper bound [{low:g}, {high:g}]",
        )
    ]


@pytest.mark.parametrize("edge", ["low", "high"])
@pytest.mark.parametrize("name", list(DESIGN_BOUNDS))
def test_value_exactly_at_bound_is_not_clipped(name: str, edge: str) -> None:
    low, high, _, _, _ = DESIGN_BOUNDS[name]
    value = low if edge == "low" else high
    # Each knob at its edge, with the others set so that no feasibility rule fires.
    base = TrialConfig(n_steps=4096, batch_size=32, cvar_alpha=0.85, n_scenarios=10000)
    new, clips = clip(base, ConfigDelta(changes={name: value}), MANY_ASSETS)
    assert clips == []
    assert getattr(new, name) == value


def test_clip_leaves_other_knobs_alone_and_the_input_unchanged() -> None:
    base = TrialConfig()
    new, clips = clip(base, ConfigDelta(changes={"gamma": 0.95, "lookback": 30}), 20)
    assert clips == []
    assert new.gamma == 0.95 and new.lookback == 30
    assert base == TrialConfig()
    rest = {k for k in KNOB_NAMES if k not in ("gamma", "lookback")}
    assert {k: getattr(new, k) for k in rest} == {k: getattr(base, k) for k in rest}


def test_clip_refuses_degenerate_universe() -> None:
    with pytest.raises(ValueError, match="n_assets must be at least 2, got 1"):
        clip(TrialConfig(), ConfigDelta(), 1)
    with pytest.raises(ValueError, match="n_envs must be at least 1, got 0"):
        clip(TrialConfig(), ConfigDelta(), 5, n_envs=0)


# -- integer rounding ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "proposed", "applied"),
    [
        ("lookback", 10.5, 11),
        ("lookback", 10.4, 10),
        ("n_epochs", 7.5, 8),
        ("n_epochs", 7.49, 7),
        ("cufolio_hold_days", 20.6, 21),
    ],
)
def test_linear_integer_knob_rounds_half_up(name: str, proposed: float, applied: int) -> None:
    new, clips = clip(TrialConfig(), ConfigDelta(changes={name: proposed}), 20)
    assert getattr(new, name) == applied
    assert type(getattr(new, name)) is int
    low, high, _, _, _ = DESIGN_BOUNDS[name]
    assert clips == [
        BoundsClip(
            knob=name,
            proposed=proposed,
            applied=applied,
            low=low,
            high=high,
            reason=f"{name} is an integer knob; rounded",
        )
    ]


# Between k and k+1 the log-midpoint is sqrt(k (k+1)), a little below k + 0.5:
#   sqrt(64 * 65) = 64.49806..., sqrt(32 * 33) = 32.49615..., sqrt(90 * 91) = 90.49862...
# so a value in (sqrt(k (k+1)), k + 0.5) rounds up on the log scale but down on a linear one.
@pytest.mark.parametrize(
    ("name", "proposed", "applied"),
    [
        ("n_steps", 64.499, 65),
        ("n_steps", 64.497, 64),
        ("n_steps", 90.4, 90),
        ("n_steps", 90.499, 91),
        ("batch_size", 32.497, 33),
        ("batch_size", 32.495, 32),
    ],
)
def test_log_integer_knob_rounds_to_nearer_logarithm(
    name: str, proposed: float, applied: int
) -> None:
    new, clips = clip(TrialConfig(), ConfigDelta(changes={name: proposed}), 20)
    assert getattr(new, name) == applied
    assert [(c.knob, c.proposed, c.applied) for c in clips] == [(name, proposed, applied)]


def test_integral_float_is_not_a_rounding_clip() -> None:
    new, clips = clip(TrialConfig(), ConfigDelta(changes={"lookback": 30.0, "n_steps": 128.0}), 20)
    assert clips == []
    assert (new.lookback, new.n_steps) == (30, 128)
    assert type(new.lookback) is int and type(new.n_steps) is int


def test_out_of_bounds_fraction_on_integer_knob_lands_on_the_bound() -> None:
    new, clips = clip(TrialConfig(), ConfigDelta(changes={"lookback": 60.7}), 20)
    assert new.lookback == 60
    assert clips[0].reason == "60.7 is above the upper bound [5, 60]"


# -- feasibility --------------------------------------------------------------------------------


def test_cap_raised_to_one_over_n() -> None:
    new, clips = clip(TrialConfig(), ConfigDelta(changes={"max_position_pct": 0.1}), 5)
    assert new.max_position_pct == 0.2
    assert len(clips) == 1
    c = clips[0]
    assert (c.knob, c.proposed, c.applied, c.low, c.high) == (
        "max_position_pct",
        0.1,
        0.2,
        0.02,
        0.30,
    )
    assert c.reason == ("infeasible: 5 assets x cap 0.1 < 1 (fully invested); cap raised to 1/5")
    assert effective_max_weight(new, 5) == 0.2


def test_cap_raised_to_at_least_one_over_n_when_it_does_not_divide() -> None:
    new, clips = clip(TrialConfig(), ConfigDelta(changes={"max_position_pct": 0.05}), 7)
    # 1/7 = 0.142857142..., rounded up in the 6th decimal so that 7 * cap >= 1.
    assert new.max_position_pct == pytest.approx(0.142858, abs=1e-12)
    assert new.max_position_pct * 7 >= 1.0
    assert clips[0].reason.endswith("cap raised to 1/7")


def test_cap_out_of_bounds_then_infeasible_gives_two_clips() -> None:
    new, clips = clip(TrialConfig(), ConfigDelta(changes={"max_position_pct": 0.001}), 20)
    assert new.max_position_pct == 0.05
    assert [(c.proposed, c.applied) for c in clips] == [(0.001, 0.02), (0.02, 0.05)]


def test_cap_with_three_assets_goes_to_upper_bound_with_reason() -> None:
    new, clips = clip(TrialConfig(), ConfigDelta(changes={"max_position_pct": 0.1}), 3)
    assert new.max_position_pct == 0.30
    assert [(c.knob, c.proposed, c.applied) for c in clips] == [("max_position_pct", 0.1, 0.30)]
    assert clips[0].reason == (
        "infeasible: 3 assets x cap 0.1 < 1 (fully invested); "
        "cap set to its upper bound and the solver uses 1/3"
    )
    # The knob cannot express 1/3; the solver falls back to equal weight.
    assert effective_max_weight(new, 3) == pytest.approx(1 / 3)


def test_cap_feasibility_fires_without_a_delta() -> None:
    # The default cap (0.25) is infeasible with 3 assets even if nobody proposed a change.
    new, clips = clip(TrialConfig(), ConfigDelta(), 3)
    assert new.max_position_pct == 0.30
    assert [c.knob for c in clips] == ["max_position_pct"]


def test_effective_max_weight_is_the_knob_when_feasible() -> None:
    assert effective_max_weight(TrialConfig(), 20) == 0.25
    assert effective_max_weight(TrialConfig(max_position_pct=0.02), 50) == 0.02


@pytest.mark.parametrize(
    ("alpha", "n_before", "n_after", "tail_text"),
    [
        # (1 - 0.99) * 1000 = 10 tail scenarios; 50 / 0.01 = 5000.
        (0.99, 1000, 5000, "10.0"),
        # (1 - 0.98) * 1000 = 20; 50 / 0.02 = 2500.
        (0.98, 1000, 2500, "20.0"),
        # (1 - 0.97) * 1000 = 30; 50 / 0.03 = 1666.7 -> 1667 (rounded up, never down).
        (0.97, 1000, 1667, "30.0"),
        # (1 - 0.99) * 4000 = 40.
        (0.99, 4000, 5000, "40.0"),
    ],
)
def test_tail_scenarios_raised_to_fifty(
    alpha: float, n_before: int, n_after: int, tail_text: str
) -> None:
    delta = ConfigDelta(changes={"cvar_alpha": alpha, "n_scenarios": n_before})
    new, clips = clip(TrialConfig(), delta, 20)
    assert new.n_scenarios == n_after
    assert (1 - alpha) * new.n_scenarios >= 50 - 1e-9
    assert (1 - alpha) * (new.n_scenarios - 1) < 50
    assert len(clips) == 1
    c = clips[0]
    assert (c.knob, c.proposed, c.applied, c.low, c.high) == (
        "n_scenarios",
        n_before,
        n_after,
        1000,
        10000,
    )
    assert c.reason == (
        f"infeasible: (1 - cvar_alpha={alpha:g}) x n_scenarios={n_before} "
        f"leaves {tail_text} tail scenarios < 50"
    )


def test_exactly_fifty_tail_scenarios_is_feasible() -> None:
    # (1 - 0.95) * 1000 = 50 and (1 - 0.99) * 5000 = 50, up to float rounding.
    for alpha, n in ((0.95, 1000), (0.99, 5000), (0.9, 1000)):
        delta = ConfigDelta(changes={"cvar_alpha": alpha, "n_scenarios": n})
        new, clips = clip(TrialConfig(), delta, 20)
        assert clips == [] and new.n_scenarios == n


@pytest.mark.parametrize(
    ("n_steps", "batch", "n_envs", "expected"),
    [(64, 512, 1, 64), (64, 512, 4, 256), (100, 200, 1, 100), (128, 256, 3, 256)],
)
def test_batch_size_lowered_to_rollout_size(
    n_steps: int, batch: int, n_envs: int, expected: int
) -> None:
    delta = ConfigDelta(changes={"n_steps": n_steps, "batch_size": batch})
    new, clips = clip(TrialConfig(), delta, 20, n_envs=n_envs)
    assert new.batch_size == expected
    assert new.n_steps == n_steps
    if expected == batch:
        assert clips == []
    else:
        assert len(clips) == 1
        c = clips[0]
        assert (c.knob, c.proposed, c.applied, c.low, c.high) == (
            "batch_size",
            batch,
            expected,
            32,
            512,
        )
        assert c.reason == (
            f"infeasible: batch_size {batch} > n_steps x n_envs = {n_steps} x {n_envs}"
        )


def test_batch_size_rule_uses_the_rounded_n_steps() -> None:
    new, clips = clip(TrialConfig(), ConfigDelta(changes={"n_steps": 64.4, "batch_size": 128}), 20)
    assert (new.n_steps, new.batch_size) == (64, 64)
    assert [(c.knob, c.applied) for c in clips] == [("n_steps", 64), ("batch_size", 64)]


def test_every_clip_result_is_a_valid_feasible_config() -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        changes = {
            name: float(rng.uniform(lo - (hi - lo), hi + (hi - lo)))
            for name, (lo, hi, _, _, _) in DESIGN_BOUNDS.items()
            if rng.random() < 0.5
        }
        n_assets = int(rng.integers(2, 60))
        n_envs = int(rng.integers(1, 5))
        new, _ = clip(TrialConfig(), ConfigDelta(changes=changes), n_assets, n_envs)
        TrialConfig.model_validate(new.model_dump())
        assert effective_max_weight(new, n_assets) * n_assets >= 1 - 1e-12
        assert (1 - new.cvar_alpha) * new.n_scenarios >= 50 - 1e-9
        assert new.batch_size <= new.n_steps * n_envs


# -- config hash --------------------------------------------------------------------------------


def test_config_hash_same_content_same_hash_regardless_of_key_order() -> None:
    payload = TrialConfig(lookback=30, gamma=0.97).model_dump()
    items = list(payload.items())
    random.Random(3).shuffle(items)
    reordered = TrialConfig.model_validate(dict(items))
    reversed_ = TrialConfig.model_validate(dict(reversed(items)))
    h = config_hash(TrialConfig(lookback=30, gamma=0.97))
    assert len(h) == 64 and int(h, 16) >= 0
    assert config_hash(reordered) == h
    assert config_hash(reversed_) == h


def test_config_hash_is_sha256_of_sorted_compact_json() -> None:
    import hashlib
    import json

    config = TrialConfig()
    # Written out by hand in sorted-key order, so the canonical form is pinned.
    text = (
        '{"batch_size":64,"cufolio_hold_days":21,"cvar_alpha":0.95,"ent_coef":0.0,'
        '"episode_len":60,"gae_lambda":0.95,"gamma":0.99,"learning_rate":0.0003,'
        '"lookback":20,"max_position_pct":0.25,"n_epochs":10,"n_scenarios":5000,'
        '"n_steps":2048,"rebal_freq":5,"turnover_cost_bps":10.0,"vol_penalty":0.5}'
    )
    assert json.loads(text) == config.model_dump()
    assert config_hash(config) == hashlib.sha256(text.encode()).hexdigest()


def test_config_hash_differs_for_every_single_knob_change() -> None:
    hashes = {config_hash(TrialConfig())}
    for name, (low, high, _, _, _) in DESIGN_BOUNDS.items():
        value = high if getattr(TrialConfig(), name) != high else low
        hashes.add(config_hash(TrialConfig(**{name: value})))
    assert len(hashes) == 1 + len(DESIGN_BOUNDS)


def test_config_hash_ignores_number_spelling() -> None:
    # 10 and 10.0 are the same cost; -0.0 and 0.0 are the same entropy bonus.
    assert config_hash(TrialConfig(turnover_cost_bps=10)) == config_hash(TrialConfig())
    assert config_hash(TrialConfig(ent_coef=-0.0)) == config_hash(TrialConfig())
    new, clips = clip(TrialConfig(), ConfigDelta(changes={"ent_coef": "-0"}), 20)
    assert clips == []
    assert config_hash(new) == config_hash(TrialConfig())


# -- ConfigDelta / parse_number -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("lookback", "abc", "knob 'lookback': 'abc' is not a number"),
        ("lookback", "", "knob 'lookback': '' is not a number"),
        ("ent_coef", "5%", "knob 'ent_coef': '5%' is a percentage; give a plain number"),
        ("gamma", float("nan"), "knob 'gamma': nan is not a finite number"),
        ("gamma", "NaN", "knob 'gamma': 'NaN' is not a finite number"),
        ("gamma", float("inf"), "knob 'gamma': inf is not a finite number"),
        ("gamma", "-inf", "knob 'gamma': '-inf' is not a finite number"),
        ("n_steps", None, "knob 'n_steps': None is not a number"),
        ("n_steps", True, "knob 'n_steps': True is not a number"),
        ("n_steps", False, "knob 'n_steps': False is not a number"),
        ("n_steps", [64], "knob 'n_steps': [64] is not a number"),
    ],
)
def test_bad_value_raises_invalid_delta_naming_key_and_value(
    key: str, value: object, message: str
) -> None:
    with pytest.raises(InvalidDelta) as info:
        ConfigDelta(changes={key: value})
    err = info.value
    assert str(err).startswith(message)
    assert err.key == key
    if isinstance(value, float) and math.isnan(value):
        assert math.isnan(err.value)
    else:
        assert err.value == value and type(err.value) is type(value)
    assert isinstance(err, AlphaloopError)
    assert not isinstance(err, ValidationError)


def test_integer_too_large_for_a_float_is_invalid_not_a_crash() -> None:
    huge = 10**400
    with pytest.raises(InvalidDelta) as info:
        ConfigDelta(changes={"n_scenarios": huge})
    assert info.value.key == "n_scenarios"
    assert info.value.value == huge
    assert "not a finite number" in str(info.value)


def test_unknown_knob_raises_invalid_delta_listing_known_ones() -> None:
    with pytest.raises(InvalidDelta) as info:
        ConfigDelta(changes={"lr": 0.001})
    err = info.value
    assert err.key == "lr" and err.value == 0.001
    assert str(err) == f"unknown knob 'lr' (value 0.001); known knobs: {', '.join(DESIGN_BOUNDS)}"


def test_changes_must_be_a_mapping() -> None:
    with pytest.raises(InvalidDelta, match=r"changes must be a mapping of knob -> value, got \["):
        ConfigDelta(changes=[("lookback", 10)])


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("3e-4", 3e-4),
        (" 64 ", 64.0),
        ("-2.5", -2.5),
        (7, 7.0),
        (np.float64(0.25), 0.25),
        (np.int64(128), 128.0),
    ],
)
def test_numeric_values_are_accepted(value: object, expected: float) -> None:
    delta = ConfigDelta(changes={"learning_rate": value})
    assert delta.changes == {"learning_rate": expected}
    assert type(delta.changes["learning_rate"]) is float
    assert parse_number("learning_rate", value) == expected


def test_empty_and_none_changes() -> None:
    assert ConfigDelta().changes == {}
    assert ConfigDelta(changes=None).changes == {}
    assert ConfigDelta(changes={}, rationale="why").rationale == "why"


def test_config_delta_is_frozen_and_strict() -> None:
    delta = ConfigDelta(changes={"gamma": 0.95})
    with pytest.raises(ValidationError, match="frozen"):
        delta.rationale = "changed"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="extra"):
        ConfigDelta(changes={}, note="x")  # type: ignore[call-arg]


# -- TrialConfig --------------------------------------------------------------------------------


def test_trial_config_is_frozen() -> None:
    config = TrialConfig()
    with pytest.raises(ValidationError, match="frozen"):
        config.lookback = 30  # type: ignore[misc]
    assert config.lookback == 20


def test_trial_config_rejects_extra_keys() -> None:
    with pytest.raises(ValidationError, match=r"extra_forbidden|Extra inputs") as info:
        TrialConfig(clip_range=0.2)  # type: ignore[call-arg]
    assert "clip_range" in str(info.value)


@pytest.mark.parametrize("name", list(DESIGN_BOUNDS))
def test_trial_config_rejects_out_of_bounds(name: str) -> None:
    _, _, _, below, above = DESIGN_BOUNDS[name]
    for value in (below, above):
        with pytest.raises(ValidationError) as info:
            TrialConfig(**{name: value})
        assert name in str(info.value)
        assert "greater than or equal" in str(info.value) or "less than or equal" in str(info.value)


def test_trial_config_rejects_fractional_integer_knob() -> None:
    with pytest.raises(ValidationError, match="lookback"):
        TrialConfig(lookback=10.5)


def test_knobs_for_mode() -> None:
    assert knobs_for_mode("cufolio_only") == (
        "cvar_alpha",
        "max_position_pct",
        "n_scenarios",
        "cufolio_hold_days",
    )
    assert len(knobs_for_mode("ppo_only")) == 12
    assert "cvar_alpha" not in knobs_for_mode("ppo_only")
    assert knobs_for_mode("unified") == KNOB_NAMES
