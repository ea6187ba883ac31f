"""Made-up histories for the proposers: configs drawn uniformly over a mode's knobs on their
own scales, scored by a smooth objective whose optimum is known (every knob 30% of the way up
its range). The proposer tests and ``benchmarks.bench_proposers`` use them."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from alphaloop.knobs import KNOBS, TrialConfig, knobs_for_mode
from alphaloop.meta_agent.proposers import ProposalContext, TrialView
from alphaloop.spec import Objective


def unit(name: str, value: float) -> float:
    """Where ``value`` sits between the knob's bounds, on the knob's own scale (0 to 1)."""
    k = KNOBS[name]
    if k.is_log:
        return math.log(value / k.low) / math.log(k.high / k.low)
    return (value - k.low) / (k.high - k.low)


def random_config(rng: np.random.Generator, mode: str) -> TrialConfig:
    values: dict[str, Any] = {}
    for name in knobs_for_mode(mode):
        k = KNOBS[name]
        u = rng.random()
        value = k.low * (k.high / k.low) ** u if k.is_log else k.low + u * (k.high - k.low)
        values[name] = round(value) if k.is_int else value
    return TrialConfig(**values)


def score(config: TrialConfig, mode: str) -> float:
    """A smooth made-up objective, best with every knob 30% of the way up its range."""
    return -sum((unit(n, getattr(config, n)) - 0.3) ** 2 for n in knobs_for_mode(mode))


def history(mode: str, n: int, seed: int = 0) -> list[TrialView]:
    rng = np.random.default_rng(seed)
    views = [TrialView(idx=0, kind="baseline", status="keep", config=TrialConfig(), changes={})]
    views[0] = views[0].model_copy(update={"objective": score(TrialConfig(), mode)})
    for idx in range(1, n + 1):
        config = random_config(rng, mode)
        views.append(
            TrialView(
                idx=idx,
                kind="search",
                status="discard",
                config=config,
                changes={},
                objective=score(config, mode),
            )
        )
    return views


def context(mode: str, views: list[TrialView], seed: int = 0) -> ProposalContext:
    best = max((v for v in views if v.objective is not None), key=lambda v: v.objective)
    return ProposalContext(
        session_id="s-test",
        goal="maximise Sharpe",
        objective=Objective(),
        mode=mode,
        n_assets=20,
        budget_total=40,
        budget_left=40 - len(views),
        noise_floor=0.01,
        best_config=best.config,
        best_objective=best.objective,
        history=views,
        seed=seed,
    )
