"""NumpyPPO against its oracles: autograd for the gradients, torch's Adam for a step, SB3's PPO
for whole training runs (the same policy to float32 rounding), and itself for determinism."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from stable_baselines3 import PPO
from torch import nn

from alphaloop.rl_engine import BatchedPortfolioVecEnv, load_policy, numpy_ppo, save_policy
from alphaloop.rl_engine import lean as lean_module
from alphaloop.rl_engine import ppo as ppo_module
from alphaloop.rl_engine.numpy_ppo import NumpyPPO
from alphaloop.rl_engine.ppo import TrainResult, make_ppo, train_ppo
from tests.rl_engine.test_lean import CASES, SMALL, _returns, _train

# Float32 rounding in another order: relative differences of about 1e-6 after a short run.
RUN_RTOL = 2e-5


def _params(result: TrainResult) -> dict[str, np.ndarray]:
    return {n: p.detach().numpy().copy() for n, p in result.model.policy.named_parameters()}


def _kwargs(case: str, seed: int = 5) -> dict[str, object]:
    config, n_assets, budget, n_envs, extra = CASES[case]
    return {
        "returns_train": _returns(n_assets),
        "config": config,
        "total_timesteps": budget,
        "n_envs": n_envs,
        "seed": seed,
        **extra,
    }


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_numpy_ppo_trains_sb3s_policy_to_rounding(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = _train(PPO, monkeypatch, **_kwargs(case))
    fast = _train(NumpyPPO, monkeypatch, **_kwargs(case))
    want, got = _params(reference), _params(fast)
    assert want.keys() == got.keys()
    for name in want:
        scale = float(np.abs(want[name]).max()) or 1.0
        assert np.abs(want[name] - got[name]).max() <= RUN_RTOL * scale, name
    # Training moved the policy far more than the two runs differ: log_std and the action
    # head's bias start at zero.
    for name in ("log_std", "action_net.bias"):
        assert np.abs(want[name]).max() > 1e-3, name
    assert fast.timesteps == reference.timesteps
    for (step_a, reward_a), (step_b, reward_b) in zip(reference.curve, fast.curve, strict=True):
        assert step_a == step_b
        assert reward_b == pytest.approx(reward_a, rel=1e-4, abs=1e-7)
    logged = fast.model.logger.name_to_value
    for key, value in reference.model.logger.name_to_value.items():
        if key.startswith("train/") and key != "train/n_updates":
            assert logged[key] == pytest.approx(value, rel=1e-3, abs=1e-6), key


def test_numpy_ppo_is_deterministic_at_a_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    case = "gae, 6 assets, uneven batches and rollouts"
    first = _train(NumpyPPO, monkeypatch, **_kwargs(case))
    again = _train(NumpyPPO, monkeypatch, **_kwargs(case))
    other = _train(NumpyPPO, monkeypatch, **_kwargs(case, seed=6))
    a, b, c = _params(first), _params(again), _params(other)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
    assert first.curve == again.curve
    assert any(not np.array_equal(a[name], c[name]) for name in a)


@pytest.mark.parametrize("advantage", ["gae", "grpo"])
@pytest.mark.parametrize("normalize", [True, False])
def test_minibatch_loss_and_gradients_equal_autograds(
    advantage: str, normalize: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ppo_module, "PPO_CLASS", NumpyPPO)
    env = BatchedPortfolioVecEnv(_returns(7), n_envs=2, lookback=5, episode_len=20)
    model = make_ppo(SMALL.model_copy(update={"ent_coef": 0.03}), env, seed=3, advantage=advantage)
    model.normalize_advantage = normalize
    rng = np.random.default_rng(4)
    with torch.no_grad():  # move off the initial weights so every term has a gradient
        for p in model.policy.parameters():
            if p.requires_grad:
                p.add_(torch.from_numpy(rng.normal(0, 0.1, p.shape).astype(np.float32)))
    net, _adam = model._numpy_parts()
    n, dim = 64, model.observation_space.shape[0]
    obs = rng.normal(0, 0.02, (n, dim)).astype(np.float32)
    actions = rng.normal(0, 1, (n, 7)).astype(np.float32)
    with torch.no_grad():
        _v, old_log_prob, _e = lean_module._evaluate_actions(
            model.policy, torch.from_numpy(obs), torch.from_numpy(actions)
        )
    # Old log-probabilities off by up to 0.4 put ratios on both sides of the clip range.
    old = (old_log_prob.numpy() + rng.uniform(-0.4, 0.4, n)).astype(np.float32)
    advantages = rng.normal(0.1, 1, n).astype(np.float32)
    returns = rng.normal(0, 0.1, n).astype(np.float32)
    clip = 0.2
    got = net.loss_and_grads(
        (obs, actions, old, advantages, returns), clip, (0.03, model.vf_coef, normalize)
    )
    logs: dict[str, list] = {"entropy": [], "pg": [], "value": [], "clip": [], "kl": []}
    batch = tuple(torch.from_numpy(x) for x in (obs, actions, returns, old, advantages, returns))
    model.ent_coef = 0.03
    model.policy.zero_grad(set_to_none=True)
    loss = model._minibatch_loss(batch, clip, logs)
    loss.backward()
    assert 0 < logs["clip"][0] < 1  # both sides of the clip range are exercised
    assert got[0] == pytest.approx(loss.item(), rel=1e-5)
    want_logs = (logs["pg"][0], logs["clip"][0], logs["value"][0], logs["entropy"][0])
    assert got[1:5] == pytest.approx(want_logs, rel=1e-5, abs=1e-9)
    assert got[5] == pytest.approx(float(logs["kl"][0]), rel=1e-4, abs=1e-9)
    flat = model._flat_adam
    for p, sl in zip(flat.params, flat.slices, strict=True):
        want = p.grad.numpy()
        scale = float(np.abs(want).max()) or 1.0
        np.testing.assert_allclose(net.grad[sl].reshape(p.shape), want, rtol=0, atol=1e-5 * scale)


def test_a_setup_the_numpy_loops_do_not_cover_runs_the_lean_loops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = BatchedPortfolioVecEnv(_returns(4), n_envs=2, lookback=5, episode_len=20)
    relu = NumpyPPO(
        "MlpPolicy",
        env,
        n_steps=64,
        batch_size=64,
        n_epochs=1,
        seed=1,
        device="cpu",
        policy_kwargs={"activation_fn": nn.ReLU},
    )
    assert lean_module.lean_supported(relu)
    assert not numpy_ppo.numpy_supported(relu)
    calls: list[str] = []
    for name in ("train", "_rollout_policy"):  # LeanPPO's, reached only when numpy's is not
        original = getattr(lean_module.LeanPPO, name)

        def spy(self: PPO, *args: object, _original=original, _name=name) -> object:
            calls.append(_name)
            return _original(self, *args)

        monkeypatch.setattr(lean_module.LeanPPO, name, spy)
    relu.learn(total_timesteps=256)  # two rollouts of 64 steps x 2 envs
    assert calls.count("train") == 2 and calls.count("_rollout_policy") == 2
    assert relu._numpy_parts() is None


def test_a_numpy_trained_policy_saves_and_loads_with_its_optimizer(tmp_path: Path) -> None:
    result = train_ppo(_returns(3), SMALL, total_timesteps=256, n_envs=2, seed=1)
    assert type(result.model) is NumpyPPO
    path = save_policy(result.model, tmp_path / "policy")
    loaded = load_policy(path)
    trained = dict(result.model.policy.named_parameters())
    for name, value in loaded.policy.named_parameters():
        assert torch.equal(value, trained[name])
    # The optimizer state saved is the one the numpy steps moved (its moments live in the
    # same memory): Adam has taken every minibatch step.
    state = loaded.policy.optimizer.state_dict()["state"]
    steps = {float(s["step"]) for s in state.values()}
    assert steps == {float(256 // 64 * SMALL.n_epochs)}
    assert all(float(s["exp_avg_sq"].abs().sum()) > 0 for s in state.values())


def test_numpy_adam_step_equals_torchs_clipping_and_adam() -> None:
    # Two copies of one policy: torch's clip_grad_norm_ and Adam.step on one, the numpy step
    # on the other's flat buffers, fed the same gradients (some large enough to be clipped).
    env = BatchedPortfolioVecEnv(_returns(7), n_envs=2, lookback=5, episode_len=20)
    reference, fast = (make_ppo(SMALL, env, seed=3) for _ in range(2))
    fast.policy.load_state_dict(reference.policy.state_dict())
    adam = numpy_ppo._NumpyAdam(lean_module._FlatAdam(fast.policy.optimizer))
    grad = np.zeros_like(adam.flat)
    rng = np.random.default_rng(2)
    for step in range(6):
        scale = 10.0 ** (step % 3 - 1)
        for p_ref, sl in zip(reference.policy.parameters(), adam.adam.slices, strict=True):
            g = rng.normal(0, scale, p_ref.shape).astype(np.float32)
            p_ref.grad = torch.from_numpy(g.copy())
            grad[sl] = g.reshape(-1)
        torch.nn.utils.clip_grad_norm_(reference.policy.parameters(), 0.5)
        reference.policy.optimizer.step()
        adam.step(grad, 0.5)
        for p_ref, p_fast in zip(
            reference.policy.parameters(), fast.policy.parameters(), strict=True
        ):
            np.testing.assert_allclose(p_fast.detach().numpy(), p_ref.detach().numpy(), atol=2e-7)
    state = fast.policy.optimizer.state_dict()["state"]
    assert {float(s["step"]) for s in state.values()} == {6.0}
