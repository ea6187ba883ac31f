"""``validate``: the validation suite of a session, run on demand and journaled.

PBO by CSCV over every search trial's journaled validation returns, the deflated Sharpe of the
reported trial over the same set (N and N effective), which search configs beat the default on
the folds' days (at a 10% false discovery rate, Benjamini-Hochberg; Holm and the Rademacher
Anti-Serum beside it), walk-forward of its config over anchored and rolling windows, stress
tests (+50% cost, named crisis windows) of it and the baseline next to equal weight, and the
go/no-go gates. The report is journaled as a ``Validated`` event
(without the daily series), so ``journal`` and the ``validation`` chart read it later.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pandas as pd

from alphaloop.exceptions import AlphaloopError, InvalidRequest
from alphaloop.journal import EventKind, Journal, SessionRecord, TrialRecord
from alphaloop.knobs import TrialConfig
from alphaloop.metrics import Metrics
from alphaloop.ops._journal import open_journal
from alphaloop.settings import Settings
from alphaloop.spec import SessionSpec

if TYPE_CHECKING:
    from alphaloop.market import MarketData
    from alphaloop.trials import TrialBudget
from alphaloop.validation import (
    CRISIS_WINDOWS,
    DEFAULT_BLOCKS,
    DEFAULT_COST_MULTIPLIER,
    DSR_SET,
    GateReport,
    Gates,
    StressReport,
    against_default,
    aligned_matrix,
    crisis_windows_in,
    search_set,
    stress_test,
)
from alphaloop.validation.report import (
    Selection,
    ValidationReport,
    WalkForward,
    gate_report,
    reference_evidence,
    selection,
)

logger = logging.getLogger(__name__)

# The report and the types of its parts, for the front ends that show it.
__all__ = [
    "Gates",
    "StressReport",
    "ValidationReport",
    "WalkForward",
    "latest_validation",
    "validate_session",
]

DEFAULT_WINDOWS = 4


def _reported(j: Journal, s: SessionRecord, rows: list[TrialRecord]) -> TrialRecord:
    """The trial finalize reported (the best, else the baseline), or the best so far."""
    if s.best_trial_id is not None:
        return j.trials.get(s.best_trial_id)
    best = j.trials.best(s.id)
    if best is None or not best.val_returns:
        raise InvalidRequest(f"session {s.id} has no scored trial to validate yet")
    return best


def _evidence(rows: list[TrialRecord], chosen: TrialRecord) -> tuple[Metrics, str]:
    """What the gates judge: the reported trial's test-window metrics, or, before finalize,
    its validation metrics (said to be in sample for the selection)."""
    for t in rows:
        if t.kind == "test" and t.parent_id == chosen.id and t.metrics:
            return Metrics(**t.metrics), f"held-out test window (trial #{t.idx})"
    return (
        Metrics(**(chosen.metrics or {})),
        "validation window (the session was not finalized: in sample for the selection)",
    )


def _excess(
    rows: list[TrialRecord], chosen: TrialRecord, inputs: tuple, looks: dict[str, list[float]]
) -> dict[str, Any]:
    """The reported trial's TEST evidence against the default and 1/N, as finalize computes
    it (none before finalize: there are no TEST returns yet), Holm-adjusted over the other
    looks at the same TEST days journaled so far (``looks``)."""
    tested = {t.parent_id: t for t in rows if t.kind == "test" and t.val_returns}
    baseline = next((t for t in rows if t.kind == "baseline" and t.status == "keep"), None)
    tests = {}
    if baseline is not None and baseline.id in tested:
        tests["default"] = tested[baseline.id]
    if chosen.kind == "search" and chosen.id in tested:
        tests["search"] = tested[chosen.id]
    return reference_evidence(*inputs, tests, looks)


def _gates(
    subject: _Subject,
    chosen_from: Selection,
    gates: Gates | None,
    walk_forward: WalkForward | str | None,
) -> tuple[GateReport, str]:
    """The go/no-go gates on the reported trial's evidence (with its deflated Sharpe and PBO,
    ``chosen_from``, and its walk-forward on unseen data or why there is none), and what that
    evidence is. The gates are the session's with ``gates``' explicit thresholds on top
    (:func:`session_gates`)."""
    metrics, evidence = _evidence(subject.rows, subject.chosen)
    excess = _excess(subject.rows, subject.chosen, subject.inputs, subject.looks)
    limits = session_gates(subject.session, gates)
    return gate_report(metrics, chosen_from, limits, excess, walk_forward), evidence


def session_gates(session: SessionRecord, overrides: Gates | None = None) -> Gates:
    """The gates a session was judged by at finalize (its spec's, resolved when it was
    created; the defaults under its drawdown limit for a session from before gates were
    stored), with the thresholds ``overrides`` sets explicitly on top: ``validate`` judges as
    finalize did unless asked otherwise."""
    spec = session.spec
    stored = spec.gates if isinstance(spec, SessionSpec) else Gates()
    # Resolved when the session was created; a session from before gates were stored has
    # the defaults, under its drawdown limit.
    base = stored.within(session.objective.max_drawdown)
    if overrides is None:
        return base
    return base.model_copy(update={k: getattr(overrides, k) for k in overrides.model_fields_set})


def unseen_start(data: MarketData, oos_start: str | None) -> int:
    """The first row no search scored: the start of TEST, or the row of ``oos_start``.

    Raises:
        InvalidRequest: ``oos_start`` is not a date, falls on days the search scored,
            or is past the data's last day.
    """
    first = data.test.start
    if oos_start is None:
        return first
    try:
        day = pd.Timestamp(oos_start)
    except ValueError:
        raise InvalidRequest(f"--oos-start takes a date, got {oos_start!r}") from None
    row = int(data.dates.searchsorted(day, side="left"))
    first_day, last_day = data.window_dates(slice(first, len(data.returns)))
    if row < first:
        raise InvalidRequest(
            f"--oos-start {oos_start} falls on days the search scored; unseen data starts "
            f"{first_day}"
        )
    if row >= len(data.returns):
        raise InvalidRequest(
            f"--oos-start {oos_start} is after the data's last day ({last_day}); append the "
            "new prices to the session's data file first"
        )
    return row


def _looks(
    settings: Settings, s: SessionRecord, chosen: TrialRecord, data: Any
) -> dict[str, list[float]]:
    """The other picks judged on the session's TEST days (see ``meta_agent.test_looks``)."""
    from alphaloop.meta_agent import test_looks

    window = data.window_dates(data.test)
    key = test_looks.pick_key(s.mode, chosen.config, chosen.config_hash)
    with open_journal(settings) as j:
        return test_looks.other_looks(j, s.id, s.data_fingerprint, window, key)


