"""What ``alphaloop validate`` concluded about a session, typed: the validation report, and the
one builder of the parts finalize concludes too.

The report is journaled as the session's ``Validated`` event (without the walk-forward windows'
daily returns) and read back by :meth:`ValidationReport.read`; every view (the CLI panel, the
REST API, the validation chart, the chat tools) reads this model, never the stored JSON.

Finalize judges the pick once, and ``alphaloop validate`` judges it again later with
walk-forward and stress on top; both build the shared parts here (:func:`selection`, the
deflated Sharpe and PBO over the search set; :func:`reference_evidence`, the pick's TEST
evidence against the default and 1/N; :func:`gate_report`, the gates on them), so the final
report and a later validation report agree on what they computed and how.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from alphaloop.evidence import DeflatedSharpe, ExcessEvidence, GateReport, PBOSummary
from alphaloop.market import MarketData
from alphaloop.metrics import Metrics
from alphaloop.trials import TrialBudget, equal_weight_backtest
from alphaloop.trials.walk_forward import WalkForward
from alphaloop.validation.excess import (
    DETECTION_POWER,
    excess_evidence,
    minimum_detectable_edge,
)
from alphaloop.validation.gates import REFERENCES, Gates, evaluate_gates
from alphaloop.validation.multiplicity import Multiplicity
from alphaloop.validation.pbo import DEFAULT_BLOCKS
from alphaloop.validation.stress import StressReport
from alphaloop.validation.summary import search_set, session_dsr, session_pbo

logger = logging.getLogger(__name__)

__all__ = [
    "Selection",
    "ValidationReport",
    "WalkForward",
    "gate_report",
    "reference_evidence",
    "selection",
]


class Selection(BaseModel):
    """What selecting the reported trial from the session's search set (:func:`search_set`)
    weighs against it: its deflated Sharpe over that set (N and N effective) and PBO by CSCV
    over it, or why PBO could not be computed.

    Attributes:
        n_search_trials: the trials in the search set (N).
        deflated_sharpe: the reported trial's deflated Sharpe; None without a search set or
            without the trial's validation returns.
        pbo, pbo_note: PBO's summary, or why there is none (fewer than 2 trials, too few days).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_search_trials: int
    deflated_sharpe: DeflatedSharpe | None = None
    pbo: PBOSummary | None = None
    pbo_note: str | None = None


def selection(
    candidate: Sequence[float] | None, rows: Sequence[Any], n_blocks: int = DEFAULT_BLOCKS
) -> Selection:
    """The deflated Sharpe of ``candidate`` (the reported trial's validation returns; None:
    none to deflate) and PBO, both over the search set of a session's trial ``rows``.

    Raises:
        ValueError: the search trials share fewer than 2 days.
    """
    search = search_set(rows)
    series = [t.val_returns for t in search]
    dsr = session_dsr(candidate, series) if candidate is not None and search else None
    try:
        pbo = session_pbo(series, [str(t.idx) for t in search], n_blocks)
    except ValueError as err:
        return Selection(n_search_trials=len(search), deflated_sharpe=dsr, pbo_note=str(err))
    return Selection(n_search_trials=len(search), deflated_sharpe=dsr, pbo=pbo)


def reference_evidence(
    data: MarketData,
    budget: TrialBudget,
    tests: dict[str, Any],
    other_looks: Mapping[str, Sequence[float]] | None = None,
) -> dict[str, ExcessEvidence | str]:
    """The pick's TEST evidence against the default config and against 1/N (see
    :mod:`alphaloop.validation.excess`), or why there is none.

    ``tests`` holds the TEST rows of the default (``default``) and of the best search trial
    (``search``) when there is one; the pick is the search trial, else the default. Each is one
    pre-registered paired test on TEST: nothing there is deflated by the configs the search
    tried, whose multiplicity the pick's own test on the folds paid
    (:func:`alphaloop.meta_agent.finalize.pick`). Other picks journaled on the same TEST days
    (``other_looks``: per reference, their p-values) looked at them too: each test's p-value
    is Holm-adjusted over them (:func:`~alphaloop.validation.excess.excess_evidence`).
    """
    looks = other_looks or {}
    pick = tests.get("search") or tests.get("default")
    if pick is None or not pick.val_returns:
        return {ref: "no TEST returns of the pick" for ref in REFERENCES}
    out: dict[str, ExcessEvidence | str] = {}
    default_test = tests.get("default")
    if "search" not in tests:
        out["default"] = "the pick is the default config: no search trial beat it on the folds"
    elif default_test is None or not default_test.val_returns:
        out["default"] = "no TEST returns of the default config"
    else:
        out["default"] = excess_evidence(
            "default", pick.val_returns, default_test.val_returns, looks.get("default", ())
        )
    equal_weight = equal_weight_backtest(data, "test", budget).net
    out["equal_weight"] = excess_evidence(
        "equal_weight", pick.val_returns, equal_weight, looks.get("equal_weight", ())
    )
    return out


