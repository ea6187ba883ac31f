"""What ``alphaloop validate`` concluded about a session, typed: the validation report.

It is journaled as the session's ``Validated`` event (without the walk-forward windows' daily
returns) and read back by :meth:`ValidationReport.read`; every view (the CLI panel, the REST
API, the validation chart, the chat tools) reads this model, never the stored JSON.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from alphaloop.evidence import DeflatedSharpe, GateReport, PBOSummary
from alphaloop.trials.walk_forward import WalkForward
from alphaloop.validation.stress import StressReport

logger = logging.getLogger(__name__)

__all__ = ["ValidationReport", "WalkForward"]


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