def _read(settings: Settings, session_id: str) -> tuple[SessionRecord, list[TrialRecord], Any]:
    with open_journal(settings) as j:
        s = j.sessions.get(session_id)
        rows = j.trials.of_session(s.id)
        return s, rows, _reported(j, s, rows)


def _reruns(
    s: SessionRecord, trial: TrialRecord, data: MarketData, span: slice, budget: TrialBudget
) -> dict:
    from alphaloop.trials import span_reruns

    policy = None
    if s.mode != "cufolio_only":
        if not trial.policy_path or not Path(trial.policy_path).is_file():
            raise AlphaloopError(
                f"trial #{trial.idx}'s policy is not at {trial.policy_path!r} any more; it "
                "cannot be stress-tested"
            )
        policy = trial.policy_path
    config = TrialConfig(**trial.config)
    return span_reruns(s.mode, config, data, span, budget, trial.seed or 0, policy)


def _stress_runs(
    s: SessionRecord,
    named: dict[str, TrialRecord],
    data: MarketData,
    span: slice,
    budget: TrialBudget,
) -> dict[str, Any]:
    runs: dict[str, Any] = {}
    for name, trial in named.items():
        both = _reruns(s, trial, data, span, budget)
        runs[name] = both["strategy"]
        runs.setdefault("equal_weight", both["equal_weight"])
    return runs


