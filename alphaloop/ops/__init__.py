"""The operations layer: every user-level action and read, defined once.

The command line, the chat model's tools (and a REST server next) call these functions and
nothing below them: sessions (list, status, review, start, run, resume, stop), one trial by
hand, manual PPO training, a session's validation suite, the knobs, charts (draw, export,
read) and the chat's journal reads.
Arrows point one way: front ends -> ``ops`` -> ``meta_agent``, ``trials``, ``journal``,
``charts`` -> engines -> ``knobs``, ``market``, ``metrics``.

Inputs and outputs are frozen models. Work that loads the research loop or the evaluator
(LangGraph, torch) imports it on first use, so a command that only reads stays fast; the specs
and errors of those layers are re-exported here the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from alphaloop._lazy import lazy_attributes
from alphaloop.market import DataWarning
from alphaloop.ops._journal import NoJournal, open_journal
from alphaloop.ops.charts import (
    ExportedChart,
    build_chart,
    chart_kind,
    check_export,
    export_chart,
    interpret_chart,
)
from alphaloop.ops.knobs import CLIP_RULES, KnobInfo, UnknownKnob, list_knobs
from alphaloop.ops.policies import (
    PolicyCheck,
    PolicyDetail,
    activate_policy,
    active_policy,
    list_policies,
    show_policy,
    verify_policies,
)
from alphaloop.ops.reads import (
    Leaderboard,
    SessionDigest,
    TrialComparison,
    TrialDetail,
    compare_trials,
    leaderboard,
    log_llm_call,
    session_digest,
    trial_detail,
)
from alphaloop.ops.research import (
    SessionFailed,
    SessionRunning,
    check_resume,
    run_research,
    run_session,
    start_session,
    stop_session,
)
from alphaloop.ops.sessions import (
    LiveTrial,
    SessionReview,
    SessionStatus,
    SessionSummary,
    get_session,
    list_sessions,
    resume_command,
    session_review,
    session_status,
)
from alphaloop.ops.train import train
from alphaloop.ops.trial import TrialRequest, TrialRun, run_trial, trial_budget
from alphaloop.ops.validate import (
    VALIDATED_EVENT,
    Gates,
    ValidationReport,
    ValidationUnavailable,
    latest_validation,
    validate_session,
)

if TYPE_CHECKING:
    from alphaloop.meta_agent import ProposerName
    from alphaloop.meta_agent.manual import ManualRun, ManualRunSpec
    from alphaloop.meta_agent.objective import Objective
    from alphaloop.meta_agent.session import (
        SESSION_SEED_MAX,
        SessionBusy,
        SessionNotRunning,
        SessionSpec,
    )
    from alphaloop.trials import TrialBudget

__all__ = [
    "CLIP_RULES",
    "SESSION_SEED_MAX",
    "VALIDATED_EVENT",
    "DataWarning",
    "ExportedChart",
    "Gates",
    "KnobInfo",
    "Leaderboard",
    "LiveTrial",
    "ManualRun",
    "ManualRunSpec",
    "NoJournal",
    "Objective",
    "PolicyCheck",
    "PolicyDetail",
    "ProposerName",
    "ReplayRequest",
    "ReplayRun",
    "SessionBusy",
    "SessionDigest",
    "SessionFailed",
    "SessionNotRunning",
    "SessionReview",
    "SessionRunning",
    "SessionSpec",
    "SessionStatus",
    "SessionSummary",
    "TrialBudget",
    "TrialComparison",
    "TrialDetail",
    "TrialRequest",
    "TrialRun",
    "UnknownKnob",
    "ValidationReport",
    "ValidationUnavailable",
    "activate_policy",
    "active_policy",
    "build_chart",
    "chart_kind",
    "check_export",
    "check_resume",
    "compare_trials",
    "export_chart",
    "get_session",
    "interpret_chart",
    "latest_validation",
    "leaderboard",
    "list_knobs",
    "list_policies",
    "list_sessions",
    "log_llm_call",
    "open_journal",
    "resume_command",
    "run_research",
    "run_session",
    "run_trial",
    "session_digest",
    "session_review",
    "session_status",
    "show_policy",
    "start_session",
    "stop_session",
    "train",
    "trial_budget",
    "trial_detail",
    "validate_session",
    "verify_policies",
]

_LAZY = {
    "ManualRun": "alphaloop.meta_agent.manual",
    "ManualRunSpec": "alphaloop.meta_agent.manual",
    "Objective": "alphaloop.meta_agent.objective",
    "ProposerName": "alphaloop.meta_agent",
    "SESSION_SEED_MAX": "alphaloop.meta_agent.session",
    "SessionBusy": "alphaloop.meta_agent.session",
    "SessionNotRunning": "alphaloop.meta_agent.session",
    "SessionSpec": "alphaloop.meta_agent.session",
    "TrialBudget": "alphaloop.trials",
    "ReplayRequest": "alphaloop.ops.rerun",
    "ReplayRun": "alphaloop.ops.rerun",
}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
