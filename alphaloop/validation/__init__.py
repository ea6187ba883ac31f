"""Validation a strategy has to survive before anyone trusts it: probability of backtest
overfitting (CSCV), the deflated Sharpe over a session's search trials, the paired test against
a reference (Ledoit & Wolf's bootstrap) and the edge it can detect, the multiplicity of many
configs tried (Romano & Wolf's StepM for the pick; Holm, Benjamini-Hochberg and -Yekutieli,
the Rademacher Anti-Serum), go/no-go gates and stress tests.

Pure functions over return series and metrics. This package reads journaled numbers handed to
it; it never imports the journal, the meta-agent or the CLI, so the evaluator, the loop and any
front end can call it alike. The validation report itself (:mod:`.report`) is imported from its
module: it types the walk-forward with the evaluator's model, which this package's statistics
do not need.
"""

from __future__ import annotations

from alphaloop.validation.corrections import (
    benjamini_hochberg,
    benjamini_yekutieli,
    holm,
    holm_adjusted,
)
from alphaloop.validation.excess import (
    DETECTION_POWER,
    ExcessEvidence,
    SharpeDifference,
    excess_evidence,
    minimum_detectable_edge,
    sharpe_difference,
)
from alphaloop.validation.gates import (
    GATE_NAMES,
    REFERENCES,
    GateReport,
    GateResult,
    Gates,
    evaluate_gates,
    gate_thresholds,
    resolved_gates,
)
from alphaloop.validation.multiplicity import (
    ConfigVerdict,
    Multiplicity,
    against_default,
    rademacher_complexity,
    ras_lower_bounds,
)
from alphaloop.validation.pbo import DEFAULT_BLOCKS, CSCVResult, cscv_pbo, n_combinations
from alphaloop.validation.pick_rule import PICK_RULES, PickRule
from alphaloop.validation.stepm import StepM, stepm
from alphaloop.validation.stress import (
    CRISIS_WINDOWS,
    DEFAULT_COST_MULTIPLIER,
    Backtested,
    CrisisWindow,
    Rerun,
    StressCase,
    StressReport,
    crisis_windows_in,
    recosted,
    stress_test,
)
from alphaloop.validation.summary import (
    DSR_SET,
    PBOSummary,
    aligned_matrix,
    search_set,
    session_dsr,
    session_pbo,
    summarize_pbo,
)

__all__ = [
    "CRISIS_WINDOWS",
    "DEFAULT_BLOCKS",
    "DEFAULT_COST_MULTIPLIER",
    "DETECTION_POWER",
    "DSR_SET",
    "GATE_NAMES",
    "PICK_RULES",
    "REFERENCES",
    "Backtested",
    "CSCVResult",
    "ConfigVerdict",
    "CrisisWindow",
    "ExcessEvidence",
    "GateReport",
    "GateResult",
    "Gates",
    "Multiplicity",
    "PBOSummary",
    "PickRule",
    "Rerun",
    "SharpeDifference",
    "StepM",
    "StressCase",
    "StressReport",
    "against_default",
    "aligned_matrix",
    "benjamini_hochberg",
    "benjamini_yekutieli",
    "crisis_windows_in",
    "cscv_pbo",
    "evaluate_gates",
    "excess_evidence",
    "gate_thresholds",
    "holm",
    "holm_adjusted",
    "minimum_detectable_edge",
    "n_combinations",
    "rademacher_complexity",
    "ras_lower_bounds",
    "recosted",
    "resolved_gates",
    "search_set",
    "session_dsr",
    "session_pbo",
    "sharpe_difference",
    "stepm",
    "stress_test",
    "summarize_pbo",
]
