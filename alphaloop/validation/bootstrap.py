"""Time-series bootstraps over whole days in blocks, and their block lengths.

- :func:`block_length` is Politis & White's (2004, Econometric Reviews 23(1)) automatic block
  length, with Patton, Politis & White's (2009) correction of its stationary-bootstrap
  constant: a flat-top lag window over the autocovariances up to the last significant lag
  gives ``b = (2 G^2 / D) ** (1/3) T ** (1/3)``, ``D = 4/3 g(0)^2`` for the circular block
  bootstrap and ``2 g(0)^2`` for the stationary one. Short for noise, long for persistence.
- :func:`circular_block_sums` is the table the circular block bootstrap (Politis & Romano
  1992) draws from: the sum of the ``b`` consecutive days starting at each day, wrapping at the
  end, so no day is less likely than another; a resample is ``T // b`` of them.
- :func:`stationary_counts` draws the stationary bootstrap (Politis & Romano 1994, JASA
  89(428)): blocks of geometric length with mean ``b``, wrapping; returned as how often each day
  is drawn, so a statistic of sums over the resampled days is one matrix product.

Each takes a :class:`numpy.random.Generator`, so a caller that seeds it from the data gets the
same answer for the same series every time (a resumed session judges a trial as it did).
"""

from __future__ import annotations

import hashlib
import math
from typing import Literal

import numpy as np

__all__ = [
    "block_length",
    "circular_block_sums",
    "data_rng",
    "stationary_counts",
]


def data_rng(*series: np.ndarray) -> np.random.Generator:
    """A generator seeded by the bytes of ``series``: the same data always draws the same
    resamples."""
    h = hashlib.blake2b(digest_size=8)
    for s in series:
        h.update(np.ascontiguousarray(s, dtype=float).tobytes())
    return np.random.default_rng(int.from_bytes(h.digest(), "little"))


def _flat_top(t: np.ndarray) -> np.ndarray:
    t = np.abs(t)
    return np.where(t <= 0.5, 1.0, np.where(t <= 1.0, 2.0 * (1.0 - t), 0.0))


def block_length(u: np.ndarray, kind: Literal["circular", "stationary"] = "circular") -> float:
    """Politis & White's optimal (expected) block length for the mean of the series ``u``
    (see the module docstring), between 1 and ``min(3 sqrt(T), T / 3)``."""
    x = np.asarray(u, dtype=float).ravel()
    n = x.size
    x = x - x.mean()
    b_max = math.ceil(min(3.0 * math.sqrt(n), n / 3.0))
    k_n = max(5, math.ceil(math.sqrt(math.log10(n))))
    m_max = min(math.ceil(math.sqrt(n)) + k_n, n - 1)
    acov = np.array([x[k:] @ x[: n - k] / n for k in range(m_max + 1)])
    if acov[0] <= 0:
        return 1.0
    rho = acov[1:] / acov[0]
    threshold = 2.0 * math.sqrt(math.log10(n) / n)
    insignificant = np.abs(rho) < threshold
    m_hat = m_max - k_n
    for m in range(m_max - k_n + 1):  # the first lag after which k_n in a row are negligible
        if insignificant[m : m + k_n].all():
            m_hat = m
            break
    big_m = min(2 * m_hat, m_max)
    if big_m == 0:
        return 1.0
    lags = np.arange(-big_m, big_m + 1)
    weights = _flat_top(lags / big_m)
    r = acov[np.abs(lags)]
    g = float(np.sum(weights * np.abs(lags) * r))
    g0 = float(np.sum(weights * r))
    d = (4.0 / 3.0 if kind == "circular" else 2.0) * g0**2
    if d <= 0:
        return 1.0
    b = (2.0 * g**2 / d) ** (1.0 / 3.0) * n ** (1.0 / 3.0)
    return float(min(max(b, 1.0), b_max))


def circular_block_sums(v: np.ndarray, block: int) -> np.ndarray:
    """The sum of the ``block`` consecutive rows of ``v`` (T, k) starting at each of its T rows,
    wrapping at the end: the circular block bootstrap's blocks (a resample draws ``T // block``
    of them, each start equally likely)."""
    wrapped = np.concatenate([v, v[:block]])
    prefix = np.concatenate([np.zeros((1, v.shape[1])), np.cumsum(wrapped, axis=0)])
    return prefix[block : block + v.shape[0]] - prefix[: v.shape[0]]


def stationary_counts(n: int, mean_block: float, reps: int, rng: np.random.Generator) -> np.ndarray:
    """``reps`` stationary-bootstrap resamples of ``n`` days as counts: row r says how many
    times resample r drew each day (each row sums to ``n``)."""
    p = min(1.0 / max(mean_block, 1.0), 1.0)
    new = rng.random((reps, n)) < p
    new[:, 0] = True
    starts = rng.integers(0, n, size=(reps, n))
    t = np.arange(n)
    # Position of the latest block start at or before t, and that block's first day.
    last = np.maximum.accumulate(np.where(new, t, 0), axis=1)
    first = np.take_along_axis(starts, last, axis=1)
    days = (first + t - last) % n
    flat = (days + n * np.arange(reps)[:, None]).ravel()
    return np.bincount(flat, minlength=reps * n).reshape(reps, n)
