"""Preference pairs: the T+5 label job, extraction from the research journal, stats, export,
and people's verdicts on portfolio decisions (``alphaloop pm review`` / ``pm decide``)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import Conflict, InvalidRequest, NotFound, check_folder
from alphaloop.flywheel import check_verdict, label_decision, parse_weights, write_jsonl
from alphaloop.flywheel.research import RULE_VERSION, session_pairs
from alphaloop.journal import Journal
from alphaloop.journal.preferences import DecisionView, PreferenceRecord, PreferenceSource
from alphaloop.market import load_prices
from alphaloop.ops._journal import open_journal
from alphaloop.settings import Settings
from alphaloop.spec import DataSpec
from alphaloop.trials import TrialBudget

logger = logging.getLogger(__name__)

__all__ = [
    "ExportResult",
    "ExtractResult",
    "PreferenceStats",
    "ReviewItem",
    "decide",
    "export_preferences",
    "extract_preferences",
    "parse_weights",
    "preference_stats",
    "review_decisions",
]
_FROZEN = ConfigDict(frozen=True, extra="forbid")


class ExtractResult(BaseModel):
    """What one extraction added, per source, and what it could not label yet."""

    model_config = _FROZEN

    added: dict[str, int]
    labelled: dict[str, int]
    pending: list[int]  # decided decisions still short of five trading days of prices
    skipped: dict[int, str]  # decisions that could not be labelled, and why


class PreferenceStats(BaseModel):
    model_config = _FROZEN

    counts: dict[str, dict[str, int]]
    total: int
    labelled: int
    last_trained_id: int
    new_since_training: int


class ExportResult(BaseModel):
    model_config = _FROZEN

    path: str
    rows: int
    source: str | None
    rule: str = "current"
    # Research pairs left out because an older rule labelled them (``rule`` ``current``).
    skipped_old_rule: int = 0


class ReviewItem(BaseModel):
    """A decision awaiting a verdict: what it proposed against what the book held."""

    model_config = _FROZEN

    id: int
    book: str
    date: str
    policy_id: int | None
    status: str
    symbols: list[str]
    pre_weights: dict[str, float]
    target_weights: dict[str, float]


def _cost_bps(journal: Journal, policy_id: int | None) -> float:
    """The harness cost the decision's policy was evaluated with (its trial budget); the
    default for a decision made without a policy, or a budget journaled before the cost was.

    Raises:
        NotFound: the journal has no such policy. Labelling at another cost than the
            policy's would journal a different T+5 label as if it were the policy's, so the
            decision is left unlabelled instead (the caller reports it as skipped).
    """
    default = TrialBudget().eval_cost_bps
    if policy_id is None:
        return default
    try:
        budget = journal.policies.get(policy_id).trial_budget
    except NotFound as err:
        raise NotFound(
            f"the harness cost of policy {policy_id} is unknown, so its T+5 label would be "
            f"guessed: {err}"
        ) from err
    return budget.eval_cost_bps


def _prices_for(
    journal: Journal, decision: DecisionView, data: str | None, cache: dict[str, pd.DataFrame]
) -> pd.DataFrame:
    """The price table a decision is labelled with: ``data`` when given, else its policy's."""
    if data is not None:
        spec = DataSpec(data=data)
    elif decision.policy_id is not None:
        spec = journal.policies.get(decision.policy_id).data_spec
    else:
        raise InvalidRequest(
            f"decision {decision.id} has no policy to take its price data from; pass --data"
        )
    key = spec.model_dump_json()
    if key not in cache:
        cache[key] = load_prices(spec.data, spec.fill, spec.date_format)
    return cache[key]


def _label_decisions(
    journal: Journal, settings: Settings, data: str | None, result: dict[str, Any]
) -> None:
    cache: dict[str, pd.DataFrame] = {}
    for decision in journal.preferences.decided_decisions():
        key = f"pm:decision:{decision.id}"
        if journal.preferences.has(key) or decision.target_weights is None:
            continue
        try:
            prices = _prices_for(journal, decision, data, cache)
            draft = label_decision(
                decision, prices, _cost_bps(journal, decision.policy_id), settings.pref_min_gap
            )
        except (InvalidRequest, ValueError, LookupError) as err:
            result["skipped"][decision.id] = str(err)
            logger.warning("decision %d not labelled: %s", decision.id, err)
            continue
        if draft is None:
            result["pending"].append(decision.id)
            continue
        if journal.preferences.add(**draft.model_dump()):
            result["added"]["pm"] += 1
            result["labelled"]["pm"] += int(draft.labelled)


