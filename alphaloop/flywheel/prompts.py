"""The prompt and the answers of a preference pair, as text a language model reads and writes.

A portfolio decision's prompt states what the portfolio manager knew (book, date, policy, the
symbols and the weights held before it); an answer is a weight vector as compact JSON. A
research pair's prompt is the proposal prompt of the session's state (see
:mod:`.research`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from alphaloop.flywheel.outcome import HORIZON
from alphaloop.journal.preferences import DecisionView

WEIGHT_DECIMALS = 4


def weights_text(weights: Mapping[str, float] | None) -> str:
    """Weights as compact JSON, symbols sorted, zero weights left out (cash is the rest)."""
    clean = {s: round(float(w), WEIGHT_DECIMALS) for s, w in sorted((weights or {}).items())}
    return json.dumps({s: w for s, w in clean.items() if w}, separators=(",", ":"))


def decision_prompt(decision: DecisionView) -> str:
    """What the model is asked for a portfolio decision: the same facts the pipeline had."""
    policy = f"policy #{decision.policy_id}" if decision.policy_id is not None else "no policy"
    return (
        f"Portfolio decision for book {decision.book!r} on {decision.date} ({policy}).\n"
        f"Universe: {', '.join(decision.symbols)}.\n"
        f"Weights held before the decision: {weights_text(decision.pre_weights)}.\n"
        f"Propose the target weights to hold for the next {HORIZON} trading days as a JSON "
        "object {symbol: weight}: long-only, summing to at most 1 (the rest is cash)."
    )
