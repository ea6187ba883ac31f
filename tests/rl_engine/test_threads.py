"""Torch's thread count per trial and per worker, and that it never changes a number."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info, threadpool_limits

from alphaloop.knobs import TrialConfig
from alphaloop.market import split, synthetic_prices
from alphaloop.rl_engine import (
    TRIAL_THREADS,
    policy_weights,
    set_worker_threads,
    threads_per_worker,
    train_ppo,
    trial_threads,
)
from alphaloop.trials import TrialBudget, run_trial

TINY = TrialConfig(lookback=5, episode_len=20, rebal_freq=5, n_steps=64, batch_size=64, n_epochs=3)


@pytest.fixture
def restore_threads() -> Iterator[None]:
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_each_worker_gets_an_even_share_of_the_cores() -> None:
    assert threads_per_worker(1, cores=8) == 8
    assert threads_per_worker(2, cores=8) == 4
    assert threads_per_worker(3, cores=8) == 2
    assert threads_per_worker(2, cores=2) == 1
    assert threads_per_worker(4, cores=2) == 1  # never zero
    with pytest.raises(ValueError, match="workers"):
        threads_per_worker(0, cores=2)


def test_set_worker_threads_caps_torch(restore_threads: object) -> None:
    assert set_worker_threads(2, cores=2) == 1
    assert torch.get_num_threads() == 1
    assert set_worker_threads(1, cores=2) == 2
    assert torch.get_num_threads() == 2


def _blas_pools() -> dict[str, int]:
    return {p["filepath"]: p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}


def _blas_threads() -> set[int]:
    return set(_blas_pools().values())


def test_trial_threads_sets_and_restores(restore_threads: object) -> None:
    torch.set_num_threads(2)
    with threadpool_limits(2, user_api="blas"):
        before = _blas_pools()
        assert 2 in before.values()  # numpy's BLAS, at least, runs two threads here
        with trial_threads():
            assert torch.get_num_threads() == TRIAL_THREADS
            assert _blas_threads() == {TRIAL_THREADS}  # the numpy trainer's matrix products
        assert torch.get_num_threads() == 2
        assert _blas_pools() == before


def test_a_ppo_trial_runs_torch_on_its_share(restore_threads: object) -> None:
    torch.set_num_threads(2)
    data = split(synthetic_prices(n_days=900, n_assets=4, seed=1), source="synthetic")
    seen: list[int] = []
    run_trial(
        "ppo_only",
        TINY,
        data,
        TrialBudget(total_timesteps=256, n_envs=2),
        on_update=lambda _step, _reward: seen.extend([torch.get_num_threads(), *_blas_threads()]),
    )
    assert seen and set(seen) == {TRIAL_THREADS}
    assert torch.get_num_threads() == 2


def test_the_thread_count_does_not_change_the_walk_forward(restore_threads: object) -> None:
    rng = np.random.default_rng(4)
    returns = rng.normal(0.0003, 0.01, (600, 20))
    config = TINY.model_copy(update={"lookback": 20})
    model = train_ppo(returns[:400], config, total_timesteps=256, n_envs=2, seed=0).model
    weights = []
    for threads in (1, 2):
        torch.set_num_threads(threads)
        weights.append(policy_weights(model, returns, 400, 600, 20, 5))
    np.testing.assert_array_equal(weights[0], weights[1])
