"""Plots of a session's search: knob importance by optuna's evaluators finds the one knob the
objective was planted on, among knobs that vary at random; parallel coordinates draw an axis
per knob that varied."""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from alphaloop.journal import Journal
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.settings import Settings

from .helpers import live_server, new_session


@pytest.fixture
def planted(settings: Settings) -> tuple[Settings, str]:
    """60 trials: lookback, rebal_freq and ent_coef drawn at random; the objective is
    lookback's alone (plus a little noise)."""
    rng = np.random.default_rng(7)
    with Journal(settings.journal_path) as j:
        sid = new_session(j, budget=60)
        for i in range(60):
            lookback, rebal, ent = (
                int(rng.integers(5, 61)),
                int(rng.integers(1, 11)),
                float(rng.uniform(0, 0.1)),
            )
            config = TrialConfig(lookback=lookback, rebal_freq=rebal, ent_coef=ent)
            row = j.trials.start(sid, kind="search", config=config.model_dump(),
                                config_hash=config_hash(config), delta={"changes": {}},
                                parent_id=None, seed=i, rationale="r",
                                proposer="random")  # fmt: skip
            objective = lookback / 60 + float(rng.normal(0, 0.01))
            j.trials.finish(row.id, status="keep" if i % 2 else "discard", objective=objective,
                           metrics={"sharpe": objective}, elapsed_s=0.01)  # fmt: skip
        j.sessions.update(sid, status="finished", owner_pid=None)
    return settings, sid


@pytest.mark.parametrize("evaluator", ["fanova", "ped_anova"])
def test_importance_finds_the_planted_knob(planted, evaluator: str) -> None:
    settings, sid = planted
    with live_server(settings) as base:
        url = f"{base}/api/sessions/{sid}/plots/importance"
        r = httpx.get(url, params={"evaluator": evaluator}, timeout=60)
    assert r.status_code == 200, r.text
    imp = r.json()
    assert imp["n_trials"] == 60 and set(imp["importances"]) == {
        "lookback",
        "rebal_freq",
        "ent_coef",
    }
    top = max(imp["importances"], key=imp["importances"].get)
    assert top == "lookback", imp
    if evaluator == "fanova":  # variance shares: lookback's is most of the total
        assert imp["importances"]["lookback"] > 0.8 * sum(imp["importances"].values())
    assert imp["figure"]["data"][0]["y"][-1] == "lookback"


def test_parallel_coordinates_axis_per_varying_knob(planted) -> None:
    settings, sid = planted
    with live_server(settings) as base:
        fig = httpx.get(f"{base}/api/sessions/{sid}/plots/parallel").json()
        dims = fig["data"][0]["dimensions"]
        assert [d["label"] for d in dims] == ["lookback", "rebal_freq", "ent_coef", "objective"]
        assert all(len(d["values"]) == 60 for d in dims)
        empty = httpx.get(f"{base}/api/sessions/s-20000101-000000-abcd/plots/parallel")
        assert empty.status_code == 404
