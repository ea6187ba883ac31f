"""NumpyPPO against SB3's PPO, its reference: one minibatch's loss and gradients against SB3's
policy under autograd, its Adam against torch's, whole training runs against SB3's (the same
policy to float32 rounding), and itself for determinism; SB3 is required at a range of releases,
the installed one within it."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
import stable_baselines3
import torch
from packaging.specifiers import SpecifierSet
from stable_baselines3 import PPO
from torch import nn
from torch.nn import functional as F

from alphaloop.knobs import TrialConfig
from alphaloop.rl_engine import BatchedPortfolioVecEnv, load_policy, save_policy
from alphaloop.rl_engine import ppo as ppo_module
from alphaloop.rl_engine.numpy_adam import NumpyAdam
from alphaloop.rl_engine.numpy_buffer import NumpyRolloutBuffer
from alphaloop.rl_engine.numpy_ppo import NumpyPPO
from alphaloop.rl_engine.ppo import TrainResult, make_ppo, train_ppo

SMALL = TrialConfig(lookback=5, episode_len=20, rebal_freq=5, n_steps=64, batch_size=64, n_epochs=3)
# Float32 rounding in another order: relative differences of about 1e-6 after a short run.
RUN_RTOL = 2e-5
PYPROJECT = Path(__file__).parents[2] / "pyproject.toml"


def _returns(n_assets: int, seed: int = 11) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(0.0003, 0.01 + 0.004 * np.arange(n_assets), (400, n_assets))


def _train(trainer: type[PPO], monkeypatch: pytest.MonkeyPatch, **kwargs: object) -> TrainResult:
    monkeypatch.setattr(ppo_module, "PPO_CLASS", trainer)
    result = train_ppo(**kwargs)  # type: ignore[arg-type]
    assert type(result.model) is trainer
    return result


def _params(result: TrainResult) -> dict[str, np.ndarray]:
    return {n: p.detach().numpy().copy() for n, p in result.model.policy.named_parameters()}


# Asset counts 3, 6 and 7 give layer sizes that are not multiples of a SIMD vector or of a
# 64-byte line, so the one-buffer layout is tested where alignment could bite; uneven
# minibatches, uneven rollouts, critic-free estimators and drawdown truncation each take a
# path of their own.
CASES = {
    "gae, 3 assets": (SMALL, 3, 256, 2, {}),
    "gae, 6 assets, uneven batches and rollouts": (
        SMALL.model_copy(update={"batch_size": 48, "ent_coef": 0.02, "lookback": 7}),
        6,
        1000,
        3,
        {},
    ),
    "grpo with truncation": (
        SMALL.model_copy(update={"batch_size": 100}),
        7,
        512,
        2,
        {"advantage": "grpo", "truncate_drawdown": 0.02, "stop_properly": 0.5},
    ),
    "reinforce_pp": (
        SMALL.model_copy(update={"gamma": 0.95}),
        4,
        512,
        4,
        {"advantage": "reinforce_pp"},
    ),
}


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


def _sb3_minibatch_loss(
    model: PPO, batch: tuple[torch.Tensor, ...], clip_range: float, logs: dict[str, float]
) -> torch.Tensor:
    """The loss of one minibatch as SB3's ``PPO.train`` writes it (no value clipping), on SB3's
    own ``evaluate_actions``, with its log entries."""
    observations, actions, old_log_prob, advantages, returns = batch
    values, log_prob, entropy = model.policy.evaluate_actions(observations, actions)
    values = values.flatten()
    if model.normalize_advantage and len(advantages) > 1:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    ratio = torch.exp(log_prob - old_log_prob)
    policy_loss_1 = advantages * ratio
    policy_loss_2 = advantages * torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
    policy_loss = -torch.min(policy_loss_1, policy_loss_2).mean()
    value_loss = F.mse_loss(returns, values)
    entropy_loss = -torch.mean(entropy)
    with torch.no_grad():
        log_ratio = log_prob - old_log_prob
        logs["kl"] = torch.mean((torch.exp(log_ratio) - 1) - log_ratio).item()
    logs["pg"], logs["value"], logs["entropy"] = (
        policy_loss.item(),
        value_loss.item(),
        entropy_loss.item(),
    )
    logs["clip"] = torch.mean((torch.abs(ratio - 1) > clip_range).float()).item()
    return policy_loss + model.ent_coef * entropy_loss + model.vf_coef * value_loss


@pytest.mark.parametrize("advantage", ["gae", "grpo"])
@pytest.mark.parametrize("normalize", [True, False])
def test_minibatch_loss_and_gradients_equal_sb3s_under_autograd(
    advantage: str, normalize: bool
) -> None:
    env = BatchedPortfolioVecEnv(_returns(7), n_envs=2, lookback=5, episode_len=20)
    model = make_ppo(SMALL.model_copy(update={"ent_coef": 0.03}), env, seed=3, advantage=advantage)
    model.normalize_advantage = normalize
    rng = np.random.default_rng(4)
    with torch.no_grad():  # move off the initial weights so every term has a gradient
        for p in model.policy.parameters():
            if p.requires_grad:
                p.add_(torch.from_numpy(rng.normal(0, 0.1, p.shape).astype(np.float32)))
    net, adam = model._numpy_parts()
    n, dim = 64, model.observation_space.shape[0]
    obs = rng.normal(0, 0.02, (n, dim)).astype(np.float32)
    actions = rng.normal(0, 1, (n, 7)).astype(np.float32)
    with torch.no_grad():
        _v, old_log_prob, _e = model.policy.evaluate_actions(
            torch.from_numpy(obs), torch.from_numpy(actions)
        )
    # Old log-probabilities off by up to 0.4 put ratios on both sides of the clip range.
    old = (old_log_prob.numpy() + rng.uniform(-0.4, 0.4, n)).astype(np.float32)
    advantages = rng.normal(0.1, 1, n).astype(np.float32)
    returns = rng.normal(0, 0.1, n).astype(np.float32)
    clip = 0.2
    got = net.loss_and_grads(
        (obs, actions, old, advantages, returns), clip, (0.03, model.vf_coef, normalize)
    )
    logs: dict[str, float] = {}
    batch = tuple(torch.from_numpy(x) for x in (obs, actions, old, advantages, returns))
    model.policy.zero_grad(set_to_none=True)
    loss = _sb3_minibatch_loss(model, batch, clip, logs)
    loss.backward()
    assert 0 < logs["clip"] < 1  # both sides of the clip range are exercised
    assert got[0] == pytest.approx(loss.item(), rel=1e-5)
    want_logs = (logs["pg"], logs["clip"], logs["value"], logs["entropy"])
    assert got[1:5] == pytest.approx(want_logs, rel=1e-5, abs=1e-9)
    assert got[5] == pytest.approx(logs["kl"], rel=1e-4, abs=1e-9)
    trained = [(p, adam.slot(p)) for p in model.policy.parameters() if p.requires_grad]
    assert trained and all(slot is not None for _, slot in trained)
    for p, slot in trained:
        want = p.grad.numpy()
        scale = float(np.abs(want).max()) or 1.0
        np.testing.assert_allclose(slot[1], want, rtol=0, atol=1e-5 * scale)


def _policy_pair(seed: int = 3) -> tuple[PPO, PPO]:
    """Two copies of one policy: SB3's PPO with torch's Adam, and NumpyPPO with NumpyAdam."""
    env = BatchedPortfolioVecEnv(_returns(7), n_envs=2, lookback=5, episode_len=20)
    reference = PPO("MlpPolicy", env, n_steps=64, batch_size=64, seed=seed, device="cpu")
    fast = make_ppo(SMALL, env, seed=seed)
    fast.policy.load_state_dict(reference.policy.state_dict())
    return reference, fast


def test_adam_step_equals_torchs_clipping_and_adam() -> None:
    # torch's clip_grad_norm_ and Adam.step on one copy, NumpyAdam's flat step on the other,
    # fed the same gradients (some large enough to be clipped).
    reference, fast = _policy_pair()
    adam = fast.policy.optimizer
    assert isinstance(adam, NumpyAdam)
    adam.pull()
    rng = np.random.default_rng(2)
    for step in range(6):
        scale = 10.0 ** (step % 3 - 1)
        for p_ref, p_fast in zip(
            reference.policy.parameters(), fast.policy.parameters(), strict=True
        ):
            g = rng.normal(0, scale, p_ref.shape).astype(np.float32)
            p_ref.grad = torch.from_numpy(g.copy())
            adam.slot(p_fast)[1][...] = g
        torch.nn.utils.clip_grad_norm_(reference.policy.parameters(), 0.5)
        reference.policy.optimizer.step()
        adam.clip_and_step(0.5)
        adam.push()
        for p_ref, p_fast in zip(
            reference.policy.parameters(), fast.policy.parameters(), strict=True
        ):
            np.testing.assert_allclose(p_fast.detach().numpy(), p_ref.detach().numpy(), atol=2e-7)
    want, got = reference.policy.optimizer.state_dict(), adam.state_dict()
    assert want["state"].keys() == got["state"].keys()
    for key, state in want["state"].items():
        assert float(got["state"][key]["step"]) == float(state["step"]) == 6.0
        for moment in ("exp_avg", "exp_avg_sq"):
            scale = float(state[moment].abs().max())
            np.testing.assert_allclose(
                got["state"][key][moment].numpy(), state[moment].numpy(), atol=1e-6 * scale
            )


def test_numpy_adam_steps_as_torchs_adam_under_sb3s_own_ppo() -> None:
    """NumpyAdam is a public optimizer class for SB3: its ``step`` takes the ``.grad`` SB3's
    own ``PPO.train`` leaves, and trains the policy torch's Adam trains."""
    env = BatchedPortfolioVecEnv(_returns(4), n_envs=2, lookback=5, episode_len=20)
    runs = {}
    for name, kwargs in {"torch": {}, "numpy": {"optimizer_class": NumpyAdam}}.items():
        model = PPO(
            "MlpPolicy",
            env,
            n_steps=64,
            batch_size=32,
            n_epochs=3,
            seed=4,
            device="cpu",
            policy_kwargs={**kwargs, "optimizer_kwargs": {"eps": 1e-5}},
        )
        model.learn(total_timesteps=256)
        runs[name] = {n: p.detach().numpy().copy() for n, p in model.policy.named_parameters()}
    for name, want in runs["torch"].items():
        scale = float(np.abs(want).max()) or 1.0
        assert np.abs(runs["numpy"][name] - want).max() <= RUN_RTOL * scale, name
    assert np.abs(runs["numpy"]["log_std"]).max() > 1e-4  # it trained


