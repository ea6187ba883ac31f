"""The held-out pairs of a DPO run and what they measure.

A stable fifth of the pairs is held out, chosen by a hash of each pair's origin key, so a later
run never trains on what an earlier run held out. Preference accuracy on them is the share
whose implicit reward ``beta * (log p_policy(y | x) - log p_ref(y | x))`` is higher for
``chosen`` than for ``rejected``, a tie counting one half. It is reported with its Wilson score
interval, and not at all on fewer than a minimum number of held-out pairs: on three pairs an
accuracy of 0.33 or 1.00 is what chance gives, and the interval says so (0.06-0.79 at best).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

from alphaloop.exceptions import InvalidRequest
from alphaloop.journal.preferences import PreferenceRecord

HELDOUT_BUCKETS = 5  # one pair in five is held out
MIN_HELDOUT = 20  # the default of ALPHALOOP_DPO_MIN_HELDOUT
Z_95 = 1.959963984540054  # two-sided 95% normal quantile


def _is_heldout(origin_key: str) -> bool:
    digest = hashlib.sha256(origin_key.encode()).digest()
    return digest[0] % HELDOUT_BUCKETS == 0


def split_pairs(
    prefs: Sequence[PreferenceRecord],
) -> tuple[list[PreferenceRecord], list[PreferenceRecord]]:
    """``(train, heldout)``: a stable fifth held out, at least one pair on each side.

    Raises:
        ValueError: fewer than two pairs (nothing to train on and measure with).
    """
    if len(prefs) < 2:
        raise ValueError(f"DPO needs at least 2 labelled pairs, found {len(prefs)}")
    train = [p for p in prefs if not _is_heldout(p.origin_key)]
    held = [p for p in prefs if _is_heldout(p.origin_key)]
    if not held:
        held, train = train[-1:], train[:-1]
    if not train:
        train, held = held[:1], held[1:]
    return train, held


def check_heldout(n_heldout: int, n_total: int, minimum: int) -> None:
    """Raises :class:`InvalidRequest` when ``n_heldout < minimum``, saying how many pairs a run
    needs (about five times the minimum, since a fifth is held out)."""
    if n_heldout >= minimum:
        return
    raise InvalidRequest(
        f"{n_heldout} held-out pair(s) of {n_total}: a preference accuracy needs at least "
        f"{minimum} (ALPHALOOP_DPO_MIN_HELDOUT), so about {minimum * HELDOUT_BUCKETS} labelled "
        f"pairs in all (one in {HELDOUT_BUCKETS} is held out); on {n_heldout} the 95% interval "
        f"of an accuracy of 0.5 is {_interval_text(0.5, n_heldout)}. Extract pairs from more "
        "sessions (`alphaloop prefs extract`), or lower the minimum knowingly"
    )


def wilson_interval(accuracy: float, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``accuracy`` observed on ``n`` trials (ties
    counted one half make it a fraction of a whole count; the interval is the same formula).

    Raises:
        ValueError: ``n < 1`` or an accuracy outside [0, 1].
    """
    if n < 1:
        raise ValueError(f"an interval needs at least one held-out pair, got n={n}")
    if not 0.0 <= accuracy <= 1.0:
        raise ValueError(f"accuracy must be within [0, 1], got {accuracy}")
    z2 = z * z
    centre = (accuracy + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(accuracy * (1 - accuracy) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def _interval_text(accuracy: float, n: int) -> str:
    if n < 1:
        return "undefined"
    lo, hi = wilson_interval(accuracy, n)
    return f"{lo:.2f}-{hi:.2f}"


def preference_accuracy(
    ref: tuple[list[float], list[float]], policy: tuple[list[float], list[float]], beta: float
) -> tuple[float, float]:
    """``(accuracy, mean margin)`` of implicit rewards; a tie counts one half."""
    (ref_c, ref_r), (pol_c, pol_r) = ref, policy
    margins = [
        beta * ((pc - rc) - (pr - rr))
        for rc, rr, pc, pr in zip(ref_c, ref_r, pol_c, pol_r, strict=True)
    ]
    if not margins:
        return math.nan, math.nan
    wins = sum(1.0 if m > 1e-12 else 0.5 if abs(m) <= 1e-12 else 0.0 for m in margins)
    return wins / len(margins), sum(margins) / len(margins)
