"""Preference pairs labelled by the future: a walk's epochs' proposals, judged on the period
after their epoch, which none of them saw.

A research session's pairs are labelled on its folds, the days its search was scored (and its
configs selected) on. In a walk each epoch's search trials are also traded over the period
after the epoch (:mod:`alphaloop.walk.trade`), days no proposal and no selection saw. Two
proposals from one state of an epoch's session form a pair when one's returns over that period
beat the other's with confidence: the same paired test and false-discovery control as the
research pairs (:func:`.research.labelled`), on the period's days. The pair's prompt and
answers are the research pairs' (:func:`.research.proposal_pair`): what the model saw and
said at that state.

How well such labels hold is measured, not assumed: each pair's two configs are traded over
the period after that too, and :func:`agreement` counts how often it ranks them the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from alphaloop.flywheel.pairs import PairDraft
from alphaloop.flywheel.research import labelled, proposal_pair, states
from alphaloop.journal import Journal, PairTally, TrialRecord, WalkEpoch
from alphaloop.metrics import sharpe

RULE_VERSION = "future-fdr-1"  # how walk pairs are labelled (see the module docstring)

Pair = tuple[TrialRecord, TrialRecord, float]


def origin_key(walk_id: str, epoch: WalkEpoch, chosen: TrialRecord, rejected: TrialRecord) -> str:
    return f"walk:{walk_id}:{epoch.session_id}:{chosen.idx}>{rejected.idx}"


def epoch_pairs(
    journal: Journal, epoch: WalkEpoch, returns: dict[tuple[int, int], list[float]]
) -> list[Pair]:
    """``(chosen, rejected, z)`` for the pairs of proposals of one state of ``epoch``'s session
    that its period labels (``returns``: the walk's, by ``(trial id, epoch)``)."""
    days = {
        t.id: {0: returns[(t.id, epoch.epoch)]}
        for group in states(journal, epoch.session_id)
        for t in group
        if (t.id, epoch.epoch) in returns
    }
    scored = [[t for t in group if t.id in days] for group in states(journal, epoch.session_id)]
    return [p for p in labelled(scored, days) if math.isfinite(p[2])]


def walk_pairs(journal: Journal, walk_id: str, known: set[str] | None = None) -> list[PairDraft]:
    """Every pair a walk's finished epochs label (those whose origin key is in ``known``
    skipped before their prompt is rendered)."""
    returns = journal.walks.returns(walk_id)
    drafts = []
    for epoch in journal.walks.epochs(walk_id):
        if epoch.result is None:
            continue
        for chosen, rejected, z in epoch_pairs(journal, epoch, returns):
            key = origin_key(walk_id, epoch, chosen, rejected)
            if known is not None and key in known:
                continue
            origin = {
                "walk_id": walk_id,
                "epoch": epoch.epoch,
                "labelled_on": [epoch.first_day, epoch.last_day],
                "rule": RULE_VERSION,
            }
            drafts.append(
                proposal_pair(journal, epoch.session_id, (chosen, rejected), z, key, origin)
            )
    return drafts


def agreement(
    pairs: Sequence[tuple[int, Pair]], returns: dict[tuple[int, int], list[float]]
) -> PairTally:
    """How often the period after the labelling one ranks a pair the same way: ``pairs`` are
    ``(epoch, pair)``; a pair whose two configs were not traded over epoch ``epoch + 1``'s
    period is not checked."""
    checked = agree = 0
    for index, (chosen, rejected, _) in pairs:
        later = returns.get((chosen.id, index + 1)), returns.get((rejected.id, index + 1))
        if later[0] is None or later[1] is None:
            continue
        a, b = sharpe(later[0]), sharpe(later[1])
        if not (math.isfinite(a) and math.isfinite(b)) or a == b:
            continue
        checked += 1
        agree += a > b
    return PairTally(n_pairs=len(pairs), n_checked=checked, n_agree=agree)