def test_numpy_adam_refuses_what_it_does_not_implement() -> None:
    params = [torch.nn.Parameter(torch.zeros(3))]
    with pytest.raises(ValueError, match="weight_decay, amsgrad"):
        NumpyAdam(params, weight_decay=0.1, amsgrad=True)
    with pytest.raises(TypeError, match="no option momentum"):
        NumpyAdam(params, momentum=0.9)
    adam = NumpyAdam(params)
    state = {
        "state": {0: {"step": torch.tensor(1.0), "exp_avg": torch.zeros(3)}},
        "param_groups": [{"params": [0, 1], "lr": 1e-3}],
    }
    with pytest.raises(ValueError, match="one group holding this optimizer's parameters"):
        adam.load_state_dict(state)


def test_a_setup_the_numpy_loops_do_not_train_is_refused() -> None:
    env = BatchedPortfolioVecEnv(_returns(4), n_envs=2, lookback=5, episode_len=20)
    with pytest.raises(ValueError, match=r"hidden layers other than Linear .* stable_baselines3"):
        NumpyPPO(
            "MlpPolicy",
            env,
            n_steps=64,
            batch_size=64,
            seed=1,
            device="cpu",
            policy_kwargs={"activation_fn": nn.ReLU},
        )
    with pytest.raises(ValueError, match="an optimizer other than Adam"):
        NumpyPPO(
            "MlpPolicy",
            env,
            n_steps=64,
            batch_size=64,
            device="cpu",
            policy_kwargs={"optimizer_class": torch.optim.SGD},
        )
    model = make_ppo(SMALL, env, seed=1)
    model.target_kl = 0.01  # set after construction: refused when training starts
    with pytest.raises(ValueError, match="a value clip range or a KL target"):
        model.learn(total_timesteps=128)


