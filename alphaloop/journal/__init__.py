"""The journal: every session, trial, clip, LLM call, chart reading and event, in one SQLite file.

It is the source of truth of a research session: a session killed at any point resumes from
it. :class:`Journal` is the open file (:mod:`.connection`) and its repositories, one per group
of tables and each in the module of the same name: ``journal.sessions``, ``journal.trials``,
``journal.folds``, ``journal.logs``, ``journal.notes``, ``journal.policies``, ``journal.books``,
``journal.preferences``, ``journal.schedule``, ``journal.jobs`` and ``journal.walks``. Reads
return frozen models (:mod:`.models`, and the records next to their repository).
"""

from alphaloop.journal.connection import pid_alive
from alphaloop.journal.curves import MAX_CURVE_POINTS, downsample_curve
from alphaloop.journal.folds import FoldRecord, Folds, FoldScores
from alphaloop.journal.jobs import JobRecord, JobStatus
from alphaloop.journal.journal import Journal
from alphaloop.journal.models import (
    COUNTED_STATUSES,
    FINISHED_STATUSES,
    INTERRUPTED,
    ChartReadRecord,
    ClipRecord,
    EventKind,
    EventRecord,
    LLMUsageRecord,
    SessionRecord,
    SessionStatus,
    TrialKind,
    TrialRecord,
    TrialStatus,
    jsonable,
)
from alphaloop.journal.pages import TrialFilter
from alphaloop.journal.policies import PolicyKind, PolicyRecord, PolicySource, ReplayRecord
from alphaloop.journal.ranking import (
    Ranked,
    Ranking,
    best_estimate,
    best_kept,
    best_trial,
    kept_best_first,
)
from alphaloop.journal.report import AutoActivation, FinalReport, FoldsUsed, Pick, report_json
from alphaloop.journal.schema import SCHEMA_VERSION
from alphaloop.journal.sessions import STOP_REQUESTED
from alphaloop.journal.tally import Tally, TrialScore
from alphaloop.journal.trial_reads import FollowedTrials
from alphaloop.journal.walk_report import (
    EpochLine,
    EpochResult,
    PairTally,
    RuleName,
    RuleRecord,
    Traded,
    WalkReport,
)
from alphaloop.journal.walks import WalkEpoch, WalkRecord, WalkStatus

__all__ = [
    "COUNTED_STATUSES",
    "FINISHED_STATUSES",
    "INTERRUPTED",
    "MAX_CURVE_POINTS",
    "SCHEMA_VERSION",
    "STOP_REQUESTED",
    "AutoActivation",
    "ChartReadRecord",
    "ClipRecord",
    "EpochLine",
    "EpochResult",
    "EventKind",
    "EventRecord",
    "FinalReport",
    "FoldRecord",
    "FoldScores",
    "Folds",
    "FoldsUsed",
    "FollowedTrials",
    "JobRecord",
    "JobStatus",
    "Journal",
    "LLMUsageRecord",
    "PairTally",
    "Pick",
    "PolicyKind",
    "PolicyRecord",
    "PolicySource",
    "Ranked",
    "Ranking",
    "ReplayRecord",
    "RuleName",
    "RuleRecord",
    "SessionRecord",
    "SessionStatus",
    "Tally",
    "Traded",
    "TrialFilter",
    "TrialKind",
    "TrialRecord",
    "TrialScore",
    "TrialStatus",
    "WalkEpoch",
    "WalkRecord",
    "WalkReport",
    "WalkStatus",
    "best_estimate",
    "best_kept",
    "best_trial",
    "downsample_curve",
    "jsonable",
    "kept_best_first",
    "pid_alive",
    "report_json",
]
