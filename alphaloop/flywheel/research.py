"""Preference pairs from a research session's journal: two proposals made from the same state.

The state of a proposal is its session and the best-so-far config it edited (the trial's
``parent_id``). Two search trials of one state form a pair when one's daily returns beat the
other's on the same days with confidence: the paired Sharpe-difference test (Ledoit & Wolf's
standard error, a normal p-value: a bootstrap's p-values stop at one over its resamples, above
the smallest levels here) over every fold both were scored on, two-sided, rejected by Benjamini
& Yekutieli's procedure at a false discovery rate of :data:`PAIR_FDR` over all the session's
candidate pairs (:func:`labelled`; the pairs' tests share trials, so they are not known to be
positively dependent, which Benjamini & Hochberg's procedure needs); or when one scored and the
other was invalid, crashed or timed out (then the margin is infinite: any result beats none).
A difference in objectives alone is not a pair: over a few configs the larger objective is mostly
the window's noise, and a model trained on such labels learns that noise. Each pair at 5% of its
own was the former rule: a session of twenty trials has dozens of candidate pairs, so on a market
where no config differs from another a few passed by luck in every session; the false discovery
rate over the session's pairs lets through as many pairs as the evidence carries, more where
configs truly differ and next to none where they do not (rule :data:`RULE_VERSION`; pairs labelled
under another rule are skipped by ``prefs export``). Both trials of a session run on the session
seed, so their returns are comparable day by day.

``chosen`` and ``rejected`` are the edits as the model emitted them: the journaled ``delta``
(``changes`` and ``rationale``), or for an invalid proposal the raw reply it sent. A rationale
a search algorithm wrote (TPE, random) is bookkeeping, not reasoning: such a pair carries the
changes alone on both sides (see :func:`pair_answers`). The prompt
is the exact prompt the model saw (``trials.prompt``: the earlier trial's, else the later's);
a TPE proposal saw none, so the proposal prompt is rendered from the journal as an LLM would
have been asked at the earlier trial.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable
from itertools import combinations

from alphaloop.flywheel.pairs import PairDraft
from alphaloop.journal import Journal, SessionRecord, TrialKind, TrialRecord, TrialStatus
from alphaloop.journal.models import is_interrupted
from alphaloop.journal.preferences import PreferenceSource
from alphaloop.meta_agent.prompt_log import render_proposal_prompt
from alphaloop.validation import SharpeDifference, benjamini_yekutieli, sharpe_difference

SCORED = frozenset({TrialStatus.keep, TrialStatus.discard})
RULE_VERSION = "folds-by-1"  # how research pairs are labelled (see the module docstring)
PAIR_FDR = 0.10
FAILED = frozenset({TrialStatus.crash, TrialStatus.timeout, TrialStatus.invalid})


def origin_key(session_id: str, chosen: TrialRecord, rejected: TrialRecord) -> str:
    return f"research:{session_id}:{chosen.idx}>{rejected.idx}"


def _scored(t: TrialRecord) -> bool:
    return t.status in SCORED and t.objective is not None and math.isfinite(t.objective)


def _failed(t: TrialRecord) -> bool:
    return t.status in FAILED and not is_interrupted(t.status, t.error)


# Who writes bookkeeping, not reasoning: the search algorithms, and a walk's carried configs.
MACHINE_PROPOSERS = frozenset({"tpe", "random", "carried"})


def machine_written(t: TrialRecord) -> bool:
    """Whether the trial's rationale is a search algorithm's bookkeeping ("TPE warm-up: random
    draw 6 of 8"), not reasoning a language model or a person wrote. An LLM proposal answered
    by its fallback is journaled as ``tpe (fallback)``."""
    return (t.proposer or "").split(" ", 1)[0] in MACHINE_PROPOSERS


def _answer_text(t: TrialRecord, *, rationale: bool = True) -> str:
    """The edit as the model emitted it (see the module docstring); with ``rationale`` False,
    the changes alone."""
    raw = (t.delta or {}).get("raw")
    if isinstance(raw, str) and raw.strip():
        return raw
    delta = t.delta or {}
    if not rationale:
        return json.dumps({"changes": delta.get("changes", {})})
    return json.dumps(
        {"changes": delta.get("changes", {}), "rationale": delta.get("rationale", "")}
    )


def pair_answers(chosen: TrialRecord, rejected: TrialRecord) -> tuple[str, str]:
    """The two answers of a pair. When either rationale was written by a search algorithm
    (:func:`machine_written`), both answers carry their changes alone.

    Such pairs are kept, not excluded: with no LLM endpoint the embedded TPE proposer makes
    every proposal, so excluding them would leave a user without an endpoint nothing to train
    on, and which of two edits from one state did better is as real a preference whoever
    proposed them. What is not real is the text: trained on "TPE warm-up: random draw 6 of 8"
    the model learns to write bookkeeping as a rationale. Dropping the rationale on *both*
    sides (not only the machine's) keeps an LLM's answer against a fallback's from teaching
    that writing a rationale is what wins; the pair differs in its changes only.
    """
    plain = machine_written(chosen) or machine_written(rejected)
    return _answer_text(chosen, rationale=not plain), _answer_text(rejected, rationale=not plain)


def labelled(
    groups: list[list[TrialRecord]],
    days: dict[int, dict[int, list[float]]],
    procedure: Callable[[list[float], float], list[bool]] = benjamini_yekutieli,
) -> list[tuple[TrialRecord, TrialRecord, float]]:
    """``(chosen, rejected, margin)`` for every pair of proposals of one state (``groups``: the
    session's trials by state) that the evidence labels (see the module docstring): the
    scored pairs whose paired test the false discovery rate over all of them rejects (the
    margin the test's z), and each scored trial over a failed one (margin infinite).
    ``days`` holds each scored trial's daily returns by fold (``journal.folds.returns_by_fold``).
    """
    out: list[tuple[TrialRecord, TrialRecord, float]] = []
    tested: list[tuple[TrialRecord, TrialRecord, SharpeDifference]] = []
    for group in groups:
        for a, b in combinations(sorted(group, key=lambda t: t.idx), 2):
            if _scored(a) and _scored(b):
                test = folds_test(days, a.id, b.id)
                if test is not None and test.z != 0:
                    tested.append((a, b, test))
            elif _scored(a) and _failed(b):
                out.append((a, b, math.inf))
            elif _scored(b) and _failed(a):
                out.append((b, a, math.inf))
    two_sided = [min(1.0, 2.0 * min(t.p_value, 1.0 - t.p_value)) for _, _, t in tested]
    for (a, b, test), keep in zip(tested, procedure(two_sided, PAIR_FDR), strict=True):
        if keep:
            out.append((a, b, test.z) if test.z > 0 else (b, a, -test.z))
    return out


def folds_test(days: dict[int, dict[int, list[float]]], a: int, b: int) -> SharpeDifference | None:
    """The paired Sharpe-difference test of trial ``a`` over ``b`` on the folds both were
    scored on (None: fewer than 10 common days, or a series that does not vary)."""
    x, y = _common_days(days, a, b)
    if len(x) < 10:
        return None
    try:
        return sharpe_difference(x, y, method="hac")
    except ValueError:
        return None


def _common_days(
    days: dict[int, dict[int, list[float]]], a: int, b: int
) -> tuple[list[float], list[float]]:
    """Two trials' returns on the folds both were scored on, end to end."""
    fa, fb = days.get(a, {}), days.get(b, {})
    shared = sorted(set(fa) & set(fb))
    x = [r for i in shared for r in fa[i]]
    y = [r for i in shared for r in fb[i]]
    n = min(len(x), len(y))
    return x[len(x) - n :], y[len(y) - n :]


def session_pairs(
    journal: Journal, session: SessionRecord, known: set[str] | None = None
) -> list[PairDraft]:
    """Every pair of a session (none without a noise floor, and none of a walk's epoch, whose
    pairs the walk labels by the period after it: :mod:`.walk_pairs`). Pairs whose origin key
    is in ``known`` are skipped before their prompt is rendered (extraction runs again and
    again)."""
    if session.noise_floor is None or not math.isfinite(session.noise_floor):
        return []
    if journal.walks.epoch_of(session.id) is not None:
        return []
    days = journal.folds.returns_by_fold(session.id)
    drafts = []
    for chosen, rejected, margin in labelled(states(journal, session.id), days):
        key = origin_key(session.id, chosen, rejected)
        if known is not None and key in known:
            continue
        origin = {"noise_floor": session.noise_floor, "rule": RULE_VERSION}
        drafts.append(proposal_pair(journal, session.id, (chosen, rejected), margin, key, origin))
    return drafts


def states(journal: Journal, session_id: str) -> list[list[TrialRecord]]:
    """A session's finished search trials grouped by the state they were proposed from (the
    best-so-far config they edited: their ``parent_id``)."""
    rows = [
        t
        for t in journal.trials.of_session(session_id, TrialKind.search, series=False)
        if t.status != TrialStatus.running
    ]
    grouped: dict[int | None, list[TrialRecord]] = defaultdict(list)
    for t in rows:
        grouped[t.parent_id].append(t)
    return list(grouped.values())


def proposal_pair(
    journal: Journal,
    session_id: str,
    pair: tuple[TrialRecord, TrialRecord],
    margin: float,
    key: str,
    origin: dict[str, object],
) -> PairDraft:
    """The labelled pair ``(chosen, rejected)`` of two proposals from one state: their answers
    as the model emitted them and the prompt it saw (see the module docstring); ``origin``
    adds what labelled it."""
    chosen, rejected = pair
    first, second = (chosen, rejected) if chosen.idx < rejected.idx else (rejected, chosen)
    answers = pair_answers(chosen, rejected)
    prompt = first.prompt or second.prompt or render_proposal_prompt(journal, session_id, first.idx)
    return PairDraft(
        source=PreferenceSource.research,
        origin_key=key,
        origin={
            "session_id": session_id,
            "parent_id": chosen.parent_id,
            "chosen_trial_id": chosen.id,
            "rejected_trial_id": rejected.id,
            "chosen_idx": chosen.idx,
            "rejected_idx": rejected.idx,
            "rejected_status": rejected.status.value,
            **origin,
            "prompt_from": "journal" if (first.prompt or second.prompt) else "rendered",
        },
        prompt=prompt,
        chosen=answers[0],
        rejected=answers[1],
        margin=margin,
        labelled=True,
    )
