"""The walk's verdict: each rule's periods end to end, tested against the default and 1/N.

A walk's out-of-sample record is what its epochs traded, period after period, each period
unseen by the session that chose what traded it. GO means what a session's GO means, on all
of those days at once: one pre-registered paired Sharpe-difference test against the default
config and one against 1/N (:func:`alphaloop.validation.excess_evidence`), both rejecting at
the gates' level (an intersection-union test), plus the success criteria on the record. The
selection's checks of a lone session (the deflated Sharpe, PBO) do not apply: no day of the
record was selected on, and each is looked at once.

Every record states its minimum detectable edge: the Sharpe difference its test would detect
with 80% power at its level, given the record's length and the correlations observed
(:func:`alphaloop.validation.minimum_detectable_edge`, from the test's own standard error).
"No improvement found" then says how large an edge could still hide in that much history. A
record whose every epoch traded the default has no difference to test against the default;
its edge is then read off the best rule's record, the configs that would have traded had the
rule allowed it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from alphaloop.evidence import ExcessEvidence, NoEvidence
from alphaloop.journal import (
    EpochLine,
    EpochResult,
    RuleName,
    RuleRecord,
    Traded,
    WalkReport,
)
from alphaloop.metrics import Metrics, compute_metrics, sharpe
from alphaloop.validation import (
    DETECTION_POWER,
    Gates,
    evaluate_gates,
    excess_evidence,
    minimum_detectable_edge,
)

RULES: tuple[RuleName, ...] = ("strict", "kept", "best")
# A lone session's selection checks: no day of a walk's record was selected on.
_SELECTION_GATES = {"min_deflated_sharpe": None, "max_pbo": None, "min_walk_forward_share": None}


def _aligned(result: EpochResult, rule: RuleName) -> tuple[np.ndarray, ...]:
    """The rule's pick, the default and 1/N over their common (latest) days of the period."""
    series = [result.picks[rule].returns, result.default, result.equal_weight]
    n = min(len(s) for s in series)
    return tuple(np.asarray(s[len(s) - n :], dtype=float) for s in series)


def _changes(traded: Sequence[Traded]) -> list[bool]:
    """Whether each epoch's pick differs from the epoch before's (the first: from the
    default)."""
    before = [None, *(t.trial_id and t.config_hash for t in traded[:-1])]
    return [(t.trial_id and t.config_hash) != b for t, b in zip(traded, before, strict=True)]


def _metrics(returns: np.ndarray) -> Metrics:
    # The record's turnover is not kept (each period's book starts afresh); the gates read
    # returns only.
    return compute_metrics(returns, np.zeros_like(returns))


def _detectable(evidence: ExcessEvidence | NoEvidence, level: float) -> float | None:
    """The edge the record's test against one reference detects with :data:`DETECTION_POWER`
    at ``level`` (:func:`alphaloop.validation.minimum_detectable_edge`, from the test's own
    standard error); None without a test."""
    if isinstance(evidence, NoEvidence) or not np.isfinite(evidence.test.se):
        return None
    return minimum_detectable_edge(evidence.test, alpha=level, power=DETECTION_POWER)


