"""A finished session's report (``sessions.final``): what finalize concluded, typed.

Finalize writes one :class:`FinalReport` per session (a manual training run writes its short
form). It is journaled as JSON without its empty fields, so a report reads the same whatever
alphaloop wrote it; a key an older alphaloop wrote that this one no longer knows is dropped on
reading (logged), never an error: old journals still read. ``FinalReport.model_json_schema()``
is the report's JSON schema, the contract of ``--json`` outputs and the REST API.

Every part is typed: the evidence (gates, the paired tests against the default and 1/N, the
PBO summary) is :mod:`alphaloop.evidence`'s models, computed by the validation package; the
folds and the ``auto_activate`` decision are defined here. Views read these types, never the
stored JSON.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_serializer

from alphaloop.evidence import ExcessEvidence, GateReport, NoEvidence, PBOSummary

logger = logging.getLogger(__name__)

Pick = Literal["search", "default"]
_FROZEN = ConfigDict(frozen=True, extra="forbid")


class FoldsUsed(BaseModel):
    """The walk-forward folds a session's trials were scored on.

    Attributes:
        n: how many folds.
        windows: each fold's first and last day (ISO dates), in order.
        purge_days: rows purged between a fold's training and scoring days.
        note: how much of the history before TEST the folds cover, or, for one fold, that it
            measured no window noise.
    """

    model_config = _FROZEN

    n: int
    windows: tuple[tuple[str, str], ...]
    purge_days: int
    note: str | None = None

    @model_serializer(mode="wrap")
    def _without_note(self, handler: Any) -> dict[str, Any]:
        # Journaled as finalize wrote it before this model existed: a note only when there is one.
        return {k: v for k, v in handler(self).items() if k != "note" or v is not None}


class AutoActivation(BaseModel):
    """What the ``auto_activate`` rule decided about a newly published entry, and why."""

    model_config = _FROZEN

    activated: bool
    reason: str
    previous_policy_id: int | None = None


class FinalReport(BaseModel):
    """What finalize concluded about a session (see docs/how-a-session-decides.md).

    Attributes:
        stop_reason: why the loop stopped.
        n_trials: search trials counted against the budget.
        pick: ``search`` when a search trial beat the default with confidence, else
            ``default`` (None for a manual training run); ``pick_reason`` says which and why
            ("no improvement found: ..." for the default).
        pick_rule, pick_level: the rule the pick was chosen by (``strict``: StepM against the
            default at the family-wise ``pick_level``; ``lenient``: the best estimate); None
            in reports from before the rule was a setting (the pick's test was then the keep
            rule's paired test at the Sidak level over Li & Ji's effective count).
        folds: the walk-forward folds trials were scored on.
        test_window: TEST's first and last day (ISO dates); None in reports from before it was
            journaled. Sessions on the same data and TEST days count as looks at TEST.
        baseline_trial_id, baseline_test, baseline_test_objective: the default config's first
            baseline run and its TEST metrics and objective.
        best_trial_id, best_validation_objective, best_test, best_test_objective: the best
            kept search trial, when there is one, and its TEST metrics and objective.
        admissible, n_admissible, admissible_reason, violation: whether the reported trial
            respects the session's limits, how many search trials did, and why.
        probabilistic_sharpe, dsr_set, dsr_n_trials, deflated_sharpe, n_effective_trials,
            deflated_sharpe_effective: the reported trial's Sharpe odds over the search set.
        excess: per reference (``default``, ``equal_weight``), the pick's paired TEST evidence,
            or why there is none.
        pbo, pbo_note, pbo_summary: PBO by CSCV over the search set, or why it is missing.
        gates, gates_passed, gates_summary, gates_note: the go/no-go gates and their one-line
            summary, or why they were not checked.
        policy_id, policy_path, policy_note, auto_activation, best_policy_path: the library
            entry published for the reported trial (or why none was), the ``auto_activate``
            rule's decision, and the best policy's copy when it beat the baseline on TEST.
        timesteps: PPO env steps trained (manual runs).
    """

    model_config = _FROZEN

    stop_reason: str
    n_trials: int
    pick: Pick | None = None
    pick_reason: str | None = None
    pick_rule: Literal["strict", "lenient"] | None = None
    pick_level: float | None = None
    folds: FoldsUsed | None = None
    test_window: tuple[str, str] | None = None
    baseline_trial_id: int | None = None
    baseline_test: dict[str, float] | None = None
    baseline_test_objective: float | None = None
    best_trial_id: int | None = None
    best_validation_objective: float | None = None
    best_test: dict[str, float] | None = None
    best_test_objective: float | None = None
    admissible: bool | None = None
    n_admissible: int | None = None
    admissible_reason: str | None = None
    violation: str | None = None
    probabilistic_sharpe: float | None = None
    dsr_set: str | None = None
    dsr_n_trials: int | None = None
    deflated_sharpe: float | None = None
    n_effective_trials: float | None = None
    deflated_sharpe_effective: float | None = None
    excess: dict[str, ExcessEvidence | NoEvidence] | None = None
    pbo: float | None = None
    pbo_note: str | None = None
    pbo_summary: PBOSummary | None = None
    gates: GateReport | None = None
    gates_passed: bool | None = None
    gates_summary: str | None = None
    gates_note: str | None = None
    policy_id: int | None = None
    policy_path: str | None = None
    policy_note: str | None = None
    auto_activation: AutoActivation | None = None
    best_policy_path: str | None = None
    timesteps: int | None = None

    @property
    def reported_test(self) -> dict[str, float] | None:
        """TEST metrics of the reported trial: the best search trial's, else the default's."""
        return self.best_test if self.best_trial_id is not None else self.baseline_test

    @model_serializer(mode="wrap")
    def _without_empty(self, handler: Any) -> dict[str, Any]:
        # Empty fields are left out of every dump, as the journal stores the report: a key is
        # there when finalize concluded it.
        return {k: v for k, v in handler(self).items() if v is not None}

    def journaled(self) -> dict[str, Any]:
        """The report as the journal stores it (and ``--json`` prints it): JSON, without its
        empty fields."""
        return self.model_dump(mode="json")

    @classmethod
    def read(cls, stored: dict[str, Any]) -> FinalReport:
        """A journaled report, keys this alphaloop does not know dropped (logged), and so is a
        part another alphaloop wrote in a shape this one does not read: the rest still reads.
        """
        unknown = set(stored) - set(cls.model_fields)
        if unknown:
            logger.debug("final report keys from another alphaloop ignored: %s", sorted(unknown))
        known = {k: v for k, v in stored.items() if k not in unknown}
        try:
            return cls.model_validate(known)
        except ValidationError as err:
            unread = {str(e["loc"][0]) for e in err.errors() if e["loc"]} - {"stop_reason"}
            if not unread or "n_trials" in unread:
                raise
            logger.debug("final report parts from another alphaloop ignored: %s", sorted(unread))
            return cls.model_validate({k: v for k, v in known.items() if k not in unread})


def report_json(report: FinalReport | None) -> dict[str, Any] | None:
    """A session's report as JSON, or None while it has none."""
    return report.journaled() if report is not None else None
