"""Checking a person's verdict on a portfolio decision before it is journaled."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from alphaloop.exceptions import InvalidRequest
from alphaloop.journal.preferences import Verdict

# Rounding slack on "sum <= 1": weights typed by hand (0.333 x 3) must not fail on float noise.
SUM_TOLERANCE = 1e-9


def check_verdict(
    verdict: str, weights: Mapping[str, float] | None, symbols: Sequence[str]
) -> tuple[Verdict, dict[str, float] | None]:
    """The verdict and the override weights as they will be journaled.

    Override weights must name only the decision's symbols, be finite and non-negative, and
    sum to at most 1 (the rest is cash); a symbol left out gets weight 0.

    Raises:
        InvalidRequest: an unknown verdict, weights with a verdict other than ``override`` (or
            none with it), or weights breaking a rule above (the message names the culprit).
    """
    try:
        kind = Verdict(verdict)
    except ValueError:
        raise InvalidRequest(
            f"unknown verdict {verdict!r}; choose one of {', '.join(v.value for v in Verdict)}"
        ) from None
    if kind != Verdict.override:
        if weights is not None:
            raise InvalidRequest(f"--weights go with 'override', not with {kind.value!r}")
        return kind, None
    if not weights:
        raise InvalidRequest(
            "an override needs the weights to hold instead: --weights AAPL=0.3,..."
        )
    known = set(symbols)
    unknown = sorted(set(weights) - known)
    if unknown:
        raise InvalidRequest(
            f"unknown symbol(s) {', '.join(unknown)} in the override; the decision trades "
            f"{', '.join(symbols)}"
        )
    for s, w in weights.items():
        if not isinstance(w, int | float) or not math.isfinite(w):
            raise InvalidRequest(f"override weight of {s} is not a finite number: {w!r}")
        if w < 0:
            raise InvalidRequest(
                f"override weight of {s} is negative ({w:g}); weights are long-only"
            )
    total = float(sum(weights.values()))
    if total > 1 + SUM_TOLERANCE:
        raise InvalidRequest(
            f"override weights sum to {total:.6g} > 1; the book cannot hold more than its equity"
        )
    return kind, {s: float(w) for s, w in weights.items()}


def parse_weights(text: str) -> dict[str, float]:
    """``AAPL=0.3,MSFT=0.2`` as a dict.

    Raises:
        InvalidRequest: an item without ``=``, a weight that is not a number, a repeated symbol.
    """
    weights: dict[str, float] = {}
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise InvalidRequest(f"--weights takes SYMBOL=WEIGHT items, got {item!r}")
        try:
            number = float(value)
        except ValueError:
            raise InvalidRequest(f"weight of {name} is not a number: {value.strip()!r}") from None
        if name in weights:
            raise InvalidRequest(f"{name} is given twice in --weights")
        weights[name] = number
    if not weights:
        raise InvalidRequest(f"no weights in {text!r}; write AAPL=0.3,MSFT=0.2")
    return weights
