"""LeanPPO against SB3's own PPO, the oracle: the same policy bit for bit, and every piece of it.

The lean loops rest on three claims, each pinned here: the policy's Gaussian computed without
torch's distribution objects gives the same numbers and gradients; Adam and gradient clipping
on one buffer (elementwise kernels over a long vector) equal torch's loop over the parameters;
and so a whole training run, rollouts and updates, ends with the same parameters, optimizer
state, curve and logged losses.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from stable_baselines3 import PPO

from alphaloop.knobs import TrialConfig
from alphaloop.rl_engine import BatchedPortfolioVecEnv, LeanPPO, load_policy, save_policy
from alphaloop.rl_engine import lean as lean_module
from alphaloop.rl_engine import ppo as ppo_module
from alphaloop.rl_engine.ppo import TrainResult, make_ppo, train_ppo

SMALL = TrialConfig(lookback=5, episode_len=20, rebal_freq=5, n_steps=64, batch_size=64, n_epochs=3)


def _returns(n_assets: int, seed: int = 11) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(0.0003, 0.01 + 0.004 * np.arange(n_assets), (400, n_assets))


def _train(trainer: type[PPO], monkeypatch: pytest.MonkeyPatch, **kwargs: object) -> TrainResult:
    monkeypatch.setattr(ppo_module, "PPO_CLASS", trainer)
    result = train_ppo(**kwargs)  # type: ignore[arg-type]
    assert type(result.model) is trainer
    return result


def _assert_same_adam_state(a: torch.optim.Optimizer, b: torch.optim.Optimizer) -> None:
    sa, sb = a.state_dict()["state"], b.state_dict()["state"]
    assert sa.keys() == sb.keys()
    for key in sa:
        for field in ("step", "exp_avg", "exp_avg_sq"):
            assert torch.equal(sa[key][field], sb[key][field]), (key, field)


def _assert_same_training(a: TrainResult, b: TrainResult) -> None:
    pa, pb = dict(a.model.policy.named_parameters()), dict(b.model.policy.named_parameters())
    assert pa.keys() == pb.keys()
    for name in pa:
        assert torch.equal(pa[name], pb[name]), name
    _assert_same_adam_state(a.model.policy.optimizer, b.model.policy.optimizer)
    assert a.curve == b.curve
    assert a.timesteps == b.timesteps
    la, lb = a.model.logger.name_to_value, b.model.logger.name_to_value
    assert {k: la[k] for k in la if k.startswith("train/")} == {
        k: lb[k] for k in lb if k.startswith("train/")
    }


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


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_lean_ppo_trains_the_same_policy_bit_for_bit(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, n_assets, budget, n_envs, extra = CASES[case]
    kwargs = {
        "returns_train": _returns(n_assets),
        "config": config,
        "total_timesteps": budget,
        "n_envs": n_envs,
        "seed": 5,
        **extra,
    }
    reference = _train(PPO, monkeypatch, **kwargs)
    lean = _train(LeanPPO, monkeypatch, **kwargs)
    _assert_same_training(reference, lean)


def _model(n_assets: int = 6, **update: object) -> PPO:
    env = BatchedPortfolioVecEnv(_returns(n_assets), n_envs=2, lookback=5, episode_len=20)
    return make_ppo(SMALL.model_copy(update=update), env, seed=3)


def test_lean_forward_samples_and_scores_as_sb3s_policy() -> None:
    policy = _model().policy
    obs = torch.from_numpy(np.random.default_rng(0).normal(0, 0.02, (5, 36)).astype(np.float32))
    with torch.no_grad():
        torch.manual_seed(9)
        reference = policy(obs)
        torch.manual_seed(9)
        lean = lean_module._act(policy, obs)
    for want, got in zip(reference, lean, strict=True):
        assert torch.equal(want, got)


def test_lean_evaluate_actions_has_sb3s_values_and_gradients() -> None:
    policy = _model().policy
    rng = np.random.default_rng(1)
    obs = torch.from_numpy(rng.normal(0, 0.02, (64, 36)).astype(np.float32))
    actions = torch.from_numpy(rng.normal(0, 1, (64, 6)).astype(np.float32))
    grads = []
    outputs = []
    for evaluate in (
        policy.evaluate_actions,
        lambda o, a: lean_module._evaluate_actions(policy, o, a),
    ):
        policy.zero_grad(set_to_none=True)
        values, log_prob, entropy = evaluate(obs, actions)
        (values.mean() + log_prob.mean() + 0.3 * entropy.mean()).backward()
        outputs.append((values, log_prob, entropy))
        grads.append([p.grad.clone() for p in policy.parameters()])
    for want, got in zip(*outputs, strict=True):
        assert torch.equal(want, got)
    for want, got in zip(*grads, strict=True):
        assert torch.equal(want, got)


def test_one_buffer_adam_equals_torchs_per_parameter_adam() -> None:
    # Two copies of one policy: torch's clip_grad_norm_ and Adam.step on one, the one-buffer
    # step on the other, fed the same gradients (some large enough to be clipped).
    reference, lean = _model(n_assets=7), _model(n_assets=7)
    lean.policy.load_state_dict(reference.policy.state_dict())
    flat = lean_module._FlatAdam(lean.policy.optimizer)
    rng = np.random.default_rng(2)
    for step in range(6):
        scale = 10.0 ** (step % 3 - 1)
        for p_ref, p_lean in zip(
            reference.policy.parameters(), lean.policy.parameters(), strict=True
        ):
            grad = torch.from_numpy(rng.normal(0, scale, p_ref.shape).astype(np.float32))
            p_ref.grad, p_lean.grad = grad.clone(), grad.clone()
        torch.nn.utils.clip_grad_norm_(reference.policy.parameters(), 0.5)
        reference.policy.optimizer.step()
        assert flat.step(0.5)
        for p_ref, p_lean in zip(
            reference.policy.parameters(), lean.policy.parameters(), strict=True
        ):
            assert torch.equal(p_ref, p_lean)
    assert flat.intact()


def test_a_setup_the_lean_loops_do_not_cover_runs_sb3s(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model()
    assert lean_module.lean_supported(model)
    model.target_kl = 0.01
    assert not lean_module.lean_supported(model)
    calls: list[str] = []
    original = PPO.train

    def sb3_train(self: PPO) -> None:
        calls.append("sb3")
        original(self)

    monkeypatch.setattr(PPO, "train", sb3_train)
    model.learn(total_timesteps=128)
    assert calls == ["sb3"]


def test_a_saved_lean_policy_loads_with_the_same_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _train(
        LeanPPO,
        monkeypatch,
        returns_train=_returns(3),
        config=SMALL,
        total_timesteps=256,
        n_envs=2,
        seed=1,
    )
    path = save_policy(result.model, tmp_path / "policy")
    loaded = load_policy(path)
    trained = dict(result.model.policy.named_parameters())
    for name, value in loaded.policy.named_parameters():
        assert torch.equal(value, trained[name])


def test_the_lean_loops_build_sb3s_adam_and_save_it_as_sb3_would(tmp_path: Path) -> None:
    model = _model()
    reference = PPO("MlpPolicy", model.env, seed=3, device="cpu")
    assert type(model.policy.optimizer) is lean_module.EagerAdam
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
    _assert_same_adam_state(model.policy.optimizer, loaded.policy.optimizer)


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
    """``torch._dynamo`` takes a second to import; a trial never needs it (``EagerAdam``)."""
    done = subprocess.run(
        [sys.executable, "-c", TRAIN_AND_SAVE], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
