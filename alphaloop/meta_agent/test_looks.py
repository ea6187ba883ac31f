"""How often TEST was looked at: the other picks judged on the same TEST days of the same data.

A session seals TEST from its own selection, but a user who runs another session (or another
and another) on the same data judges each new pick on the same TEST days again, and keeping the
best-looking of many reads noise. The journal holds every earlier verdict, so each new one is
corrected for them: :func:`other_looks` gathers, per reference, the p-value of every other
distinct pick (a mode and config; two sessions that picked the same config are one look, at
the smaller of their p-values) tested on these TEST days, and the pick's own test is Holm-
adjusted over them (:func:`alphaloop.validation.excess.excess_evidence`). Finalize counts the
looks before it; ``alphaloop validate`` counts every look journaled when it runs.

Sessions are matched by their data's fingerprint and TEST window (``final.test_window``; a
report from before the window was journaled counts, to be safe). The walk's out-of-sample days
need none of this: each is seen once.
"""

from __future__ import annotations

import json

from alphaloop.evidence import ExcessEvidence
from alphaloop.journal import Journal, SessionRecord

__all__ = ["other_looks", "pick_key"]

PickKey = tuple[str, str]


def pick_key(mode: str, config: dict, config_hash: str | None) -> PickKey:
    """What makes two picks the same hypothesis: the mode and the config."""
    return mode, config_hash or json.dumps(config, sort_keys=True)


def _reported(journal: Journal, s: SessionRecord) -> PickKey | None:
    final = s.final
    trial_id = final.best_trial_id if final.best_trial_id is not None else final.baseline_trial_id
    if trial_id is None:
        return None
    trial = journal.trials.get(trial_id)
    return pick_key(s.mode, trial.config, trial.config_hash)


def other_looks(
    journal: Journal,
    session_id: str,
    fingerprint: str | None,
    test_window: tuple[str, str],
    pick: PickKey,
) -> dict[str, list[float]]:
    """Per reference, the p-value of each distinct pick other than ``pick`` that a session on
    the same data (``fingerprint``) and TEST days tested there (see the module docstring);
    empty lists when there was none, or when the data has no fingerprint to match."""
    found: dict[PickKey, dict[str, float]] = {}
    if fingerprint is None:
        return {}
    for s in journal.sessions.list():
        final = s.final
        if s.id == session_id or s.data_fingerprint != fingerprint or not final or not final.excess:
            continue
        if final.test_window is not None and tuple(final.test_window) != tuple(test_window):
            continue
        key = _reported(journal, s)
        if key is None or key == pick:
            continue
        for ref, evidence in final.excess.items():
            if isinstance(evidence, ExcessEvidence):
                seen = found.setdefault(key, {})
                seen[ref] = min(seen.get(ref, 1.0), evidence.test.p_value)
    refs = {ref for p in found.values() for ref in p}
    return {ref: [p[ref] for p in found.values() if ref in p] for ref in sorted(refs)}
