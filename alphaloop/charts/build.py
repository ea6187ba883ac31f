"""From a chart kind and ids to a :class:`Chart`: reads the journal, takes the replayed series it
must from a :class:`SeriesSource`, draws.

This is what the operations layer calls; the figure functions themselves take records and
series and touch nothing.
"""

from __future__ import annotations

import plotly.graph_objects as go
from pydantic import BaseModel, ConfigDict

from alphaloop.charts.figures import ratio_curve, research_progress, training_curve
from alphaloop.charts.portfolio import equity_curves, weights
from alphaloop.charts.series import SeriesSource
from alphaloop.charts.validation import ValidationDrawn, validation_drawn, validation_figure
from alphaloop.exceptions import InvalidRequest
from alphaloop.journal import EventKind, Journal, SessionRecord, TrialRecord
from alphaloop.journal.status import RACED_OUT
from alphaloop.validation.report import ValidationReport

CHART_KINDS: dict[str, str] = {
    "training_curve": "mean episode reward per PPO update of a manual run or a PPO trial",
    "research_progress": "a session's objective per trial, best so far, kept trials, noise band",
    "ratio_curve": "every completed trial of every run ranked by Sharpe, with max drawdown",
    "equity_curves": "a trial's equity vs the equal-weight and min-CVaR baselines",
    "weights": "a trial's allocation over its window",
    "validation": "a session's PBO logit histogram and walk-forward windows' Sharpe",
}
ALL_RUNS_GOAL = "compare every completed trial of every research session and manual run"


class Chart(BaseModel):
    """A drawn chart and what it is about."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    kind: str
    figure: go.Figure
    goal: str
    session_id: str | None = None
    trial_id: int | None = None
    trial_idx: int | None = None
    # A validation chart's: what it draws, which its reader reads (never the figure's metadata)
    validation: ValidationDrawn | None = None

    @property
    def name(self) -> str:
        """A file stem: ``equity_curves-s-20260101-120000-ab12-t5``."""
        parts = [self.kind]
        if self.session_id:
            parts.append(self.session_id)
        if self.trial_idx is not None:
            parts.append(f"t{self.trial_idx}")
        return "-".join(parts)


def chart_kind(kind: str) -> str:
    """``kind`` as a known chart kind (``training-curve`` is ``training_curve``).

    Raises:
        InvalidRequest: not a chart kind (the message lists them).
    """
    name = kind.strip().lower().replace("-", "_")
    if name not in CHART_KINDS:
        raise InvalidRequest(f"unknown chart {kind!r}; choose one of {', '.join(CHART_KINDS)}")
    return name


def _session(journal: Journal, session_id: str | None) -> SessionRecord:
    if session_id is not None:
        return journal.sessions.get(session_id)
    sessions = journal.sessions.list()
    if not sessions:
        raise InvalidRequest(
            "the journal has no sessions yet; run `alphaloop research` or `alphaloop train`"
        )
    return sessions[0]


def _curve_trial(journal: Journal, session: SessionRecord) -> TrialRecord:
    with_curve = [t for t in journal.trials.of_session(session.id) if t.curve]
    if not with_curve:
        raise InvalidRequest(
            f"no trial of session {session.id} has a journaled training curve; "
            "`alphaloop train` journals one"
        )
    running = [t for t in with_curve if t.status == "running"]
    return (running or with_curve)[-1]


def _chosen_trial(journal: Journal, session: SessionRecord) -> TrialRecord:
    if session.best_trial_id is not None:
        return journal.trials.get(session.best_trial_id)
    best = journal.trials.best(session.id)
    if best is None:
        raise InvalidRequest(f"session {session.id} has no kept trial yet; pick one with --trial")
    return best


def build_chart(
    kind: str,
    journal: Journal,
    *,
    session_id: str | None = None,
    trial_idx: int | None = None,
    series: SeriesSource | None = None,
) -> Chart:
    """Draws chart ``kind`` from the journal.

    Args:
        kind: one of :data:`CHART_KINDS` (hyphens allowed).
        journal: an open journal.
        session_id: the session (default: the newest); ``ratio_curve`` spans every session.
        trial_idx: the trial's index within the session (default: the session's best trial
            for ``equity_curves`` and ``weights``, its trial with a curve for
            ``training_curve``).
        series: the replayed series of ``equity_curves`` and ``weights`` (the evaluator's
            replay, :class:`alphaloop.ops.series.SessionSeries`); the other kinds need none.

    Raises:
        InvalidRequest: not a chart kind.
        NotFound / NotFound: an id names nothing.
        InvalidRequest: the chart does not apply (no curve, a crashed trial, no trials, a trial
            index given to a chart of a whole session...).
        AlphaloopError: the data or a policy file changed since the trial ran.
    """
    name = chart_kind(kind)
    if name in ("ratio_curve", "research_progress", "validation") and trial_idx is not None:
        raise InvalidRequest(f"{name} draws every trial; a trial index does not apply to it")
    if name == "ratio_curve" and session_id is not None:
        raise InvalidRequest("ratio_curve ranks the trials of every run; a session does not apply")
    if name == "ratio_curve":
        figure = ratio_curve(journal.trials.completed(), journal.sessions.list())
        return Chart(kind=name, figure=figure, goal=ALL_RUNS_GOAL)
    session = _session(journal, session_id)
    if name in ("research_progress", "validation"):
        return _session_chart(name, journal, session)
    trial = _trial(name, journal, session, trial_idx)
    if name == "training_curve":
        return Chart(kind=name, figure=training_curve(trial), **_ids(session, trial))
    return _replayed_chart(name, journal, session, trial, series)


def raced_out(journal: Journal, session_id: str) -> frozenset[int]:
    """The indexes of the session's search trials raced out after their first folds (the
    journal's shown status): their partial scores are drawn apart from the full ones."""
    cols = journal.trials.objective_columns(session_id)
    return frozenset(i for i, s in zip(cols["idx"], cols["status"], strict=True) if s == RACED_OUT)