def record_days(
    results: Sequence[EpochResult], rule: RuleName
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """The days of ``rule``'s record over ``results`` (oldest first) and, on them, the daily
    returns of its pick, of the default and of 1/N: the days its tests run on."""
    days: list[str] = []
    parts = []
    for r in results:
        part = _aligned(r, rule)
        days += r.dates[len(r.dates) - len(part[0]) :]
        parts.append(part)
    pick, default, equal = (np.concatenate(s) for s in zip(*parts, strict=True))
    return days, pick, default, equal


def _rule_record(results: Sequence[EpochResult], rule: RuleName, gates: Gates) -> RuleRecord:
    """The record of ``rule`` over ``results`` (oldest first), judged by ``gates``."""
    _, pick, default, equal = record_days(results, rule)
    traded = [r.picks[rule] for r in results]
    n_default = sum(t.trial_id is None for t in traded)
    excess: dict[str, ExcessEvidence | NoEvidence] = {}
    if n_default == len(traded) or np.array_equal(pick, default):
        excess["default"] = NoEvidence(
            note="every epoch traded the default config: no difference to test"
        )
    else:
        excess["default"] = excess_evidence("default", pick, default)
    excess["equal_weight"] = excess_evidence("equal_weight", pick, equal)
    judged = gates.model_copy(update=_SELECTION_GATES)
    metrics = _metrics(pick)
    report = evaluate_gates(
        metrics,
        None,
        None,
        judged,
        excess={k: v if isinstance(v, ExcessEvidence) else v.note for k, v in excess.items()},
        window="out-of-sample",
    )
    level = gates.max_excess_p_value or 0.05
    shown = metrics.model_dump()
    shown.pop("annual_turnover")
    return RuleRecord(
        rule=rule,
        metrics=shown,
        excess=excess,
        detectable={k: _detectable(v, level) for k, v in excess.items()},
        gates=report,
        go=report.passed,
        n_default=n_default,
        n_changes=sum(_changes(traded)),
    )


def _sharpe(returns: np.ndarray) -> float | None:
    value = sharpe(returns) if returns.size > 1 else float("nan")
    return value if np.isfinite(value) else None


def _lines(results: Sequence[EpochResult], rule: RuleName) -> tuple[EpochLine, ...]:
    changed = _changes([r.picks[rule] for r in results])
    lines = []
    for r, moved in zip(results, changed, strict=True):
        pick, default, equal = _aligned(r, rule)
        traded = r.picks[rule]
        lines.append(
            EpochLine(
                epoch=r.epoch,
                session_id=r.session_id,
                start=r.start,
                end=r.end,
                trial_id=traded.trial_id,
                config_hash=traded.config_hash,
                changed=moved,
                sharpe_pick=_sharpe(pick),
                sharpe_default=_sharpe(default),
                sharpe_equal_weight=_sharpe(equal),
            )
        )
    return tuple(lines)


def _verdict_line(record: RuleRecord, fallback: RuleRecord | None, n_days: int) -> str:
    """``GO: ...`` or ``NO-GO: ...`` with the tests that decided it and the edges the record
    could detect."""
    edges = []
    for ref, name in (("default", "the default"), ("equal_weight", "1/N")):
        edge = record.detectable.get(ref)
        source = ""
        if edge is None and fallback is not None:
            edge, source = fallback.detectable.get(ref), f" (read off the {fallback.rule} rule)"
        if edge is not None:
            edges.append(f"{edge:+.2f} over {name}{source}")
    detect = (
        f"; over {n_days} out-of-sample days it detects a Sharpe edge of "
        f"{' and '.join(edges)} with {DETECTION_POWER:.0%} power"
        if edges
        else ""
    )
    return f"{record.gates.headline().replace(' on TEST', ' out of sample')}{detect}"


def walk_report(
    results: Sequence[EpochResult],
    rule: RuleName,
    cadence: str,
    gates: Gates,
    elapsed_s: float | None = None,
) -> WalkReport:
    """The walk's report over its epochs' ``results`` (oldest first), decided by ``rule``."""
    ordered = sorted(results, key=lambda r: r.epoch)
    records = [_rule_record(ordered, r, gates) for r in (rule, *(x for x in RULES if x != rule))]
    own = records[0]
    best = next(r for r in records if r.rule == "best")
    n_days = int(own.metrics["n_days"] or 0)
    return WalkReport(
        rule=rule,
        cadence=cadence,
        first_day=ordered[0].start,
        last_day=ordered[-1].end,
        n_days=n_days,
        epochs=_lines(ordered, rule),
        records=tuple(records),
        verdict=_verdict_line(own, best if own is not best else None, n_days),
        go=own.go,
        elapsed_s=elapsed_s,
    )
