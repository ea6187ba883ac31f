"""f_A, the allocator stage: target weights of the selected assets.

Three allocators: equal weight, the rolling Mean-CVaR solve of ``cufolio_only`` trials and the
deterministic PPO policy of ``ppo_only``/``unified`` trials. The two stateful ones hand their
sequential state back (the scenario generator, the previous solution for the turnover penalty,
the policy's own drifting weights), so one day decided in a fresh process equals the same day
decided inside a backtest loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from alphaloop.exceptions import TrialCrashed
from alphaloop.pipeline.state import Day, generator, generator_state
from alphaloop.portfolio_opt import bootstrap_scenarios, solve_mean_cvar

__all__ = ["EqualWeight", "MeanCvarAllocator", "PpoAllocator", "drifted"]

# The minimum-CVaR book is the Mean-CVaR solve with a risk aversion so large the mean term is
# noise (the evaluator's ``risk_aversion=None``).
MIN_CVAR_RISK_AVERSION = 1e6


def drifted(weights: np.ndarray, returns: np.ndarray) -> np.ndarray:
    """Weights after holding ``weights`` through the rows of ``returns``."""
    growth = np.prod(1.0 + returns, axis=0) * weights
    return growth / growth.sum()


def _scatter(weights: np.ndarray, mask: np.ndarray) -> np.ndarray:
    if mask.all():
        return weights
    out = np.zeros(mask.shape[0])
    out[mask] = weights
    return out


@dataclass(frozen=True)
class EqualWeight:
    """1/k on each of the k selected assets."""

    name: str = "allocate"

    def allocate(self, day: Day, selected: np.ndarray, state: Any) -> tuple[np.ndarray, Any]:
        k = int(selected.sum())
        return _scatter(np.full(k, 1.0 / k), selected), None


@dataclass(frozen=True)
class MeanCvarAllocator:
    """A Mean-CVaR solve on ``n_scenarios`` block-bootstrapped ``hold_days``-horizon returns
    of the trailing ``scenario_window`` days, with a turnover penalty of ``cost_bps`` against
    the previous solution drifted to today (minimum CVaR, no penalty, when ``risk_aversion``
    is None). State: the generator and the previous solution with the row it was set on."""

    alpha: float
    max_weight: float
    n_scenarios: int
    hold_days: int
    scenario_window: int
    cost_bps: float
    risk_aversion: float | None
    seed: int
    name: str = "allocate"

    def allocate(
        self, day: Day, selected: np.ndarray, state: dict[str, Any] | None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        rng = generator(state["rng"] if state else None, self.seed)
        t = day.t
        every = selected.all()
        history = day.history[max(0, t - self.scenario_window) : t]
        scenarios = bootstrap_scenarios(
            history if every else history[:, selected], self.hold_days, self.n_scenarios, rng
        )
        k = int(selected.sum())
        cap = self.max_weight if every else max(self.max_weight, 1.0 / k)
        if self.risk_aversion is None:
            sol = solve_mean_cvar(scenarios, self.alpha, cap, risk_aversion=MIN_CVAR_RISK_AVERSION)
        else:
            prev = None
            if state and state.get("weights") is not None:
                prev = drifted(np.asarray(state["weights"]), day.history[state["t"] : t])
                if not every:
                    prev = prev[selected]
                    prev = prev / prev.sum() if prev.sum() > 0 else None
            sol = solve_mean_cvar(
                scenarios,
                self.alpha,
                cap,
                risk_aversion=self.risk_aversion,
                prev_weights=prev,
                turnover_cost=self.cost_bps / 1e4,
            )
        weights = _scatter(np.asarray(sol.weights, dtype=float), selected)
        return weights, {"rng": generator_state(rng), "weights": weights.tolist(), "t": t}


@dataclass(frozen=True)
class PpoAllocator:
    """The deterministic (mean) action of a trained PPO policy, as the evaluator's walk-forward
    computes it: the policy observes the log returns of the last ``lookback`` days and its own
    previous target drifted since it was set (equal weights on the first day). The policy sees
    every asset it was trained on; unselected assets are dropped and the rest renormalised.
    State: the previous target and the row it was set on."""

    model: Any  # stable_baselines3 PPO or its ActorCriticPolicy
    lookback: int
    rebal_freq: int
    name: str = "allocate"

    def allocate(
        self, day: Day, selected: np.ndarray, state: dict[str, Any] | None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        import torch

        # The env's own observation, drift and softmax rules, the ones ``policy_weights`` uses:
        # what was trained is what is decided, bit for bit.
        from alphaloop.rl_engine.env_core import hold, observable_log_returns, softmax_weights

        policy = getattr(self.model, "policy", self.model)
        t, n = day.t, day.history.shape[1]
        if t < self.lookback:
            raise ValueError(f"the policy needs {self.lookback} days of returns, got {t}")
        if state is None:
            weights = np.full(n, 1.0 / n)
        else:
            held = min(self.rebal_freq, t - state["t"])
            window = np.zeros((1, self.rebal_freq, n))
            window[0, :held] = day.history[state["t"] : state["t"] + held]
            weights = hold(np.asarray(state["target"])[None, :], window)[2][0]
        log_returns = observable_log_returns(day.history[t - self.lookback : t])
        obs = np.concatenate([log_returns.ravel(), weights.astype(np.float32)])
        policy.set_training_mode(False)
        with torch.no_grad():
            logits = policy.get_distribution(torch.from_numpy(obs)[None, :]).mode().numpy()
        target = softmax_weights(logits)[0]
        if not np.all(np.isfinite(target)):
            raise TrialCrashed(
                "the PPO policy produced non-finite weights on the evaluation window "
                "(a diverged policy: retrain it)"
            )
        new_state = {"target": target.tolist(), "t": t}
        if selected.all():
            return target, new_state
        kept = np.where(selected, target, 0.0)
        return kept / kept.sum(), new_state