@dataclass(frozen=True)
class _Subject:
    """What the reruns of a validation need: the session, its reported trial, its rows, its
    data and trial budget (``inputs``), and the first row no search scored (``unseen``)."""

    session: SessionRecord
    chosen: TrialRecord
    rows: list[TrialRecord]
    inputs: tuple[Any, Any]
    unseen: int
    looks: dict[str, list[float]]


def _walk_forward(subject: _Subject, n_windows: int) -> tuple[Any | None, str | None]:
    """Walk-forward of the reported config on unseen data, or None and why when there is too
    little of it."""
    from alphaloop.trials import walk_forward

    chosen = subject.chosen
    config, seed = TrialConfig(**chosen.config), chosen.seed or 0
    try:
        return walk_forward(
            subject.session.mode,
            config,
            *subject.inputs,
            seed,
            n_windows=n_windows,
            start=subject.unseen,
        ), None
    except ValueError as err:
        if "unseen days" not in str(err):
            raise
        return None, f"not enough unseen data: {err}"


def _stress(subject: _Subject, multiplier: float) -> StressReport:
    """The reported trial and the baseline (and equal weight) from the first unseen day
    (``unseen``) to the end of the data at the evaluation cost and ``multiplier`` times it, and
    on each crisis window in that span; a crisis window earlier in the data is run on its own,
    from its first day (on days the search trained or selected on: in sample, as its
    description says)."""
    s, chosen, rows, unseen = subject.session, subject.chosen, subject.rows, subject.unseen
    data, budget = subject.inputs
    named = {"best" if chosen.kind != "baseline" else "baseline": chosen}
    base = next((t for t in rows if t.kind == "baseline" and t.status == "keep"), None)
    if base is not None:
        named.setdefault("baseline", base)
    span = slice(unseen, len(data.returns))
    cost = budget.eval_cost_bps
    runs = _stress_runs(s, named, data, span, budget)
    report = stress_test(runs, data.dates[span], cost, cost_multiplier=multiplier)
    cases = list(report.cases)
    for window, crisis in crisis_windows_in(data.dates):
        if crisis.start >= span.start:
            continue
        early = stress_test(
            _stress_runs(s, named, data, crisis, budget),
            data.dates[crisis],
            cost,
            cost_multiplier=multiplier,
            windows=(window,),
        ).case(window.name)
        note = f"{early.description}; run from its first day, in sample (before unseen data)"
        cases.append(early.model_copy(update={"description": note}))
    found = {c.scenario for c in cases}
    return report.model_copy(
        update={
            "cases": tuple(cases),
            "windows_not_in_data": tuple(w.name for w in CRISIS_WINDOWS if w.name not in found),
        }
    )


def _selection(
    session_id: str, chosen: TrialRecord, rows: list[TrialRecord], n_blocks: int
) -> Selection:
    """The deflated Sharpe of ``chosen`` and PBO, both over the search set (as finalize
    computes them), refused without both."""
    n_search = len(search_set(rows))
    if n_search < 2:
        raise InvalidRequest(
            f"session {session_id} has {n_search} search trial(s) with validation returns; "
            "PBO needs at least 2 trials to select among"
        )
    chosen_from = selection(chosen.val_returns, rows, n_blocks)
    if chosen_from.pbo is None or chosen_from.deflated_sharpe is None:
        raise InvalidRequest(f"session {session_id}: {chosen_from.pbo_note}")
    return chosen_from


def _multiplicity(rows: list[TrialRecord], search: list[TrialRecord]) -> dict[str, Any]:
    """Which search configs beat the default on the folds' days (each against the baseline
    seeds' mean), at a 10% false discovery rate and under Holm and RAS (``multiplicity``), or
    why that was not computed (``multiplicity_note``)."""
    base = [t.val_returns for t in rows if t.kind == "baseline" and t.val_returns]
    if not base:
        return {"multiplicity_note": "no baseline returns to weigh the configs against"}
    default = aligned_matrix(base).mean(axis=1)
    try:
        return {"multiplicity": against_default({t.idx: t.val_returns for t in search}, default)}
    except ValueError as err:
        return {"multiplicity_note": str(err)}