def gate_report(
    metrics: Metrics,
    chosen: Selection,
    gates: Gates,
    excess: dict[str, ExcessEvidence | str],
    walk_forward: WalkForward | str | None = None,
) -> GateReport:
    """The go/no-go gates on the reported trial's ``metrics``, its selection's deflated Sharpe
    and PBO, its evidence against the references and (``alphaloop validate`` only) its
    walk-forward on unseen data or why there is none."""
    dsr = chosen.deflated_sharpe.dsr if chosen.deflated_sharpe is not None else None
    pbo = chosen.pbo.pbo if chosen.pbo is not None else None
    report = evaluate_gates(metrics, dsr, pbo, gates, excess=excess, walk_forward=walk_forward)
    notes = [looks_note(excess)]
    if gates.max_excess_p_value is not None and (edges := detectable_note(excess, gates)):
        notes.append(edges)
    if gates.max_pbo is None:
        notes.append(pbo_note(chosen))
    return report.model_copy(update={"notes": (*report.notes, *notes)})


def looks_note(excess: Mapping[str, ExcessEvidence | str]) -> str:
    """How often the TEST days were looked at, as every verdict says it: ``the first look at
    these TEST days of this data``, or ``TEST days of this data looked at by 3 distinct picks:
    p-values Holm-adjusted over them``."""
    looks = max((e.looks for e in excess.values() if isinstance(e, ExcessEvidence)), default=1)
    if looks <= 1:
        return "the first look at these TEST days of this data"
    return (
        f"TEST days of this data looked at by {looks} distinct picks: p-values Holm-adjusted "
        "over them"
    )


def detectable_note(excess: Mapping[str, ExcessEvidence | str], gates: Gates) -> str | None:
    """The edges the TEST tests could detect, as the verdict says it: ``over 504 TEST days
    the tests detect a Sharpe edge of +0.92 over the default and +0.81 over 1/N with 80%
    power`` (:func:`~alphaloop.validation.excess.minimum_detectable_edge` at the gates'
    level, from each test's own standard error), or None without a test. A NO-GO then says
    how large an edge that window could still hide."""
    level = gates.max_excess_p_value or 0.05
    edges, days = [], 0
    for ref, name in REFERENCES.items():
        evidence = excess.get(ref)
        if isinstance(evidence, ExcessEvidence) and math.isfinite(evidence.test.se):
            edge = minimum_detectable_edge(evidence.test, alpha=level, power=DETECTION_POWER)
            edges.append(f"{edge:+.2f} over {name}")
            days = max(days, evidence.test.n_obs)
    if not edges:
        return None
    return (
        f"over {days:,} TEST days the tests detect a Sharpe edge of {' and '.join(edges)} "
        f"with {DETECTION_POWER:.0%} power"
    )


def pbo_note(chosen: Selection) -> str:
    """PBO as the verdict reports it when its gate is off: ``PBO 0.43 (95% interval 0.21-0.66,
    18 search trials): a diagnostic of the search, not a gate``, or why there is none."""
    pbo = chosen.pbo
    if pbo is None:
        return f"PBO not computed ({chosen.pbo_note or 'no search set'})"
    interval = f"95% interval {pbo.interval[0]:.2f}-{pbo.interval[1]:.2f}, " if pbo.interval else ""
    return (
        f"PBO {pbo.pbo:.2f} ({interval}{pbo.n_trials} search trials): a diagnostic of the "
        "search, not a gate"
    )


class ValidationReport(BaseModel):
    """What the validation suite concluded about a session's reported trial.

    Attributes:
        session_id, mode: the session validated.
        trial_id, trial_idx, reported: its reported trial (the best, else the baseline).
        dsr_set, n_search_trials, deflated_sharpe, pbo: the deflated Sharpe and PBO over the
            search set.
        unseen_start, unseen_days: the first day no search scored and how many days follow;
            walk-forward and stress run there (None in reports from before they did).
        walk_forward, walk_forward_note: the reported config window after window on unseen
            data, or why it did not run (the journaled copy has no daily returns).
        stress: the stress cases next to equal weight.
        gates, gates_evidence: the go/no-go gates and what evidence they judged.
        multiplicity, multiplicity_note: which search configs beat the default on the folds'
            days (at 10% FDR, under Holm and RAS), or why that was not computed.
        timings_s, elapsed_s: how long each part and the whole suite took.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: str
    mode: str
    trial_id: int
    trial_idx: int
    reported: Literal["best", "baseline"]
    dsr_set: str
    n_search_trials: int
    deflated_sharpe: DeflatedSharpe
    pbo: PBOSummary
    unseen_start: str | None = None
    unseen_days: int | None = None
    walk_forward: WalkForward | None = None
    walk_forward_note: str | None = None
    stress: StressReport
    gates: GateReport
    gates_evidence: str
    multiplicity: Multiplicity | None = None
    multiplicity_note: str | None = None
    timings_s: dict[str, float]
    elapsed_s: float

    def journaled(self) -> dict[str, Any]:
        """The report as the ``Validated`` event holds it: no daily series."""
        out = self.model_dump(mode="json")
        for w in (out["walk_forward"] or {}).get("windows", []):
            w.pop("net", None)
        return out

    @classmethod
    def read(cls, stored: dict[str, Any]) -> ValidationReport:
        """A journaled report, keys this alphaloop does not know dropped (logged). Its
        walk-forward windows read with no daily returns (``net`` is empty): none were
        journaled."""
        unknown = set(stored) - set(cls.model_fields)
        if unknown:
            logger.debug("validation report keys from another alphaloop ignored: %s", unknown)
        known = {k: v for k, v in stored.items() if k not in unknown}
        if known.get("walk_forward"):
            windows = [{"net": [], **w} for w in known["walk_forward"].get("windows", [])]
            known["walk_forward"] = {**known["walk_forward"], "windows": windows}
        return cls.model_validate(known)
