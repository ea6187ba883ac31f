"""The records ops functions return, and the names front ends offer, in one import.

A front end shows what ops hands it: the journal's read models (a session's report, a walk's
report and its rules, the trial filter the pages send), made JSON by :func:`jsonable` (models
dumped, NaN as null). Front ends import them from here, never from the journal or the packages
ops composes, so the journal's layout can change behind this door (tests/test_import_graph.py).
"""

from __future__ import annotations

from alphaloop.journal import (
    FinalReport,
    RuleRecord,
    TrialFilter,
    WalkReport,
    jsonable,
    report_json,
)

__all__ = [
    "FinalReport",
    "RuleRecord",
    "TrialFilter",
    "WalkReport",
    "jsonable",
    "report_json",
]
