"""Preference pairs from portfolio decisions: the T+5 outcome decides which side was better.

The proposed weights (``target_weights``) are compared with the alternative the verdict names:
the pre-decision weights for ``approve`` and ``reject`` (what the book would have held had the
decision not been made), the person's weights for ``override``. The side with the higher net
T+5 return is ``chosen`` whatever the person said: the verdict names the alternative, the
market decides. A gap below ``min_gap`` is noise: the pair is kept with ``labelled = 0``,
never forced one way.
"""

from __future__ import annotations

import pandas as pd

from alphaloop.flywheel.outcome import t5_outcome
from alphaloop.flywheel.pairs import PairDraft
from alphaloop.flywheel.prompts import decision_prompt, weights_text
from alphaloop.journal.preferences import DecisionView, PreferenceSource, Verdict


def origin_key(decision_id: int) -> str:
    return f"pm:decision:{decision_id}"


def _alternative_weights(decision: DecisionView) -> dict[str, float]:
    """What the proposed weights are judged against (see the module docstring)."""
    if decision.verdict == Verdict.override:
        return dict(decision.override_weights or {})
    return dict(decision.pre_weights or {})


def label_decision(
    decision: DecisionView, prices: pd.DataFrame, cost_bps: float, min_gap: float
) -> PairDraft | None:
    """The pair of a decided decision, or None when five trading days of prices after it do
    not exist yet (or it has no verdict or no target weights).

    Raises:
        ValueError: the prices lack a weighted symbol.
    """
    if decision.verdict is None or decision.target_weights is None:
        return None
    pre = dict(decision.pre_weights or {})
    proposed = dict(decision.target_weights)
    alternative = _alternative_weights(decision)
    outcome = t5_outcome(
        prices, decision.date, proposed, alternative, pre, cost_bps, held=not decision.orders
    )
    if outcome is None:
        return None
    proposed_won = outcome.proposed >= outcome.alternative
    chosen, rejected = (proposed, alternative) if proposed_won else (alternative, proposed)
    return PairDraft(
        source=PreferenceSource.pm,
        origin_key=origin_key(decision.id),
        origin={
            "decision_id": decision.id,
            "book": decision.book,
            "date": decision.date,
            "policy_id": decision.policy_id,
            "verdict": decision.verdict.value,
            "chosen_side": "proposed" if proposed_won else "alternative",
            "proposed_return": outcome.proposed,
            "alternative_return": outcome.alternative,
            "window": [outcome.start, outcome.end],
            "cost_bps": cost_bps,
        },
        prompt=decision_prompt(decision),
        chosen=weights_text(chosen),
        rejected=weights_text(rejected),
        margin=outcome.gap,
        labelled=outcome.gap >= min_gap and outcome.gap > 0,
    )
