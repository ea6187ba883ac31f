"""The frozen evaluator's numbers, pinned to its version.

``golden.json`` holds, for one ``EVALUATOR_VERSION``, the daily returns, objective and baseline
figures of a few fixed evaluations on seeded synthetic data: the default Mean-CVaR config on
VALIDATION, a tiny PPO trained at a fixed seed on VALIDATION, and both on an explicit window
(the PPO as the saved policy it trained). While the file's version is the code's, the numbers
must match; when they move, the version must be bumped and the file regenerated::

    python -m tests.trials.test_golden --write

so every journaled number keeps pointing at the evaluator that produced it.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from alphaloop.knobs import TrialConfig
from alphaloop.market import MarketData, split, synthetic_prices
from alphaloop.trials import (
    EVALUATOR_VERSION,
    ConfigSubject,
    Dates,
    PolicySubject,
    TrialBudget,
    TrialResult,
    evaluate,
)

GOLDEN = Path(__file__).with_name("golden.json")
REGENERATE = "python -m tests.trials.test_golden --write"
RTOL = 1e-10
# Returns near zero compare on an absolute scale: a relative 1e-10 of 1e-17 is no test.
ATOL = 1e-14
# A trained policy's numbers hold to the last bit on one kind of CPU only: numpy's BLAS picks
# its kernels by instruction set, kernels of another set round differently, and training carries
# a last-bit difference on through every update (on two CPU families the tiny PPO's daily
# returns parted by 1e-10 at most, its Sharpe by 4e-9). PPO cases compare at these
# tolerances, still far finer than a change to the evaluator's arithmetic moves them.
RTOL_TRAINED = 1e-6
ATOL_TRAINED = 1e-9
TINY_PPO = TrialConfig(
    lookback=5, episode_len=20, rebal_freq=5, n_steps=64, batch_size=64, n_epochs=3
)
TINY_BUDGET = TrialBudget(total_timesteps=256, n_envs=2)
EXPLICIT_WINDOW = Dates(start=dt.date(2014, 10, 1), end=dt.date(2015, 3, 31))


def golden_data() -> MarketData:
    """The synthetic set, every argument spelled out so a new default cannot move it."""
    prices = synthetic_prices(n_days=1500, n_assets=6, seed=0, start="2010-01-04")
    return split(prices, source="synthetic")


def figures(result: TrialResult) -> dict[str, Any]:
    return {
        "objective": result.objective,
        "daily_returns": result.daily_returns,
        "baselines": {
            name: {"sharpe": m.sharpe, "total_return": m.total_return}
            for name, m in sorted(result.baselines.items())
        },
    }


def evaluations(policy_dir: Path) -> dict[str, dict[str, Any]]:
    """The pinned evaluations, by name."""
    data = golden_data()
    cvar = ConfigSubject(mode="cufolio_only", seed=0)
    ppo = ConfigSubject(mode="ppo_only", config=TINY_PPO, budget=TINY_BUDGET, seed=0)
    trained = evaluate(ppo, "validation", data, policy_dir=policy_dir)
    policy = PolicySubject(
        mode="ppo_only", config=TINY_PPO, budget=TINY_BUDGET, policy_path=trained.policy_path
    )
    return {
        "cufolio_only default, validation": figures(evaluate(cvar, "validation", data)),
        "ppo_only tiny, validation": figures(trained),
        "cufolio_only default, explicit dates": figures(evaluate(cvar, EXPLICIT_WINDOW, data)),
        "ppo_only policy, explicit dates": figures(evaluate(policy, EXPLICIT_WINDOW, data)),
    }


def write() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cases = evaluations(Path(tmp))
    GOLDEN.write_text(
        json.dumps({"evaluator_version": EVALUATOR_VERSION, "evaluations": cases}, indent=1) + "\n",
        encoding="utf-8",
    )


def _flat(case: dict[str, Any]) -> dict[str, np.ndarray]:
    out = {
        "objective": np.array([case["objective"]]),
        "daily_returns": np.array(case["daily_returns"]),
    }
    for name, values in case["baselines"].items():
        out |= {f"{name} {k}": np.array([v]) for k, v in values.items()}
    return out


@pytest.mark.slow
def test_the_evaluators_numbers_move_only_with_its_version(tmp_path: Path) -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    if golden["evaluator_version"] != EVALUATOR_VERSION:
        pytest.fail(
            f"{GOLDEN.name} pins evaluator version {golden['evaluator_version']!r}, the code is "
            f"{EVALUATOR_VERSION!r}: regenerate it with `{REGENERATE}`"
        )
    now = evaluations(tmp_path)
    assert set(now) == set(golden["evaluations"])
    for name, case in golden["evaluations"].items():
        pinned, got = _flat(case), _flat(now[name])
        rtol, atol = (RTOL_TRAINED, ATOL_TRAINED) if name.startswith("ppo") else (RTOL, ATOL)
        for key, want in pinned.items():
            have = got[key]
            if have.shape != want.shape or not np.allclose(have, want, rtol=rtol, atol=atol):
                pytest.fail(
                    f"{name}: {key} changed while EVALUATOR_VERSION stayed {EVALUATOR_VERSION!r}."
                    " The evaluator's numbers moved: bump EVALUATOR_VERSION in "
                    f"alphaloop/trials/version.py and regenerate {GOLDEN.name} with "
                    f"`{REGENERATE}` (or undo the change)."
                )


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: {REGENERATE}")
    write()
    print(f"wrote {GOLDEN} for evaluator version {EVALUATOR_VERSION}")