T = TypeVar("T")


def _timed(timings: dict[str, float], name: str, work: Callable[[], T]) -> T:
    """Runs ``work`` and records its wall time in ``timings[name]``."""
    clock = time.monotonic()
    try:
        return work()
    finally:
        timings[name] = time.monotonic() - clock


def validate_session(
    settings: Settings,
    session_id: str,
    *,
    n_blocks: int = DEFAULT_BLOCKS,
    n_windows: int = DEFAULT_WINDOWS,
    gates: Gates | None = None,
    cost_multiplier: float = DEFAULT_COST_MULTIPLIER,
    on_step: Callable[[str], None] | None = None,
    oos_start: str | None = None,
) -> ValidationReport:
    """Runs the validation suite on a session and journals it as a ``Validated`` event.

    Walk-forward and stress score only days the search never scored: from ``oos_start`` (a
    date after the last day any search scored, e.g. the first of prices appended since), or
    from the start of TEST. Too few such days for ``n_windows`` leaves walk-forward out, says
    so, and fails its gate.

    Raises:
        NoJournal, NotFound: no such session.
        InvalidRequest: fewer than 2 search trials with validation returns (PBO needs
            2 to select among), nothing scored yet, or ``oos_start`` on scored days.
        AlphaloopError: the session's data cannot be loaded as it was, or changed.
    """
    from alphaloop.ops.series import session_budget, session_market

    started, step = time.monotonic(), on_step or (lambda _: None)
    s, rows, chosen = _read(settings, session_id)
    search, data = search_set(rows), session_market(s)
    unseen = unseen_start(data, oos_start)
    timings: dict[str, float] = {}
    chosen_from = _timed(timings, "pbo_dsr", lambda: _selection(s.id, chosen, rows, n_blocks))
    step("walk-forward")
    subject = _Subject(
        s, chosen, rows, (data, session_budget(s)), unseen, _looks(settings, s, chosen, data)
    )
    wf, wf_note = _timed(timings, "walk_forward", lambda: _walk_forward(subject, n_windows))
    step("stress")
    stress = _timed(timings, "stress", lambda: _stress(subject, cost_multiplier))
    gates_report, evidence = _gates(subject, chosen_from, gates, wf or wf_note)
    report = ValidationReport(
        session_id=s.id,
        mode=s.mode,
        trial_id=chosen.id,
        trial_idx=chosen.idx,
        reported="baseline" if chosen.kind == "baseline" else "best",
        dsr_set=DSR_SET,
        n_search_trials=len(search),
        deflated_sharpe=chosen_from.deflated_sharpe,
        pbo=chosen_from.pbo,
        unseen_start=data.window_dates(slice(unseen, unseen + 1))[0],
        unseen_days=len(data.returns) - unseen,
        walk_forward=wf,
        walk_forward_note=wf_note,
        stress=stress,
        gates=gates_report,
        gates_evidence=evidence,
        **_multiplicity(rows, search),
        timings_s=timings,
        elapsed_s=time.monotonic() - started,
    )
    return _journaled(settings, report)


def _journaled(settings: Settings, report: ValidationReport) -> ValidationReport:
    """Journals ``report`` as the session's newest ``Validated`` event."""
    with open_journal(settings) as j:
        j.logs.add_event(report.session_id, EventKind.validated, report.journaled())
    logger.info("validated session %s in %.1f s", report.session_id, report.elapsed_s)
    return report


def latest_validation(settings: Settings, session_id: str) -> ValidationReport | None:
    """The newest journaled ``Validated`` report of a session, or None."""
    with open_journal(settings) as j:
        events = j.logs.events(j.sessions.get(session_id).id, kind=EventKind.validated)
    return ValidationReport.read(events[-1].payload) if events else None