def _session_chart(name: str, journal: Journal, session: SessionRecord) -> Chart:
    """A chart of every trial of ``session``: its research progress or its validation."""
    if name == "research_progress":
        trials = journal.trials.of_session(session.id)
        figure = research_progress(session, trials, raced_out(journal, session.id))
        return Chart(kind=name, figure=figure, goal=session.goal, session_id=session.id)
    events = journal.logs.events(session.id, kind=EventKind.validated)
    report = ValidationReport.read(events[-1].payload) if events else None
    drawn = validation_drawn(session, report)
    return Chart(
        kind=name,
        figure=validation_figure(drawn),
        goal=session.goal,
        session_id=session.id,
        validation=drawn,
    )


def _trial(
    name: str, journal: Journal, session: SessionRecord, trial_idx: int | None
) -> TrialRecord:
    """The trial a per-trial chart draws: the one asked for, else the kind's default."""
    if trial_idx is not None:
        return journal.trials.at(session.id, trial_idx)
    if name == "training_curve":
        return _curve_trial(journal, session)
    return _chosen_trial(journal, session)


def _ids(session: SessionRecord, trial: TrialRecord) -> dict:
    """What a per-trial chart says it is about."""
    ids = {"goal": session.goal, "session_id": session.id, "trial_id": trial.id}
    ids["trial_idx"] = trial.idx
    return ids


def _replayed_chart(
    name: str,
    journal: Journal,
    session: SessionRecord,
    trial: TrialRecord,
    series: SeriesSource | None,
) -> Chart:
    """``weights`` or ``equity_curves`` of a finished trial, from its replayed series."""
    if trial.status == "running" or not trial.val_returns:
        raise InvalidRequest(
            f"trial #{trial.idx} of session {session.id} has no results to draw "
            f"(status {trial.status}{': ' + trial.error if trial.error else ''})"
        )
    if series is None:
        raise InvalidRequest(f"{name} draws replayed series; build it with a series source")
    ids = _ids(session, trial)
    if name == "weights":
        alloc = series.allocation(session, trial)
        return Chart(kind=name, figure=weights(trial, alloc), **ids)
    windows = [series.window_returns(session, trial)]
    if trial.kind != "test":
        tests = [
            t
            for t in journal.trials.of_session(session.id, kind="test")
            if t.parent_id == trial.id and t.val_returns
        ]
        if tests:
            windows.append(series.window_returns(session, tests[-1]))
    return Chart(kind=name, figure=equity_curves(trial, windows), **ids)