def _extract_research(journal: Journal, result: dict[str, Any]) -> None:
    known = {p.origin_key for p in journal.preferences.list(source=PreferenceSource.research)}
    for session in journal.sessions.list():
        if session.status == "running":
            continue  # its states are still being explored; its pairs come once it ends
        for draft in session_pairs(journal, session, known):
            if journal.preferences.add(**draft.model_dump()):
                result["added"]["research"] += 1
                result["labelled"]["research"] += int(draft.labelled)


def extract_preferences(settings: Settings, data: str | None = None) -> ExtractResult:
    """Labels the T+5 outcomes that are due, then extracts research pairs. Idempotent: a pair
    already journaled (by its origin key) is never added twice.

    Args:
        settings: where the journal is; ``pref_min_gap`` is the label threshold.
        data: price data for the T+5 labels (default: each decision's policy's data).
    """
    result: dict[str, Any] = {
        "added": {"pm": 0, "research": 0},
        "labelled": {"pm": 0, "research": 0},
        "pending": [],
        "skipped": {},
    }
    with open_journal(settings) as journal:
        _label_decisions(journal, settings, data, result)
        _extract_research(journal, result)
    return ExtractResult(**result)


def preference_stats(settings: Settings) -> PreferenceStats:
    """Pairs per source, labelled or not, and how many labelled ones no DPO run has seen."""
    with open_journal(settings) as journal:
        counts = journal.preferences.counts()
        last = journal.preferences.last_trained_id()
        new = len(journal.preferences.list(labelled=True, after_id=last))
    return PreferenceStats(
        counts=counts,
        total=sum(c["labelled"] + c["unlabelled"] for c in counts.values()),
        labelled=sum(c["labelled"] for c in counts.values()),
        last_trained_id=last,
        new_since_training=new,
    )


def export_preferences(
    settings: Settings, out: Path, source: str | None = None, rule: str = "current"
) -> ExportResult:
    """Writes the labelled pairs (of one source, or both) as TRL's ``prompt``/``chosen``/
    ``rejected`` JSON lines. With ``rule`` ``current`` research pairs labelled by an older rule
    (a gap in validation objectives, before pairs needed a paired difference on the folds) are
    left out and counted; ``all`` writes them too.

    Raises:
        ValueError: an unknown source or rule.
        InvalidRequest: ``out`` is in a folder that does not exist.
    """
    if source is not None and source not in {s.value for s in PreferenceSource}:
        raise ValueError(f"unknown source {source!r}; choose pm or research")
    if rule not in ("current", "all"):
        raise ValueError(f"unknown rule {rule!r}; choose current or all")
    check_folder(Path(out))
    with open_journal(settings) as journal:
        prefs = journal.preferences.list(source=source, labelled=True)
    kept = [p for p in prefs if rule == "all" or _current_rule(p)]
    rows = write_jsonl(kept, Path(out))
    return ExportResult(
        path=str(out), rows=rows, source=source, rule=rule, skipped_old_rule=len(prefs) - len(kept)
    )


def _current_rule(pref: PreferenceRecord) -> bool:
    """Whether a pair was labelled by today's rule (portfolio-manager pairs have one rule)."""
    return pref.source != PreferenceSource.research or pref.origin.get("rule") == RULE_VERSION


def review_decisions(settings: Settings) -> list[ReviewItem]:
    """Decisions awaiting a verdict, oldest first."""
    with open_journal(settings) as journal:
        return [
            ReviewItem(
                id=d.id,
                book=d.book,
                date=d.date,
                policy_id=d.policy_id,
                status=d.status,
                symbols=d.symbols,
                pre_weights=d.pre_weights or {},
                target_weights=d.target_weights or {},
            )
            for d in journal.preferences.undecided_decisions()
        ]


def decide(
    settings: Settings,
    decision_id: int,
    verdict: str,
    weights: dict[str, float] | None = None,
    note: str | None = None,
) -> DecisionView:
    """Records a verdict on a decision (override weights checked first).

    Raises:
        NotFound: no such decision.
        InvalidRequest: a bad verdict or bad weights.
        Conflict: the decision has its verdict already.
    """
    with open_journal(settings) as journal:
        decision = journal.preferences.decision_view(decision_id)
        if decision.verdict is not None:
            raise Conflict(
                f"decision {decision_id} already has the verdict {decision.verdict.value!r}"
            )
        kind, checked = check_verdict(verdict, weights, decision.symbols)
        return journal.preferences.set_verdict(
            decision_id, kind, override_weights=checked, note=note
        )
