"""Array kernels shared by the single env, the batched VecEnv and the walk-forward.

Everything here works on a leading batch axis ``B`` and reduces only along trailing axes, so a
batch of one gives bit-for-bit the same numbers as row ``i`` of a batch of many. That is what
lets :class:`~alphaloop.rl_engine.vec_env.BatchedPortfolioVecEnv` be tested for exact equality
against independent :class:`~alphaloop.rl_engine.env.PortfolioEnv` copies.
"""

from __future__ import annotations

import numpy as np

from alphaloop.knobs import KNOBS

# Policy outputs are logits; +-10 already spans weight ratios of e^20, and clipping keeps exp()
# far from overflow whatever an untrained or diverging policy emits.
LOGIT_CLIP = 10.0
# Observed log returns are clipped to this box so the observation space has finite bounds
# (gymnasium and SB3 checkers warn on infinite ones). |log(1 + r)| > 5 means a one-day move of
# x148 or -99.3%: the clip never bites on real data, and rewards always use the raw returns.
LOG_RETURN_CLIP = 5.0


def knob_default(name: str) -> float:
    """The default of knob ``name``, as an int for integer knobs."""
    knob = KNOBS[name]
    return int(knob.default) if knob.is_int else float(knob.default)


def validate_returns(returns: object, min_rows: int, what: str = "returns") -> np.ndarray:
    """Checks a (T, N) array of simple daily returns and returns a read-only float64 copy.

    Raises:
        ValueError: not 2-D, fewer than 2 assets, fewer than ``min_rows`` rows, non-finite
            values, or a return at or below -100%.
    """
    try:
        arr = np.array(returns, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{what} must be a numeric (T, N) array: {err}") from None
    if arr.ndim != 2:
        raise ValueError(f"{what} must be a 2-D (T days, N assets) array, got shape {arr.shape}")
    n_rows, n_assets = arr.shape
    if n_assets < 2:
        raise ValueError(f"{what} must have at least 2 asset columns, got {n_assets}")
    if n_rows < min_rows:
        raise ValueError(
            f"{what} has {n_rows} rows but needs at least {min_rows} (lookback + episode_len)"
        )
    bad = ~np.isfinite(arr)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(
            f"{what} must be finite; found {arr[row, col]} at row {row}, column {col} "
            f"({int(bad.sum())} non-finite values in all)"
        )
    if (arr <= -1.0).any():
        row, col = np.argwhere(arr <= -1.0)[0]
        raise ValueError(
            f"{what} are simple returns and must be > -1; found {arr[row, col]} at row {row}, "
            f"column {col}"
        )
    arr.setflags(write=False)
    return arr


def check_params(
    lookback: int,
    episode_len: int,
    rebal_freq: int,
    turnover_cost_bps: float,
    vol_penalty: float,
) -> None:
    """Rejects env parameters no episode can be built from (knob bounds are enforced upstream)."""
    for name, value in (
        ("lookback", lookback),
        ("episode_len", episode_len),
        ("rebal_freq", rebal_freq),
    ):
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    for name, value in (("turnover_cost_bps", turnover_cost_bps), ("vol_penalty", vol_penalty)):
        if not np.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


def observable_log_returns(returns: np.ndarray) -> np.ndarray:
    """The float32 log returns an observation is cut from (computed once per data set)."""
    logret = np.clip(np.log1p(returns), -LOG_RETURN_CLIP, LOG_RETURN_CLIP).astype(np.float32)
    logret.setflags(write=False)
    return logret


def softmax_weights(logits: np.ndarray) -> np.ndarray:
    """Long-only weights from logits along the last axis (clipped, max-shifted softmax)."""
    z = np.clip(np.asarray(logits, dtype=np.float64), -LOGIT_CLIP, LOGIT_CLIP)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def hold(weights: np.ndarray, window: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Holds ``weights`` (B, N) through ``window`` (B, H, N) of simple returns, letting them drift.

    Days a row does not hold for (a short last step) are passed as zero returns: they leave
    the portfolio value unchanged exactly, so they add nothing to any sum below.

    Returns:
        ``daily`` (B, H) portfolio simple returns, ``gross`` (B,) growth factor over the window
        and ``drifted`` (B, N) weights at the end of the window.
    """
    growth = 1.0 + window
    # Cumulative growth per asset. A loop over the (at most 10) days rather than
    # np.cumprod(axis=1), which is ~8x slower on this strided axis; the products are the same.
    for k in range(1, growth.shape[1]):
        growth[:, k] *= growth[:, k - 1]
    # Portfolio value after each day, per unit invested at the start: V_k = sum_i w_i G_{k,i}.
    # Ratios of consecutive values are the daily returns of the drifting weights.
    values = (weights[:, None, :] * growth).sum(axis=-1)
    start = weights.sum(axis=-1)
    previous = np.concatenate([start[:, None], values[:, :-1]], axis=1)
    daily = values / previous - 1.0
    drifted = weights * growth[:, -1, :] / values[:, -1:]
    return daily, values[:, -1] / start, drifted


def step_reward(
    target: np.ndarray,
    drifted_before: np.ndarray,
    window: np.ndarray,
    cost_rate: float,
    vol_penalty: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One rebalance-and-hold step for a batch: reward, turnover, gross return, drifted weights.

    ``reward = log(gross) - cost_rate * turnover - vol_penalty * sum(min(daily, 0) ** 2)``,
    with ``turnover = sum |target - drifted_before|`` and ``cost_rate`` per unit turnover.
    """
    turnover = np.abs(target - drifted_before).sum(axis=-1)
    daily, gross, drifted = hold(target, window)
    downside = np.square(np.minimum(daily, 0.0)).sum(axis=-1)
    reward = np.log(gross) - cost_rate * turnover - vol_penalty * downside
    return reward, turnover, gross - 1.0, drifted
