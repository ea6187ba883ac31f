"""The records ops functions return, in one import.

A front end shows what ops hands it: the journal's read models (a session, its report, a
policy, a book, a decision to review, a walk's report and its rules, the trial filter the pages
send), made JSON by :func:`jsonable` (models dumped, NaN as null). Front ends import them from
here, never from the journal or the packages ops composes, so the journal's layout can change
behind this door (tests/test_import_graph.py).
"""

from __future__ import annotations

from alphaloop.journal import (
    FinalReport,
    PolicyRecord,
    RuleRecord,
    SessionRecord,
    TrialFilter,
    WalkReport,
    jsonable,
    report_json,
)
from alphaloop.journal.books import BookRecord
from alphaloop.journal.preferences import DecisionView

__all__ = [
    "BookRecord",
    "DecisionView",
    "FinalReport",
    "PolicyRecord",
    "RuleRecord",
    "SessionRecord",
    "TrialFilter",
    "WalkReport",
    "jsonable",
    "report_json",
]
