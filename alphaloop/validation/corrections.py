"""Corrections of many p-values at once, each as its paper writes it (pure functions of the
p-values, importing nothing of alphaloop):

- :func:`holm` and :func:`holm_adjusted` (Holm 1979, "A simple sequentially rejective multiple
  test procedure", Scand. J. Statist. 6: 65-70): the family-wise error rate at ``alpha`` for
  any dependence between the tests. Sort the p-values; reject while
  ``p_(i) <= alpha / (m - i + 1)``.
- :func:`benjamini_hochberg` (Benjamini & Hochberg 1995, "Controlling the false discovery rate",
  JRSS B 57: 289-300): the expected share of false discoveries among the rejections at ``q``
  (for independent or positively dependent tests). Reject the ``k`` smallest, ``k`` the largest
  ``i`` with ``p_(i) <= i q / m``.
- :func:`benjamini_yekutieli` (Benjamini & Yekutieli 2001, "The control of the false discovery
  rate in multiple testing under dependency", Ann. Statist. 29(4)): the same at ``q / c(m)``,
  ``c(m) = 1 + 1/2 + ... + 1/m``, which holds the rate under any dependence. The preference
  pairs' tests share trials (a pair's two configs each sit in other pairs, some with the
  opposite sign), so they are not known to be positively dependent.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["benjamini_hochberg", "benjamini_yekutieli", "holm", "holm_adjusted"]


def _p_values(p_values: Sequence[float], level: float, name: str) -> np.ndarray:
    p = np.asarray(p_values, dtype=float).ravel()
    if not 0.0 < level < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {level!r}")
    if not np.all((p >= 0.0) & (p <= 1.0)):
        raise ValueError("p-values must be numbers in [0, 1]")
    return p


def holm(p_values: Sequence[float], alpha: float = 0.05) -> list[bool]:
    """Which hypotheses Holm's step-down procedure rejects at family-wise level ``alpha``, in
    the order given.

    Raises:
        ValueError: a p-value outside [0, 1] or ``alpha`` outside (0, 1).
    """
    p = _p_values(p_values, alpha, "alpha")
    m = p.size
    rejected = np.zeros(m, dtype=bool)
    for step, i in enumerate(np.argsort(p, kind="stable")):
        if p[i] > alpha / (m - step):
            break
        rejected[i] = True
    return rejected.tolist()


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm's adjusted p-values, in the order given: hypothesis i is rejected at family-wise
    level ``alpha`` by :func:`holm` exactly when its adjusted p-value is at most ``alpha``
    (``max over j <= rank(i) of min(1, (m - j + 1) p_(j))``).

    Raises:
        ValueError: a p-value outside [0, 1].
    """
    p = _p_values(p_values, 0.5, "alpha")
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted.tolist()


def benjamini_hochberg(p_values: Sequence[float], q: float = 0.10) -> list[bool]:
    """Which hypotheses the Benjamini-Hochberg step-up procedure rejects at false discovery
    rate ``q``, in the order given.

    Raises:
        ValueError: a p-value outside [0, 1] or ``q`` outside (0, 1).
    """
    p = _p_values(p_values, q, "q")
    m = p.size
    order = np.argsort(p, kind="stable")
    below = np.nonzero(p[order] <= q * np.arange(1, m + 1) / m)[0]
    rejected = np.zeros(m, dtype=bool)
    if below.size:
        rejected[order[: below[-1] + 1]] = True
    return rejected.tolist()


def benjamini_yekutieli(p_values: Sequence[float], q: float = 0.10) -> list[bool]:
    """Which hypotheses the Benjamini-Yekutieli procedure rejects at false discovery rate
    ``q`` under any dependence, in the order given: Benjamini-Hochberg at ``q / c(m)``.

    Raises:
        ValueError: a p-value outside [0, 1] or ``q`` outside (0, 1).
    """
    p = _p_values(p_values, q, "q")
    harmonic = float(np.sum(1.0 / np.arange(1, p.size + 1))) if p.size else 1.0
    return benjamini_hochberg(p, q / harmonic) if p.size else []
