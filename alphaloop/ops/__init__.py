"""The operations layer: every user-level action and read, defined once.

The command line, the chat model's tools (and a REST server next) call these functions and
nothing below them: sessions (list, status, review, start, run, resume, stop), one trial by
hand, manual PPO training, a session's validation suite, the knobs, charts (draw, export,
read), the Mean-CVaR efficient frontier and the chat's journal reads.
Arrows point one way: front ends -> ``ops`` -> ``meta_agent``, ``trials``, ``journal``,
``charts`` -> engines -> ``knobs``, ``market``, ``metrics``.

Inputs and outputs are frozen models. Every name here is imported on first use (PEP 562), its
module with it: reading the journal never loads the research loop or the evaluator (LangGraph,
torch, pandas), and ``alphaloop --help`` loads none of them. The specs and errors of those
layers are re-exported here the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from alphaloop._lazy import lazy_attributes
from alphaloop.market import DataWarning
from alphaloop.ops.train import train  # a light module, and its name is the function's

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
    from alphaloop.ops._journal import NoJournal, open_journal
    from alphaloop.ops.charts import (
        ExportedChart,
        build_chart,
        chart_kind,
        check_export,
        export_chart,
        interpret_chart,
    )
    from alphaloop.ops.frontier import FrontierRequest, FrontierRun, trace_frontier
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
    from alphaloop.ops.trial import (
        TrialRequest,
        TrialRun,
        run_trial,
        training_options,
        trial_budget,
    )
    from alphaloop.ops.validate import (
        Gates,
        ValidationReport,
        ValidationUnavailable,
        latest_validation,
        validate_session,
    )
    from alphaloop.trials import TrialBudget

__all__ = [
    "CLIP_RULES",
    "SESSION_SEED_MAX",
    "DataWarning",
    "ExportedChart",
    "FrontierRequest",
    "FrontierRun",
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
    "trace_frontier",
    "train",
    "training_options",
    "trial_budget",
    "trial_detail",
    "validate_session",
    "verify_policies",
]

_LAZY = {
    "NoJournal": "alphaloop.ops._journal",
    "open_journal": "alphaloop.ops._journal",
    "ExportedChart": "alphaloop.ops.charts",
    "build_chart": "alphaloop.ops.charts",
    "chart_kind": "alphaloop.ops.charts",
    "check_export": "alphaloop.ops.charts",
    "export_chart": "alphaloop.ops.charts",
    "interpret_chart": "alphaloop.ops.charts",
    "FrontierRequest": "alphaloop.ops.frontier",
    "FrontierRun": "alphaloop.ops.frontier",
    "trace_frontier": "alphaloop.ops.frontier",
    "CLIP_RULES": "alphaloop.ops.knobs",
    "KnobInfo": "alphaloop.ops.knobs",
    "UnknownKnob": "alphaloop.ops.knobs",
    "list_knobs": "alphaloop.ops.knobs",
    "PolicyCheck": "alphaloop.ops.policies",
    "PolicyDetail": "alphaloop.ops.policies",
    "activate_policy": "alphaloop.ops.policies",
    "active_policy": "alphaloop.ops.policies",
    "list_policies": "alphaloop.ops.policies",
    "show_policy": "alphaloop.ops.policies",
    "verify_policies": "alphaloop.ops.policies",
    "Leaderboard": "alphaloop.ops.reads",
    "SessionDigest": "alphaloop.ops.reads",
    "TrialComparison": "alphaloop.ops.reads",
    "TrialDetail": "alphaloop.ops.reads",
    "compare_trials": "alphaloop.ops.reads",
    "leaderboard": "alphaloop.ops.reads",
    "log_llm_call": "alphaloop.ops.reads",
    "session_digest": "alphaloop.ops.reads",
    "trial_detail": "alphaloop.ops.reads",
    "SessionFailed": "alphaloop.ops.research",
    "SessionRunning": "alphaloop.ops.research",
    "check_resume": "alphaloop.ops.research",
    "run_research": "alphaloop.ops.research",
    "run_session": "alphaloop.ops.research",
    "start_session": "alphaloop.ops.research",
    "stop_session": "alphaloop.ops.research",
    "LiveTrial": "alphaloop.ops.sessions",
    "SessionReview": "alphaloop.ops.sessions",
    "SessionStatus": "alphaloop.ops.sessions",
    "SessionSummary": "alphaloop.ops.sessions",
    "get_session": "alphaloop.ops.sessions",
    "list_sessions": "alphaloop.ops.sessions",
    "resume_command": "alphaloop.ops.sessions",
    "session_review": "alphaloop.ops.sessions",
    "session_status": "alphaloop.ops.sessions",
    "TrialRequest": "alphaloop.ops.trial",
    "TrialRun": "alphaloop.ops.trial",
    "run_trial": "alphaloop.ops.trial",
    "trial_budget": "alphaloop.ops.trial",
    "training_options": "alphaloop.ops.trial",
    "Gates": "alphaloop.ops.validate",
    "ValidationReport": "alphaloop.ops.validate",
    "ValidationUnavailable": "alphaloop.ops.validate",
    "latest_validation": "alphaloop.ops.validate",
    "validate_session": "alphaloop.ops.validate",
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