def test_a_trained_policy_saves_and_loads_with_its_optimizer(tmp_path: Path) -> None:
    result = train_ppo(_returns(3), SMALL, total_timesteps=256, n_envs=2, seed=1)
    assert type(result.model) is NumpyPPO
    path = save_policy(result.model, tmp_path / "policy")
    loaded = load_policy(path)
    assert type(loaded) is PPO  # SB3's own zip, loaded by SB3
    trained = dict(result.model.policy.named_parameters())
    for name, value in loaded.policy.named_parameters():
        assert torch.equal(value, trained[name])
    # The optimizer state saved is the one the numpy steps moved (its moments live in the
    # same memory): Adam has taken every minibatch step.
    state = loaded.policy.optimizer.state_dict()["state"]
    steps = {float(s["step"]) for s in state.values()}
    assert steps == {float(256 // 64 * SMALL.n_epochs)}
    assert all(float(s["exp_avg_sq"].abs().sum()) > 0 for s in state.values())
    trained_state = result.model.policy.optimizer.state_dict()["state"]
    for key, saved in state.items():
        for field in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(saved[field], trained_state[key][field]), (key, field)
    # Loaded as NumpyPPO, the optimizer reads torch's format back into its flat moments.
    again = NumpyPPO.load(path, device="cpu")
    assert isinstance(again.policy.optimizer, NumpyAdam)
    loaded_state = again.policy.optimizer.state_dict()["state"]
    assert loaded_state.keys() == trained_state.keys()
    for key, saved in loaded_state.items():
        for field in ("step", "exp_avg", "exp_avg_sq"):
            assert torch.equal(saved[field], trained_state[key][field]), (key, field)


def test_numpy_ppo_loads_what_sb3s_ppo_saved_and_trains_on(tmp_path: Path) -> None:
    env = BatchedPortfolioVecEnv(_returns(5), n_envs=2, lookback=5, episode_len=20)
    sb3 = PPO("MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=2, seed=2, device="cpu")
    sb3.learn(total_timesteps=128)
    model = NumpyPPO.load(save_policy(sb3, tmp_path / "sb3"), env=env, device="cpu")
    assert isinstance(model.policy.optimizer, NumpyAdam)
    assert type(model.rollout_buffer) is NumpyRolloutBuffer
    want, got = sb3.policy.optimizer.state_dict(), model.policy.optimizer.state_dict()
    assert got["state"].keys() == want["state"].keys()
    for key, state in want["state"].items():
        for field in ("step", "exp_avg", "exp_avg_sq"):
            assert torch.equal(got["state"][key][field], state[field]), (key, field)
    before = model.policy.log_std.detach().clone()
    model.learn(total_timesteps=128)
    assert not torch.equal(model.policy.log_std, before)
    assert {float(s["step"]) for s in model.policy.optimizer.state_dict()["state"].values()} == {
        8.0
    }


def test_numpy_ppo_builds_sb3s_adam_and_saves_it_as_sb3_would(tmp_path: Path) -> None:
    env = BatchedPortfolioVecEnv(_returns(6), n_envs=2, lookback=5, episode_len=20)
    model = make_ppo(SMALL, env, seed=3)
    reference = PPO("MlpPolicy", env, seed=3, device="cpu")
    assert type(model.policy.optimizer) is NumpyAdam
    assert type(reference.policy.optimizer) is torch.optim.Adam
    ours, sb3s = model.policy.optimizer.param_groups[0], reference.policy.optimizer.param_groups[0]
    assert {k: v for k, v in ours.items() if k not in ("params", "lr")} == {
        k: v for k, v in sb3s.items() if k not in ("params", "lr")
    }
    assert ours["eps"] == 1e-5
    assert "optimizer_class" not in model.policy_kwargs  # what saved files record
    model.learn(total_timesteps=128)
    loaded = PPO.load(save_policy(model, tmp_path / "policy"), device="cpu")
    assert type(loaded.policy.optimizer) is torch.optim.Adam


TRAIN_AND_SAVE = """
import sys, tempfile
import numpy as np
from alphaloop.knobs import TrialConfig
from alphaloop.rl_engine import save_policy
from alphaloop.rl_engine.ppo import train_ppo

returns = np.random.default_rng(0).normal(0.0003, 0.01, (400, 4))
config = TrialConfig(lookback=5, episode_len=20, rebal_freq=5, n_steps=64, batch_size=64)
result = train_ppo(returns_train=returns, config=config, total_timesteps=256, n_envs=2, seed=1)
with tempfile.TemporaryDirectory() as folder:
    save_policy(result.model, folder + "/policy")
print("torch._dynamo" in sys.modules)
"""


def test_training_and_saving_a_policy_never_imports_torchs_compiler() -> None:
    """``torch._dynamo`` takes over a second to import; a trial never needs it (NumpyAdam is no
    torch optimizer, whose construction imports it)."""
    done = subprocess.run(
        [sys.executable, "-c", TRAIN_AND_SAVE], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_stable_baselines3_is_required_at_a_range_the_installed_release_is_in() -> None:
    """NumpyPPO reaches SB3 through its public options and an on-policy algorithm's two methods
    only, so any release of the range will do; SB3's own PPO checks each one (these tests)."""
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    pins = [d for d in dependencies if re.match(r"stable[-_]baselines3\b", d)]
    assert len(pins) == 1
    spec = SpecifierSet(pins[0].removeprefix("stable-baselines3"))
    assert not any(s.operator == "==" for s in spec), "a range, not one exact release"
    assert stable_baselines3.__version__ in spec
